"""A user's project, as source text: a small model manager and adapters for it.

Tests write ``MYMGR`` to a fresh directory as ``mymgr.py`` and run ``lockstep check
--target mymgr:<Adapter>`` from there, exactly as a new user would: the module is
importable only because it sits in the current directory.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["MYMGR", "write_project"]

MYMGR = '''\
"""mymgr: a model manager with one lock around everything (and some broken adapters)."""

import sys
import threading

from models_spec.adapter import Snapshot


class Manager:
    # keys/in/[]/len read the dict without the lock: one atomic operation each (declared
    # for lockstep's race detector, which reports undeclared lock-free reads).
    __benign_races__ = {"models": "keys/in/[]/len: one atomic dict operation each"}

    def __init__(self, registry, *, lock_timeout=60.0, check_unlocked=False, clear=True,
                 keep_files=True):
        self._registry = registry
        self._timeout = lock_timeout
        self._lock = threading.Lock()
        self._unlocked = check_unlocked
        self._clear = clear
        self._keep_files = keep_files
        self.models = {}

    def add_model(self, model_id, api_key=None, model_id_alias=None, **kw):
        resolved = model_id_alias if model_id_alias is not None else model_id
        if self._unlocked:  # the classic bug (B1-B3): check and construct without the lock
            if resolved in self.models:
                return
            model = self._registry.get_model(resolved)(model_id=model_id, api_key=api_key, **kw)
            with self._lock:
                self.models[resolved] = model
            return
        if not self._lock.acquire(timeout=self._timeout):
            raise TimeoutError("lock")
        try:
            if resolved not in self.models:
                factory = self._registry.get_model(resolved)
                self.models[resolved] = factory(model_id=model_id, api_key=api_key, **kw)
        finally:
            self._lock.release()

    def remove(self, model_id, delete_from_disk=True):
        if not self._lock.acquire(timeout=self._timeout):
            raise TimeoutError("lock")
        try:
            model = self.models.get(model_id)
            if model is not None:
                if self._clear:
                    # keep_files=False: the bug of deleting the files whatever was asked
                    model.clear_cache(delete_from_disk=delete_from_disk or not self._keep_files)
                del self.models[model_id]
        finally:
            self._lock.release()

    def keys(self):
        return list(self.models)

    def __contains__(self, model_id):
        return model_id in self.models

    def __getitem__(self, model_id):
        return self.models[model_id]

    def __len__(self):
        return len(self.models)


_IMPORT_TIME_LOCK = threading.Lock()  # created at import, before any patching: stays real


class ReadLockedManager:
    """Reads under a read lock (no lock-free read to declare); writes take both locks."""

    def __init__(self, registry, *, import_time_lock=False, lock_timeout=60.0):
        self._registry = registry
        self._lock = threading.Lock()
        # The mistake: a lock made at import time is a real lock, which lockstep cannot
        # see. The same lock made here (the module patched) is lockstep's.
        self._read_lock = _IMPORT_TIME_LOCK if import_time_lock else threading.Lock()
        self.models = {}

    def add_model(self, model_id, api_key=None, model_id_alias=None, **kw):
        resolved = model_id_alias if model_id_alias is not None else model_id
        with self._lock:
            with self._read_lock:
                if resolved in self.models:
                    return
            model = self._registry.get_model(resolved)(model_id=model_id, api_key=api_key, **kw)
            with self._read_lock:
                self.models[resolved] = model

    def remove(self, model_id, delete_from_disk=True):
        with self._lock:
            with self._read_lock:
                model = self.models.get(model_id)
            if model is not None:
                model.clear_cache(delete_from_disk=delete_from_disk)
                with self._read_lock:
                    del self.models[model_id]

    def keys(self):
        with self._read_lock:
            return list(self.models)

    def __contains__(self, model_id):
        with self._read_lock:
            return model_id in self.models

    def __getitem__(self, model_id):
        with self._read_lock:
            return self.models[model_id]

    def __len__(self):
        with self._read_lock:
            return len(self.models)


class Adapter:
    """Correct: the manager's module is patched."""

    name = "my-manager"
    capabilities = frozenset({"aliases"})
    options = {}

    def build(self, registry, *, max_size, memory_probe=None, lock_timeout=60.0,
              queue_lock_timeout=5.0):
        return Manager(registry, lock_timeout=lock_timeout, **self.options)

    def snapshot(self, stack):
        return Snapshot(registered=dict(stack.models))

    def patch_modules(self):
        return [sys.modules[__name__]]


class Racy(Adapter):
    """An unlocked "already loaded?" check: two constructors of one id at once."""

    name = "my-racy-manager"
    options = {"check_unlocked": True}


class Unpatched(Adapter):
    """Forgets to name its own module: nothing of the manager is ever interleaved."""

    name = "my-unpatched-manager"

    def patch_modules(self):
        return []


class BadSnapshot(Adapter):
    name = "my-bad-snapshot"

    def snapshot(self, stack):
        return dict(stack.models)


class NoClear(Adapter):
    name = "my-manager-that-never-unloads"
    options = {"clear": False}


class AlwaysDeletes(Adapter):
    name = "my-manager-that-always-deletes-files"
    options = {"keep_files": False}


class TwoArgumentAdd(Adapter):
    """A manager whose add_model takes no alias: the scenarios pass one positionally."""

    name = "my-two-argument-manager"
    capabilities = frozenset()

    def build(self, registry, *, max_size, memory_probe=None, lock_timeout=60.0,
              queue_lock_timeout=5.0):
        manager = Manager(registry, lock_timeout=lock_timeout)
        full = manager.add_model

        def add_model(model_id, api_key=None):
            full(model_id, api_key)

        manager.add_model = add_model
        return manager


class ReadLocked(Adapter):
    """Correct: a read lock besides the manager's lock, made by the patched module."""

    name = "my-read-locked-manager"
    read_options = {}

    def build(self, registry, *, max_size, memory_probe=None, lock_timeout=60.0,
              queue_lock_timeout=5.0):
        return ReadLockedManager(registry, lock_timeout=lock_timeout, **self.read_options)


class ImportTimeLock(ReadLocked):
    """The same manager with its read lock made at import time: a real lock, unseen."""

    name = "my-import-time-lock-manager"
    read_options = {"import_time_lock": True}


class BadModules(Adapter):
    name = "my-bad-modules"

    def patch_modules(self):
        return "mymgr"
'''


def write_project(directory: Path) -> Path:
    """Write ``mymgr.py`` into ``directory``; return its path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "mymgr.py"
    path.write_text(MYMGR, encoding="utf-8")
    return path

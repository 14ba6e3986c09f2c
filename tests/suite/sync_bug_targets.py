"""Users' managers with a synchronisation or error-path bug that no known-bug variant
of the core has (for tests/suite/test_sync_bug_targets.py), and one correct manager
that waits on a condition, as a control.

* ``IgnoresTimeoutManager``: ``acquire(timeout=)`` whose False is ignored: it goes on
  unlocked and then releases a lock another thread holds.
* ``IfNotWhileManager``: a per-id "loading" set and a Condition; a waiter uses
  ``if``, not ``while``, and a failed load wakes it as if the load had succeeded:
  ``add_model`` returns with no model registered.
* ``SwallowsErrorManager``: a constructor's error is swallowed; ``add_model``
  returns as if the model were loaded.
* ``DoubleUnloadManager``: ``clear()`` unloads each model itself and then calls
  ``remove``, which unloads it again (a failed first unload is swallowed and
  retried): the validation refuses it before any search (`REFUSED`), since its
  ``clear()`` returns normally when unloads fail.
* ``UnloadOutsideLockManager``: ``remove`` takes the model out under the lock and
  unloads it after releasing it, so a re-add of the id loads a second copy while
  the first is still being unloaded.
* ``ConditionManager`` (correct): the same per-id Condition, waiting in a loop and
  waking the waiters on failure too.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from examples.own_manager import SerialManager, SerialManagerAdapter

__all__ = ["ADAPTERS", "CONTROL", "REFUSED"]


class IgnoresTimeoutManager(SerialManager):
    def _locked(self) -> None:
        self._lock.acquire(timeout=self._lock_timeout)  # the bug: its result is ignored


class ConditionManager(SerialManager):
    """Loads of one id wait for each other on a Condition (correct)."""

    def __init__(self, registry: Any, *, lock_timeout: float = 60.0) -> None:
        super().__init__(registry, lock_timeout=lock_timeout)
        self._changed = threading.Condition(self._lock)
        self._loading: set[str] = set()

    def add_model(
        self,
        model_id: str,
        api_key: str | None = None,
        model_id_alias: str | None = None,
        **load_kwargs: Any,
    ) -> None:
        resolved = model_id_alias if model_id_alias is not None else model_id
        with self._changed:
            while resolved in self._loading:
                self._changed.wait()
            if resolved in self.models:
                return
            self._loading.add(resolved)
        try:
            factory = self._registry.get_model(resolved)
            model = factory(model_id=model_id, api_key=api_key, **load_kwargs)
        except BaseException:
            with self._changed:
                self._loading.discard(resolved)
                self._changed.notify_all()
            raise
        with self._changed:
            self.models[resolved] = model
            self._loading.discard(resolved)
            self._changed.notify_all()

    def remove(self, model_id: str, delete_from_disk: bool = True) -> None:
        with self._changed:
            while model_id in self._loading:
                self._changed.wait()
            model = self.models.get(model_id)
            if model is not None:
                model.clear_cache(delete_from_disk=delete_from_disk)
                del self.models[model_id]


class IfNotWhileManager(ConditionManager):
    def add_model(
        self,
        model_id: str,
        api_key: str | None = None,
        model_id_alias: str | None = None,
        **load_kwargs: Any,
    ) -> None:
        resolved = model_id_alias if model_id_alias is not None else model_id
        with self._changed:
            if resolved in self.models:
                return
            if resolved in self._loading:
                self._changed.wait()
                return  # the bug: assumes the other load succeeded
            self._loading.add(resolved)
        try:
            factory = self._registry.get_model(resolved)
            model = factory(model_id=model_id, api_key=api_key, **load_kwargs)
        finally:
            with self._changed:
                self._loading.discard(resolved)
                self._changed.notify_all()
        with self._changed:
            self.models[resolved] = model


class SwallowsErrorManager(SerialManager):
    def add_model(
        self,
        model_id: str,
        api_key: str | None = None,
        model_id_alias: str | None = None,
        **load_kwargs: Any,
    ) -> None:
        with contextlib.suppress(Exception):  # the bug under test: the error is swallowed
            super().add_model(model_id, api_key, model_id_alias, **load_kwargs)


class DoubleUnloadManager(SerialManager):
    def clear(self) -> None:
        for model_id in list(self.models):
            model = self.models.get(model_id)
            if model is not None:
                with contextlib.suppress(Exception):  # remove() below unloads it again
                    model.clear_cache(delete_from_disk=True)
            self.remove(model_id)


class UnloadOutsideLockManager(SerialManager):
    def remove(self, model_id: str, delete_from_disk: bool = True) -> None:
        self._locked()
        try:
            model = self.models.pop(model_id, None)
        finally:
            self._lock.release()
        if model is not None:
            try:
                model.clear_cache(delete_from_disk=delete_from_disk)
            except Exception:  # a failed unload keeps the model (the validation checks it)
                self._locked()
                try:
                    self.models.setdefault(model_id, model)
                finally:
                    self._lock.release()
                raise


def _adapter(manager: type[SerialManager], name: str) -> type[SerialManagerAdapter]:
    class Adapter(SerialManagerAdapter):
        def build(self, registry: Any, **options: Any) -> SerialManager:
            return manager(registry, lock_timeout=options["lock_timeout"])

        def patch_modules(self) -> Sequence[ModuleType]:
            return [sys.modules[__name__], sys.modules[SerialManager.__module__]]

    Adapter.name = name
    Adapter.__name__ = Adapter.__qualname__ = manager.__name__.replace("Manager", "Adapter")
    return Adapter


IgnoresTimeoutAdapter = _adapter(IgnoresTimeoutManager, "ignores-timeout")
IfNotWhileAdapter = _adapter(IfNotWhileManager, "if-not-while")
SwallowsErrorAdapter = _adapter(SwallowsErrorManager, "swallows-error")
DoubleUnloadAdapter = _adapter(DoubleUnloadManager, "double-unload")
UnloadOutsideLockAdapter = _adapter(UnloadOutsideLockManager, "unload-outside-lock")
ConditionAdapter = _adapter(ConditionManager, "condition-manager")

_MODULE = "tests.suite.sync_bug_targets"  # how `--target` names it from the repository root
# target -> implementation name, for the buggy managers; the correct control.
ADAPTERS = {
    f"{_MODULE}:{adapter.__name__}": adapter.name
    for adapter in (
        IgnoresTimeoutAdapter,
        IfNotWhileAdapter,
        SwallowsErrorAdapter,
        UnloadOutsideLockAdapter,
    )
}
# target -> (implementation name, the contract's anchor the validation names).
REFUSED = {f"{_MODULE}:{DoubleUnloadAdapter.__name__}": (DoubleUnloadAdapter.name, "clear")}
CONTROL = (f"{_MODULE}:{ConditionAdapter.__name__}", ConditionAdapter.name)

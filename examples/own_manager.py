"""Put your own model manager under the invariant suite: a worked adapter.

``SerialManager`` stands for a user's manager: a plain dict behind one lock
held across every load and unload (correct, but loads of different models
serialise). ``SerialManagerAdapter`` is everything the suite needs from it:

* ``build`` stacks it on the suite's scripted registry;
* ``snapshot`` reads its state without blocking (invariants run at every
  switch point);
* ``capabilities`` declares what it has; scenarios and invariants needing
  anything else are reported as skipped, never passed;
* ``patch_modules`` names the modules whose ``threading`` lockstep swaps.

The suite also *watches* the manager (``ManagerAdapter.watched``): its attribute
accesses become switch points and unsynchronised ones are reported as data
races. ``SerialManager`` reads ``models`` without the lock in ``keys``,
``__contains__`` and friends (each a single atomic dict operation), so it
declares that intended race with its reason in ``__benign_races__``, a plain
class attribute that needs no lockstep import.

``UnlockedCheckManager`` is the same manager with the classic mistake: it
asks "already loaded?" without the lock, so two adds of one id can both
construct it (upstream B1-B3). The declaration it inherits keeps that read from
being reported as a race, but the read is still a switch point and a DPOR
dependency, so every search (DPOR included) finds the double load (I2). Run the
suite against either::

    python3 -m lockstep check --target examples.own_manager:SerialManagerAdapter
    python3 -m lockstep check --target examples.own_manager:UnlockedCheckManagerAdapter

or from pytest (see ``tests/suite/test_own_manager_example.py``)::

    from models_spec.pytest_suite import conformance_tests
    test_conformance = conformance_tests("examples.own_manager:SerialManagerAdapter")
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import Any, ClassVar

from models_spec.adapter import Snapshot

__all__ = [
    "SerialManager",
    "SerialManagerAdapter",
    "UnlockedCheckManager",
    "UnlockedCheckManagerAdapter",
]


class SerialManager:
    """A user's manager: ``{resolved id: model}`` behind one lock."""

    # Read by race detectors (lockstep): attribute -> why its lock-free reads are safe.
    __benign_races__: ClassVar[dict[str, str]] = {
        "models": "keys/in/[]/len read it without the lock: one atomic dict operation each",
    }

    def __init__(self, registry: Any, *, lock_timeout: float = 60.0) -> None:
        self._registry = registry
        self._lock_timeout = lock_timeout
        self._lock = threading.Lock()
        self.models: dict[str, Any] = {}

    def _locked(self) -> None:
        if not self._lock.acquire(timeout=self._lock_timeout):
            raise TimeoutError("SerialManager: lock wait timed out")

    def add_model(
        self,
        model_id: str,
        api_key: str | None = None,
        model_id_alias: str | None = None,
        **load_kwargs: Any,
    ) -> None:
        resolved = model_id_alias if model_id_alias is not None else model_id
        self._locked()
        try:
            if resolved not in self.models:
                factory = self._registry.get_model(resolved)
                self.models[resolved] = factory(model_id=model_id, api_key=api_key, **load_kwargs)
        finally:
            self._lock.release()

    def remove(self, model_id: str, delete_from_disk: bool = True) -> None:
        self._locked()
        try:
            model = self.models.get(model_id)
            if model is not None:
                model.clear_cache(delete_from_disk=delete_from_disk)
                del self.models[model_id]
        finally:
            self._lock.release()

    def clear(self) -> None:
        errors: list[Exception] = []
        for model_id in list(self.models):
            try:
                self.remove(model_id)
            except Exception as error:  # collected and re-raised together
                errors.append(error)
        if errors:
            raise ExceptionGroup("clear() failed for some models", errors)

    def keys(self) -> list[str]:
        return list(self.models)

    def __contains__(self, model_id: object) -> bool:
        return model_id in self.models

    def __getitem__(self, model_id: str) -> Any:
        return self.models[model_id]

    def __len__(self) -> int:
        return len(self.models)


class SerialManagerAdapter:
    """The adapter the suite drives ``SerialManager`` through."""

    name = "serial-manager"
    # No LRU, pins, leases or capacity: those scenarios are reported as skipped.
    capabilities = frozenset({"aliases"})

    def build(
        self,
        registry: Any,
        *,
        max_size: int,
        memory_probe: Any = None,
        lock_timeout: float = 60.0,
        queue_lock_timeout: float = 5.0,
    ) -> SerialManager:
        del max_size, memory_probe, queue_lock_timeout  # no cache in this manager
        return SerialManager(registry, lock_timeout=lock_timeout)

    def snapshot(self, stack: SerialManager) -> Snapshot:
        return Snapshot(registered=dict(stack.models))

    def patch_modules(self) -> Sequence[ModuleType]:
        return [sys.modules[__name__]]


class UnlockedCheckManager(SerialManager):
    """``SerialManager`` with an unlocked check-then-act in ``add_model`` (a bug)."""

    def add_model(
        self,
        model_id: str,
        api_key: str | None = None,
        model_id_alias: str | None = None,
        **load_kwargs: Any,
    ) -> None:
        resolved = model_id_alias if model_id_alias is not None else model_id
        if resolved in self.models:  # the bug: checked without the lock
            return
        factory = self._registry.get_model(resolved)
        model = factory(model_id=model_id, api_key=api_key, **load_kwargs)
        self._locked()
        try:
            self.models[resolved] = model
        finally:
            self._lock.release()


class UnlockedCheckManagerAdapter(SerialManagerAdapter):
    """The adapter for the buggy manager."""

    name = "unlocked-check-manager"

    def build(
        self,
        registry: Any,
        *,
        max_size: int,
        memory_probe: Any = None,
        lock_timeout: float = 60.0,
        queue_lock_timeout: float = 5.0,
    ) -> SerialManager:
        del max_size, memory_probe, queue_lock_timeout
        return UnlockedCheckManager(registry, lock_timeout=lock_timeout)

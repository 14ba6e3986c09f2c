"""Users' managers with only the basic protocol and a failure-path bug each (for
tests/suite/test_basic_scenarios.py).

``PopBeforeUnloadManager.remove`` takes the model out of its dict first and
unloads it after: when ``clear_cache`` raises, the model is still loaded but no
longer registered (lost: never unloaded again, and a re-add loads a second copy).
Every operation holds the lock, so no interleaving of successful operations shows
it: only a failed unload does. ``ClearStopsEarlyManager.clear`` stops at the first
failed unload.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from examples.own_manager import SerialManager, SerialManagerAdapter

__all__ = [
    "ClearStopsEarlyAdapter",
    "ClearStopsEarlyManager",
    "PopBeforeUnloadAdapter",
    "PopBeforeUnloadManager",
]


class PopBeforeUnloadManager(SerialManager):
    """``SerialManager`` whose remove forgets the model before unloading it (a bug)."""

    def remove(self, model_id: str, delete_from_disk: bool = True) -> None:
        self._locked()
        try:
            model = self.models.pop(model_id, None)
            if model is not None:
                model.clear_cache(delete_from_disk=delete_from_disk)
        finally:
            self._lock.release()


class PopBeforeUnloadAdapter(SerialManagerAdapter):
    """The adapter for the buggy manager."""

    name = "pop-before-unload"

    def build(self, registry: Any, **options: Any) -> SerialManager:
        return PopBeforeUnloadManager(registry, lock_timeout=options["lock_timeout"])

    def patch_modules(self) -> Sequence[ModuleType]:
        return [sys.modules[__name__], sys.modules[SerialManager.__module__]]


class ClearStopsEarlyManager(SerialManager):
    """``SerialManager`` whose clear lets the first failed unload out (a bug): the
    models after it are never attempted, and the caller gets one error, not all."""

    def clear(self) -> None:
        for model_id in list(self.models):
            self.remove(model_id)


class ClearStopsEarlyAdapter(PopBeforeUnloadAdapter):
    """The adapter for the manager whose clear stops early."""

    name = "clear-stops-early"

    def build(self, registry: Any, **options: Any) -> SerialManager:
        return ClearStopsEarlyManager(registry, lock_timeout=options["lock_timeout"])

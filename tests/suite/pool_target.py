"""A user's manager that loads on a worker pool: a real pattern, and a real OS thread
unless the adapter names ``concurrent.futures.thread`` among the modules to patch."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from types import ModuleType
from typing import Any

from examples.own_manager import SerialManager, SerialManagerAdapter


class PoolManager(SerialManager):
    """``SerialManager`` whose loads run on a one-worker pool (one pool per load, shut
    down when it is done: a pool that outlived the scenario would leave its worker
    blocked at the end, which only the interpreter's exit hooks release)."""

    def add_model(self, *args: Any, **kwargs: Any) -> None:
        load = super().add_model
        with ThreadPoolExecutor(max_workers=1) as pool:
            pool.submit(load, *args, **kwargs).result()


class PoolManagerAdapter(SerialManagerAdapter):
    """Patches the manager's modules but not the pool's: its worker is a real thread."""

    name = "pool-manager"

    def build(self, registry: Any, *, max_size: int, **options: Any) -> PoolManager:
        del max_size
        return PoolManager(registry, lock_timeout=options.get("lock_timeout", 60.0))

    def patch_modules(self) -> Sequence[ModuleType]:
        return [sys.modules[__name__], sys.modules["examples.own_manager"]]

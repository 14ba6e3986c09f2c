"""A user's manager that loads on a worker pool: a real pattern, and a real OS thread
unless the adapter names ``concurrent.futures.thread`` among the modules to patch."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from types import ModuleType
from typing import Any

from examples.own_manager import SerialManager, SerialManagerAdapter


class PoolManager(SerialManager):
    """``SerialManager`` whose loads run on a one-worker pool (one pool per load, shut
    down when it is done)."""

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


class LongPoolManager(SerialManager):
    """``SerialManager`` with a pool that lives as long as the manager (a server's
    pattern): its idle workers outlive every scenario, and only the interpreter's exit
    hook (``concurrent.futures.thread._python_exit``) stops them."""

    def __init__(self, registry: Any, *, lock_timeout: float = 60.0) -> None:
        super().__init__(registry, lock_timeout=lock_timeout)
        self._pool = ThreadPoolExecutor(max_workers=2)

    def add_model(self, *args: Any, **kwargs: Any) -> None:
        self._pool.submit(super().add_model, *args, **kwargs).result()


class LongPoolManagerAdapter(SerialManagerAdapter):
    """Patches the pool's modules too: its workers are logical threads."""

    name = "long-pool-manager"

    def build(self, registry: Any, *, max_size: int, **options: Any) -> LongPoolManager:
        del max_size
        return LongPoolManager(registry, lock_timeout=options.get("lock_timeout", 60.0))

    def patch_modules(self) -> Sequence[ModuleType]:
        return [
            sys.modules[__name__],
            sys.modules["examples.own_manager"],
            importlib.import_module("concurrent.futures.thread"),
            importlib.import_module("concurrent.futures._base"),
        ]

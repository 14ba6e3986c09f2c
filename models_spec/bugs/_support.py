"""What bug modules build their variants from: stack builders and the variant adapter.

A variant is the core with exactly one code path swapped (see each bug
module's docstring). `cache_over_manager(manager_cls=..., cache_cls=...)`
builds ``Cache(Manager)`` like `CoreAdapter(depth=0)` with the variant's
classes in place of the core's; `bare_manager(manager_cls)` a plain manager.
`VariantAdapter` is the `ManagerAdapter` the catalogue makes of a bug
module's `Variant`: it builds the variant's stack, reads snapshots like the
core adapter and patches the core's concurrency modules plus the bug module
(its code may use ``threading`` too).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import attrs

from models_spec.adapter import (
    CAPABILITIES,
    BareManagerAdapter,
    CoreAdapter,
    Snapshot,
    stack_statistics,
)

__all__ = [
    "BARE_CAPABILITIES",
    "StackBuilder",
    "VariantAdapter",
    "bare_manager",
    "cache_over_manager",
]

BARE_CAPABILITIES = BareManagerAdapter().capabilities
"""What a plain `ModelManager` stack offers (no LRU, pins, capacity or refresh)."""

StackBuilder = Callable[..., Any]
"""``builder(registry, *, max_size, memory_probe, lock_timeout, queue_lock_timeout,
inner_models) -> stack``, the keywords of `ManagerAdapter.build`."""


def _cache_kwargs(
    memory_probe: Any, queue_lock_timeout: float, on_full: str = "proceed"
) -> dict[str, Any]:
    # The spec's full-cache policy is "proceed" (admit over the bound) unless
    # the variant names another one (`cache_over_manager(on_full=...)`).
    kwargs: dict[str, Any] = {"queue_lock_timeout": queue_lock_timeout, "on_full": on_full}
    if memory_probe is not None:
        kwargs["memory_probe"] = memory_probe
        kwargs["memory_free_threshold"] = float(getattr(memory_probe, "threshold", 0.5))
    return kwargs


def cache_over_manager(
    manager_cls: Any = None,
    cache_cls: Any = None,
    *,
    on_full: str = "proceed",
) -> StackBuilder:
    """A builder of ``cache_cls(manager_cls(registry))`` (core classes by default).

    `inner_models` are loaded into the manager before the cache is built
    around it (the "adopt" capability). `on_full` is the cache's full-cache
    policy; the builder carries it as its ``on_full`` attribute, which the
    variant's adapter offers the driver (the spec and I11 judge under it).
    """

    def build(
        registry: Any,
        *,
        max_size: int,
        memory_probe: Any = None,
        lock_timeout: float = 60.0,
        queue_lock_timeout: float = 5.0,
        inner_models: Sequence[str] = (),
    ) -> Any:
        from modelmanager import ModelManager, WithFixedSizeCache  # noqa: PLC0415

        manager = (manager_cls or ModelManager)(registry, lock_timeout=lock_timeout)
        for model_id in inner_models:
            manager.add_model(model_id)
        return (cache_cls or WithFixedSizeCache)(
            manager, max_size=max_size, **_cache_kwargs(memory_probe, queue_lock_timeout, on_full)
        )

    build.on_full = on_full  # type: ignore[attr-defined]
    return build


def bare_manager(manager_cls: Any) -> StackBuilder:
    """A builder of a plain ``manager_cls(registry)`` (cache arguments ignored)."""

    def build(
        registry: Any,
        *,
        max_size: int,
        memory_probe: Any = None,
        lock_timeout: float = 60.0,
        queue_lock_timeout: float = 5.0,
        inner_models: Sequence[str] = (),
    ) -> Any:
        manager = manager_cls(registry, lock_timeout=lock_timeout)
        for model_id in inner_models:
            manager.add_model(model_id)
        return manager

    return build


@attrs.define
class VariantAdapter:
    """The adapter of one known-bug variant (`bug` e.g. "B4", `module` the bug module)."""

    bug: str
    name: str
    module: str
    builder: StackBuilder = attrs.field(repr=False)
    capabilities: frozenset[str] = CAPABILITIES
    _reader: CoreAdapter = attrs.field(factory=lambda: CoreAdapter(0), init=False, repr=False)

    def build(
        self,
        registry: Any,
        *,
        max_size: int,
        memory_probe: Any = None,
        lock_timeout: float = 60.0,
        queue_lock_timeout: float = 5.0,
        inner_models: Sequence[str] = (),
    ) -> Any:
        """The variant's stack over `registry`."""
        extra: dict[str, Any] = {"inner_models": tuple(inner_models)} if inner_models else {}
        return self.builder(
            registry,
            max_size=max_size,
            memory_probe=memory_probe,
            lock_timeout=lock_timeout,
            queue_lock_timeout=queue_lock_timeout,
            **extra,
        )

    @property
    def on_full(self) -> str:
        """The variant's full-cache policy (its builder's ``on_full``; "proceed" if none)."""
        return str(getattr(self.builder, "on_full", "proceed"))

    def snapshot(self, stack: Any) -> Snapshot:
        """Read like the core adapters (the variant keeps the core's introspection),
        every part afresh at every step: a variant's bug may change state where the
        core would not (no reuse, see `CoreAdapter.snapshot`)."""
        if "lru" not in self.capabilities:
            return BareManagerAdapter().snapshot(stack)
        return self._reader.fresh_snapshot(stack)

    def statistics(self, stack: Any) -> dict[str, int]:
        """The stack's `statistics()` as a mapping (the variant keeps the core's counters)."""
        return stack_statistics(stack)

    def patch_modules(self) -> Sequence[ModuleType]:
        """The core's concurrency modules plus the bug module."""
        return [*CoreAdapter(0).patch_modules(), importlib.import_module(self.module)]

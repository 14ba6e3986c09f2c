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
from collections.abc import Sequence
from types import ModuleType
from typing import Any, Protocol, Unpack

import attrs

from models_spec.adapter import (
    CAPABILITIES,
    BareManagerAdapter,
    BuildKwargs,
    BuildOptions,
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


class StackBuilder(Protocol):
    """``builder(registry, **options) -> stack``: `ManagerAdapter.build` without the
    adapter (the keywords are `BuildKwargs`)."""

    def __call__(self, registry: Any, **options: Unpack[BuildKwargs]) -> Any: ...


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

    def build(registry: Any, **options: Unpack[BuildKwargs]) -> Any:
        from modelmanager import ModelManager, WithFixedSizeCache  # noqa: PLC0415

        settings = BuildOptions(**options)
        manager = (manager_cls or ModelManager)(registry, lock_timeout=settings.lock_timeout)
        for model_id in settings.inner_models:
            manager.add_model(model_id)
        # The spec's full-cache policy is "proceed" (admit over the bound) unless
        # the variant names another one (`cache_over_manager(on_full=...)`).
        return (cache_cls or WithFixedSizeCache)(
            manager, max_size=settings.max_size, **settings.cache_kwargs(on_full)
        )

    build.on_full = on_full  # type: ignore[attr-defined]
    return build


def bare_manager(manager_cls: Any) -> StackBuilder:
    """A builder of a plain ``manager_cls(registry)`` (cache arguments ignored)."""

    def build(registry: Any, **options: Unpack[BuildKwargs]) -> Any:
        settings = BuildOptions(**options)
        manager = manager_cls(registry, lock_timeout=settings.lock_timeout)
        for model_id in settings.inner_models:
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

    def build(self, registry: Any, **options: Unpack[BuildKwargs]) -> Any:
        """The variant's stack over `registry`."""
        return self.builder(registry, **options)

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

"""Module-level adapter factories for the suite's tests (importable by worker processes)."""

from __future__ import annotations

from modelmanager import WithFixedSizeCache
from models_spec.adapter import CoreAdapter
from models_spec.bugs._support import VariantAdapter, cache_over_manager


def never_breaks() -> CoreAdapter:
    """A "variant" that is really the core: no scenario can catch it."""
    return CoreAdapter(0, name="fake-variant-that-never-breaks")


def broken_factory() -> CoreAdapter:
    """A factory that raises (for --target rejection)."""
    raise RuntimeError("this factory is broken on purpose")


NOT_AN_ADAPTER = object()


class _EvictsUpToThree(WithFixedSizeCache):
    """Upstream's capacity eviction: a full cache evicts up to 3 least-recent models."""

    def _select_capacity_victims_locked(
        self, need: int, leased: frozenset[str], exclude: str
    ) -> list[str]:
        return super()._select_capacity_victims_locked(max(need, 3), leased, exclude)


def evicts_up_to_three() -> VariantAdapter:
    """A cache that over-evicts (chosen semantics 6 broken): only I15 can see it."""
    return VariantAdapter(
        "B14",
        "fake-core-evicts-up-to-three",
        __name__,
        cache_over_manager(cache_cls=_EvictsUpToThree),
    )

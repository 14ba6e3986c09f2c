"""Module-level adapter factories for the suite's tests (importable by worker processes)."""

from __future__ import annotations

from collections.abc import Collection

from modelmanager import WithFixedSizeCache
from modelmanager.decorators._cache_policy import CapacityPolicy
from models_spec.adapter import BareManagerAdapter, CoreAdapter
from models_spec.bugs._support import VariantAdapter, cache_over_manager


def never_breaks() -> CoreAdapter:
    """A "variant" that is really the core: no scenario can catch it."""
    return CoreAdapter(0, name="fake-variant-that-never-breaks")


def broken_factory() -> CoreAdapter:
    """A factory that raises (for --target rejection)."""
    raise RuntimeError("this factory is broken on purpose")


NOT_AN_ADAPTER = object()


class _UpToThreePolicy(CapacityPolicy):
    """Upstream's capacity eviction: a full cache evicts up to 3 least-recent models."""

    def capacity_victims(self, need: int, leased: Collection[str], exclude: str) -> list[str]:
        return super().capacity_victims(max(need, 3), leased, exclude)


class _EvictsUpToThree(WithFixedSizeCache):
    """The core cache with `_UpToThreePolicy`."""

    policy_class = _UpToThreePolicy


def evicts_up_to_three() -> VariantAdapter:
    """A cache that over-evicts (chosen semantics 6 broken): only I15 can see it."""
    return VariantAdapter(
        "B14",
        "fake-core-evicts-up-to-three",
        __name__,
        cache_over_manager(cache_cls=_EvictsUpToThree),
    )


class _InertControl(BareManagerAdapter):
    """A "control" that never changes anything: `inert_control` always says so."""

    def inert_control(self) -> str:
        """Always inert."""
        return "control is inert: the fake overrides nothing"


def inert_control() -> BareManagerAdapter:
    """A control whose change never takes effect (its cells must be ERROR)."""
    return _InertControl(name="fake-inert-control")


def working_control() -> BareManagerAdapter:
    """A control whose change always takes effect (its cells keep their verdicts)."""
    return BareManagerAdapter(name="fake-working-control")

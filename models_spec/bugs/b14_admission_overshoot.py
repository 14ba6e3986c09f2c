"""B14 admission overshoot: admission ignores loads in flight.

Bug path: `CapacityPolicy.in_flight` (one override, named by the cache's
`policy_class`).  Each of K
concurrent cold adds sees `len < max_size` before any registers, so up to
`max_size - 1 + K` models end up loaded or loading (I11).
"""

from __future__ import annotations

from modelmanager import WithFixedSizeCache
from modelmanager.decorators._cache_policy import CapacityPolicy
from models_spec._harness.catalogue import Bug, Variant
from models_spec.bugs._support import cache_over_manager
from models_spec.scenarios import Op, Scenario, Setup

__all__ = ["BUG", "NoInFlightCache", "NoInFlightPolicy"]


class NoInFlightPolicy(CapacityPolicy):
    """Counts only registered models against `max_size` (upstream)."""

    def in_flight(self) -> int:
        return 0


class NoInFlightCache(WithFixedSizeCache):
    """The core cache with `NoInFlightPolicy`."""

    policy_class = NoInFlightPolicy


BUG = Bug(
    id="B14",
    title="admission overshoot",
    story=(
        "X is loaded in a cache of 2. T1 adds Y and T2 adds Z: each sees one free slot "
        "before the other registers, so both load and three models end up loaded (I11)."
    ),
    scenario=Scenario(
        "B14-admission-overshoot",
        ("B14",),
        "two concurrent cold adds into a cache with one free slot never exceed max_size",
        [("T1", [Op("add", "Y")]), ("T2", [Op("add", "Z")])],
        Setup(max_size=2, preload=("X",)),
        needs=frozenset({"capacity"}),
    ),
    variants=Variant(cache_over_manager(cache_cls=NoInFlightCache)),
    breaks=("I11",),
    caught_by=("pct", "dpor", "random"),
)

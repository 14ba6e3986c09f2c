"""B14 admission overshoot: admission ignores loads in flight.

Bug path: `WithFixedSizeCache._in_flight_locked` (one override).  Each of K
concurrent cold adds sees `len < max_size` before any registers, so up to
`max_size - 1 + K` models end up loaded or loading (I11).
"""

from __future__ import annotations

from modelmanager import WithFixedSizeCache
from models_spec.bugs._support import cache_over_manager
from models_spec.catalogue import Bug, Variant
from models_spec.scenarios import Op, Scenario, Setup

__all__ = ["BUG", "NoInFlightCache"]


class NoInFlightCache(WithFixedSizeCache):
    """Counts only registered models against `max_size` (upstream)."""

    def _in_flight_locked(self) -> int:
        return 0


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

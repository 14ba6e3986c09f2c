"""B22 bound not restored: the cache stays over its bound after leases and pins end.

Bug path: `WithFixedSizeCache._restore` (one override: it does nothing).
When every model is leased or pinned a cold add is admitted over `max_size`
(on_full="proceed"); once those leases are given back the cache must evict
back within its bound.  Without restoration only the next cold add brings
it back, so after a burst the inner manager holds more models than the
operator budgeted for as long as no new model is loaded (I11 at quiescence).
"""

from __future__ import annotations

from modelmanager import WithFixedSizeCache
from models_spec._harness.catalogue import Bug, Variant
from models_spec.bugs._support import cache_over_manager
from models_spec.scenarios import Op, Scenario, Setup

__all__ = ["BUG", "NoRestorationCache"]


class NoRestorationCache(WithFixedSizeCache):
    """The core cache that never evicts back within its bound after an overflow."""

    def _restore(self, exclude: str | None = None) -> None:
        return None


BUG = Bug(
    id="B22",
    title="bound not restored",
    story=(
        "In a cache of 1 holding X, U acquires X and, holding the lease, adds Y: X is "
        "leased, so Y is admitted over the bound. V acquires Y. Once both leases are "
        "given back the cache must evict back to one model; if it waits for the next "
        "cold add instead, two models stay loaded under a bound of 1 (I11)."
    ),
    scenario=Scenario(
        "B22-bound-not-restored",
        ("B22",),
        "once every lease has been given back the cache holds at most max_size models",
        [
            ("U", [Op("acquire", "X", inside=(Op("add", "Y"),))]),
            ("V", [Op("acquire", "Y")]),
        ],
        Setup(max_size=1, preload=("X",)),
        needs=frozenset({"leases", "capacity"}),
    ),
    variants=Variant(cache_over_manager(cache_cls=NoRestorationCache)),
    breaks=("I11",),
    caught_by=("pct", "dpor", "random"),
)

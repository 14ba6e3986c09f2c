"""B9 failed multi-eviction drops entries: popped entries are not put back.

Bug path: `WithFixedSizeCache._rollback_eviction` (one override; on the
failure path only).  Upstream pops candidates off the LRU's left end while
evicting, pinned ones included (skipped without using the budget), so when
`remove(A)` raises, P and A, both still loaded, are gone from the LRU (I6).
"""

from __future__ import annotations

import sys

from modelmanager import WithFixedSizeCache
from models_spec._harness.catalogue import Bug, Variant
from models_spec.bugs._support import cache_over_manager
from models_spec.scenarios import Op, Scenario, Setup

__all__ = ["BUG", "DropOnFailedEvictionCache"]


class DropOnFailedEvictionCache(WithFixedSizeCache):
    """A failed eviction leaves every entry up to the failed candidate off the LRU."""

    def _rollback_eviction(self, victims: list[str], batch: object) -> None:
        if sys.exc_info()[0] is not None and victims:
            failed = victims[0]
            with self._lru_changed:
                order = self._book.order()
                if failed in order:
                    for popped in order[: order.index(failed) + 1]:
                        self._book.forget(popped)
        super()._rollback_eviction(victims, batch)


BUG = Bug(
    id="B9",
    title="failed multi-eviction drops entries",
    story=(
        "LRU [P(pinned), A, B], full. Adding C pops P (pinned: skipped) and A off the "
        "LRU; remove(A) raises. P and A, both still loaded, are gone from the LRU "
        "instead of keeping their positions (I6)."
    ),
    scenario=Scenario(
        "B9-failed-multi-eviction",
        ("B9",),
        "LRU [P(pinned), A, B] full; evicting A fails: P and A keep their positions",
        [("T", [Op("add", "C", exclusive=True)])],
        Setup(max_size=3, preload=("P", "A", "B"), pins=("P",), unload_failures={"A": (1,)}),
        needs=frozenset({"lru", "pins", "capacity"}),
    ),
    variants=Variant(cache_over_manager(cache_cls=DropOnFailedEvictionCache)),
    breaks=("I4", "I6", "I12"),
    caught_by=("pct", "dpor", "random"),
)

"""B15 queue lock held across slow unloads.

Bug path: `WithFixedSizeCache._evict` (the override that matters): eviction
runs with the LRU lock held, across the victims' lifecycle waits and
`clear_cache`, so every inference refresh waits behind it (I14, observed
with a probe that asks whether the thread starting `clear_cache` holds the
LRU lock).  Not a single override: the core's LRU lock is not re-entrant and
`_evict` reaches `_forget`, which takes it again, so `_bookkeeping_lock`
also returns a re-entrant lock (upstream's queue lock is held by the same
thread).
"""

from __future__ import annotations

import threading
from typing import Any

from modelmanager import WithFixedSizeCache
from models_spec._harness.catalogue import Bug, Variant
from models_spec.bugs._support import cache_over_manager
from models_spec.scenarios import Op, Scenario, Setup

__all__ = ["BUG", "LockedEvictionCache"]


class LockedEvictionCache(WithFixedSizeCache):
    """Holds the LRU lock for the whole eviction (upstream's queue lock)."""

    def _bookkeeping_lock(self, view: Any) -> Any:
        return threading.RLock()

    def _evict(self, victims: list[str], cause: str, batch: object) -> int:
        with self._lru_guard():
            return super()._evict(victims, cause, batch)


BUG = Bug(
    id="B15",
    title="queue lock held across slow unloads",
    story=(
        "T adds Y into a full cache of 1 and evicts X holding the LRU lock across X's "
        "clear_cache; I's inference refresh of X waits behind it and times out (a 503 "
        "upstream). The LRU lock must never be held across a constructor or clear_cache "
        "(I14)."
    ),
    scenario=Scenario(
        "B15-queue-lock-across-unload",
        ("B15",),
        "eviction never holds the LRU lock across clear_cache (inference refresh stays free)",
        [("T", [Op("add", "Y")]), ("I", [Op("refresh", "X")])],
        Setup(max_size=1, preload=("X",)),
        needs=frozenset({"lru", "refresh", "capacity"}),
        observe_lru_lock=True,
    ),
    variants=Variant(cache_over_manager(cache_cls=LockedEvictionCache)),
    breaks=("I14",),
    caught_by=("pct", "dpor", "random"),
)

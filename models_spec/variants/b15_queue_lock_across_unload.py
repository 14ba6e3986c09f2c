"""B15 queue lock held across slow unloads.

Bug path: `WithFixedSizeCache._evict` (the override that matters): eviction
runs with the LRU lock held, across the victims' lifecycle waits and
`clear_cache`, so every inference refresh waits behind it (I14, observed
with a probe that asks whether the thread starting `clear_cache` holds the
LRU lock).  Not a single override: the core's LRU lock is not re-entrant and
`_evict` reaches `_forget`, which takes it again, so `__init__` also swaps
in a re-entrant lock (upstream's queue lock is held by the same thread).
"""

from __future__ import annotations

import threading
from typing import Any

from modelmanager import WithFixedSizeCache
from models_spec.variants._base import VariantAdapter, cache_over_manager

__all__ = ["BUG", "LockedEvictionCache", "adapter"]

BUG = "B15"


class LockedEvictionCache(WithFixedSizeCache):
    """Holds the LRU lock for the whole eviction (upstream's queue lock)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lru_lock = threading.RLock()  # type: ignore[assignment]
        self._lru_changed = threading.Condition(self._lru_lock)

    def _evict(self, victims: list[str], cause: str) -> int:
        with self._lru_guard():
            return super()._evict(victims, cause)


def adapter() -> VariantAdapter:
    """`LockedEvictionCache(Manager)`."""
    return VariantAdapter(
        BUG,
        "variant-B15-queue-lock-across-unload",
        __name__,
        cache_over_manager(cache_cls=LockedEvictionCache),
    )

"""B9 failed multi-eviction drops entries: popped entries are not put back.

Bug path: `WithFixedSizeCache._rollback_eviction` (one override; on the
failure path only).  Upstream pops candidates off the LRU's left end while
evicting, pinned ones included (skipped without using the budget), so when
`remove(A)` raises, P and A, both still loaded, are gone from the LRU (I6).
"""

from __future__ import annotations

import sys

from modelmanager import WithFixedSizeCache
from models_spec.variants._base import VariantAdapter, cache_over_manager

__all__ = ["BUG", "DropOnFailedEvictionCache", "adapter"]

BUG = "B9"


class DropOnFailedEvictionCache(WithFixedSizeCache):
    """A failed eviction leaves every entry up to the failed candidate off the LRU."""

    def _rollback_eviction(self, victims: list[str]) -> None:
        if sys.exc_info()[0] is not None and victims:
            failed = victims[0]
            with self._lru_changed:
                order = list(self._lru)
                if failed in order:
                    for popped in order[: order.index(failed) + 1]:
                        self._lru.pop(popped, None)
        super()._rollback_eviction(victims)


def adapter() -> VariantAdapter:
    """`DropOnFailedEvictionCache(Manager)`."""
    return VariantAdapter(
        BUG,
        "variant-B9-failed-eviction-drops",
        __name__,
        cache_over_manager(cache_cls=DropOnFailedEvictionCache),
    )

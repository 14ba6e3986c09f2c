"""B4 warm fast path bypass: "already loaded?" answered without the id's lifecycle.

Bug path: `WithFixedSizeCache._add` (one override).  The check reads the
registry with no lock (a `lockstep.checkpoint` on the id marks that read as a
switch point dependent with the id's constructor and `clear_cache`), so it
answers "loaded" while a removal is inside X's `clear_cache` and re-appends
X to the LRU (I3; a phantom LRU entry, I4).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import lockstep
from modelmanager import WithFixedSizeCache
from models_spec.variants._base import VariantAdapter, cache_over_manager

__all__ = ["BUG", "UnlockedFastPathCache", "adapter"]

BUG = "B4"


class UnlockedFastPathCache(WithFixedSizeCache):
    """The core cache with upstream's unlocked warm fast path in front of `_add`."""

    def _add(self, request: Any, after_load: Callable[[str], Any] | None) -> Any:
        resolved_id = request.resolved_id
        lockstep.checkpoint(f"unlocked loaded-check:{resolved_id}", resource=resolved_id)
        if resolved_id in self._manager:
            with self._lru_guard():
                self._lru[resolved_id] = None  # upstream re-appends on a "hit"
                self._lru.move_to_end(resolved_id)
            return after_load(resolved_id) if after_load is not None else None
        return super()._add(request, after_load)


def adapter() -> VariantAdapter:
    """`UnlockedFastPathCache(Manager)`."""
    return VariantAdapter(
        BUG,
        "variant-B4-warm-fast-path",
        __name__,
        cache_over_manager(cache_cls=UnlockedFastPathCache),
    )

"""B10 alias is not the key: the warm check uses the canonical id.

Bug path: `WithFixedSizeCache._warm_hit` (one override).  With C loaded,
`add_model(C, alias=A)` sees C loaded, appends A to the LRU and returns
without loading anything under A (I3; a phantom A in the LRU, I4).
"""

from __future__ import annotations

from typing import Any

from modelmanager import WithFixedSizeCache
from models_spec.variants._base import VariantAdapter, cache_over_manager

__all__ = ["BUG", "CanonicalWarmCheckCache", "adapter"]

BUG = "B10"


class CanonicalWarmCheckCache(WithFixedSizeCache):
    """Answers a warm hit when the *canonical* id is loaded (upstream)."""

    def _warm_hit(self, resolved_id: str, request: Any) -> bool:
        if request.model_id not in self._manager:
            return False
        with self._lru_guard():
            self._lru[resolved_id] = None
            self._lru.move_to_end(resolved_id)
            if request.pin:
                self._pins.add(resolved_id)
        return True


def adapter() -> VariantAdapter:
    """`CanonicalWarmCheckCache(Manager)`."""
    return VariantAdapter(
        BUG,
        "variant-B10-alias-not-key",
        __name__,
        cache_over_manager(cache_cls=CanonicalWarmCheckCache),
    )

"""B13 phantom from inference refresh: refreshing an unloaded id appends it.

Bug path: `WithFixedSizeCache.refresh` (one override).  Inference on an id
that is not loaded puts it in the LRU (I4 at quiescence: a phantom).
"""

from __future__ import annotations

from modelmanager import WithFixedSizeCache
from modelmanager._validation import check_model_id
from models_spec.variants._base import VariantAdapter, cache_over_manager

__all__ = ["BUG", "AppendingRefreshCache", "adapter"]

BUG = "B13"


class AppendingRefreshCache(WithFixedSizeCache):
    """`refresh` moves the id to the most-recent end, appending it if absent (upstream)."""

    def refresh(self, model_id: str) -> None:
        check_model_id(model_id)
        with self._lru_guard():
            self._lru[model_id] = None
            self._lru.move_to_end(model_id)


def adapter() -> VariantAdapter:
    """`AppendingRefreshCache(Manager)`."""
    return VariantAdapter(
        BUG,
        "variant-B13-refresh-phantom",
        __name__,
        cache_over_manager(cache_cls=AppendingRefreshCache),
    )

"""B6 failed remove moves X: the rollback re-appends X at the most-recent end.

Bug path: `WithFixedSizeCache.remove` (one override).  The id leaves the LRU
first; when the inner removal fails the rollback appends it again, so a
failed remove of X turns `[A, X, B]` into `[A, B, X]` (I5).
"""

from __future__ import annotations

from modelmanager import WithFixedSizeCache
from modelmanager._validation import check_bool, check_model_id
from models_spec.variants._base import VariantAdapter, cache_over_manager

__all__ = ["BUG", "AppendingRollbackCache", "adapter"]

BUG = "B6"


class AppendingRollbackCache(WithFixedSizeCache):
    """Forget first, re-append on failure (a rollback that forgets the position)."""

    def remove(self, model_id: str, delete_from_disk: bool = True) -> None:
        check_model_id(model_id)
        check_bool(delete_from_disk, "delete_from_disk")
        with self._manager.lifecycle(model_id):
            was_listed = model_id in self._lru
            self._forget(model_id)
            try:
                self._manager.remove(model_id, delete_from_disk=delete_from_disk)
            except BaseException:
                if was_listed:
                    with self._lru_changed:
                        self._lru[model_id] = None  # lands at the most-recent end
                raise


def adapter() -> VariantAdapter:
    """`AppendingRollbackCache(Manager)`."""
    return VariantAdapter(
        BUG,
        "variant-B6-failed-remove-moves",
        __name__,
        cache_over_manager(cache_cls=AppendingRollbackCache),
    )

"""B5 failed remove desynchronises the LRU: the entry goes before the inner remove.

Bug path: `WithFixedSizeCache.remove` (one override, a copy with the LRU
step moved first).  When `clear_cache` raises, X stays loaded but is gone
from the LRU: never evictable again (I5; I4 at quiescence).
"""

from __future__ import annotations

from modelmanager import WithFixedSizeCache
from modelmanager._validation import check_bool, check_model_id
from models_spec.variants._base import VariantAdapter, cache_over_manager

__all__ = ["BUG", "ForgetFirstCache", "adapter"]

BUG = "B5"


class ForgetFirstCache(WithFixedSizeCache):
    """Drops the id from the LRU before the inner removal runs (upstream)."""

    def remove(self, model_id: str, delete_from_disk: bool = True) -> None:
        check_model_id(model_id)
        check_bool(delete_from_disk, "delete_from_disk")
        with self._manager.lifecycle(model_id):
            self._forget(model_id)
            self._manager.remove(model_id, delete_from_disk=delete_from_disk)


def adapter() -> VariantAdapter:
    """`ForgetFirstCache(Manager)`."""
    return VariantAdapter(
        BUG,
        "variant-B5-failed-remove-desync",
        __name__,
        cache_over_manager(cache_cls=ForgetFirstCache),
    )

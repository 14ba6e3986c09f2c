"""B16 error masking and false failure: cleanup waits are bounded and their timeouts win.

Bug path: the cache's cleanup bookkeeping, `_release_slot` and `_forget`
(two overrides of one idea): both wait for the LRU lock with the queue
timeout, as upstream's cleanup does.  A timeout in a failed load's cleanup
replaces the loader's error; a timeout in `_forget` after the model was
torn down reports a successful remove as failed (I16).
"""

from __future__ import annotations

from modelmanager import WithFixedSizeCache
from models_spec.variants._base import VariantAdapter, cache_over_manager

__all__ = ["BUG", "BoundedCleanupCache", "adapter"]

BUG = "B16"


class BoundedCleanupCache(WithFixedSizeCache):
    """Cleanup steps that can time out and raise over the real outcome."""

    def _release_slot(self, resolved_id: str) -> None:
        with self._lru_guard():
            self._unreserve_locked(resolved_id)
            self._lru_changed.notify_all()

    def _forget(self, resolved_id: str) -> None:
        with self._lru_guard():
            self._lru.pop(resolved_id, None)
            self._evicting.discard(resolved_id)
            self._lru_changed.notify_all()


def adapter() -> VariantAdapter:
    """`BoundedCleanupCache(Manager)`."""
    return VariantAdapter(
        BUG,
        "variant-B16-error-masking",
        __name__,
        cache_over_manager(cache_cls=BoundedCleanupCache),
    )

"""B16 error masking and false failure: cleanup waits are bounded and their timeouts win.

Bug path: the cache's cleanup bookkeeping, `_release_slot` and `_forget`
(two overrides of one idea): each first waits for the LRU lock with the
queue timeout, as upstream's cleanup does, then runs the core's step.  A
timeout in a failed load's cleanup replaces the loader's error; a timeout
in `_forget` after the model was torn down reports a successful remove as
failed (I16).
"""

from __future__ import annotations

from modelmanager import WithFixedSizeCache
from models_spec.variants._base import VariantAdapter, cache_over_manager

__all__ = ["BUG", "BoundedCleanupCache", "adapter"]

BUG = "B16"


class BoundedCleanupCache(WithFixedSizeCache):
    """Cleanup steps that first wait for the LRU lock with a bound, and raise on timeout."""

    def _release_slot(self, resolved_id: str) -> None:
        with self._lru_guard():  # upstream's bounded wait; its timeout wins over the real error
            pass
        super()._release_slot(resolved_id)

    def _forget(self, resolved_id: str) -> None:
        with self._lru_guard():  # bounded: a timeout reports a finished removal as failed
            pass
        super()._forget(resolved_id)


def adapter() -> VariantAdapter:
    """`BoundedCleanupCache(Manager)`."""
    return VariantAdapter(
        BUG,
        "variant-B16-error-masking",
        __name__,
        cache_over_manager(cache_cls=BoundedCleanupCache),
    )

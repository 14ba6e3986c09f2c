"""B8 failure path erases a concurrent success: a failed load drops every LRU entry of X.

Bug path: `WithFixedSizeCache._release_slot` (one override; on the failure
path only).  The core releases a failed load's slot after leaving the id's
lifecycle; this variant also removes X from the LRU there, as upstream's
failure path removes every occurrence.  When another add of X succeeded in
between, X stays loaded but is absent from the LRU (I4 at quiescence).
"""

from __future__ import annotations

import sys

from modelmanager import WithFixedSizeCache
from models_spec.variants._base import VariantAdapter, cache_over_manager

__all__ = ["BUG", "EraseOnFailureCache", "adapter"]

BUG = "B8"


class EraseOnFailureCache(WithFixedSizeCache):
    """A failed load's cleanup removes the id from the LRU, whoever put it there."""

    def _release_slot(self, resolved_id: str) -> None:
        super()._release_slot(resolved_id)
        if sys.exc_info()[0] is not None:  # only on the failure path
            with self._lru_changed:
                self._lru.pop(resolved_id, None)


def adapter() -> VariantAdapter:
    """`EraseOnFailureCache(Manager)`."""
    return VariantAdapter(
        BUG,
        "variant-B8-failure-erases-success",
        __name__,
        cache_over_manager(cache_cls=EraseOnFailureCache),
    )

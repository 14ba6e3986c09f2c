"""B13 phantom from inference refresh: refreshing an unloaded id appends it.

Bug path: `WithFixedSizeCache.refresh` (one override).  Inference on an id
that is not loaded puts it in the LRU (I4 at quiescence: a phantom).
"""

from __future__ import annotations

from modelmanager import WithFixedSizeCache
from models_spec._harness.catalogue import Bug, Variant
from models_spec.bugs._support import cache_over_manager
from models_spec.scenarios import Op, Scenario, Setup

__all__ = ["BUG", "AppendingRefreshCache"]


class AppendingRefreshCache(WithFixedSizeCache):
    """`refresh` moves the id to the most-recent end, appending it if absent (upstream)."""

    def refresh(self, model_id: str) -> None:
        with self._lru_guard():
            lru = self._book.lru  # appends an unloaded id: a phantom
            lru.setdefault(model_id, None)
            lru.move_to_end(model_id)


BUG = Bug(
    id="B13",
    title="phantom from inference refresh",
    story=(
        "I refreshes Z (an inference call) although Z is not loaded: Z is appended to "
        "the LRU, a phantom with no model behind it (I4 at quiescence)."
    ),
    scenario=Scenario(
        "B13-phantom-from-refresh",
        ("B13",),
        "inference refresh of an unloaded id adds no LRU entry",
        [("I", [Op("refresh", "Z")]), ("A", [Op("add", "X")])],
        Setup(max_size=2),
        needs=frozenset({"lru", "refresh"}),
    ),
    variants=Variant(cache_over_manager(cache_cls=AppendingRefreshCache)),
    breaks=("I4",),
    caught_by=("pct", "dpor", "random"),
)

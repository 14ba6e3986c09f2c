"""B6 failed remove moves X: the rollback re-appends X at the most-recent end.

Bug path: `WithFixedSizeCache.remove` (one override).  The id leaves the LRU
first; when the inner removal fails the rollback appends it again, so a
failed remove of X turns `[A, X, B]` into `[A, B, X]` (I5).
"""

from __future__ import annotations

from modelmanager import WithFixedSizeCache
from models_spec._harness.catalogue import Bug, Variant
from models_spec.bugs._support import cache_over_manager
from models_spec.scenarios import Op, Scenario, Setup

__all__ = ["BUG", "AppendingRollbackCache"]


class AppendingRollbackCache(WithFixedSizeCache):
    """Forget first, re-append on failure (a rollback that forgets the position)."""

    def remove(self, model_id: str, delete_from_disk: bool = True) -> None:
        with self.manager.lifecycle(model_id):
            was_listed = self._book.listed(model_id)
            self._forget(model_id)
            try:
                self.manager.remove(model_id, delete_from_disk=delete_from_disk)
            except BaseException:
                if was_listed:
                    with self._lru_changed:
                        self._book.lru[model_id] = None  # lands at the most-recent end
                raise


BUG = Bug(
    id="B6",
    title="failed remove moves X",
    story=(
        "LRU [A, X, B]. remove(X) takes X off the LRU, clear_cache raises, and the "
        "rollback re-appends X at the most-recent end: a failed remove became a use, "
        "[A, B, X] instead of [A, X, B] (I5)."
    ),
    scenario=Scenario(
        "B6-failed-remove-moves-x",
        ("B6",),
        "a failed remove of X keeps [A, X, B] exactly",
        [("R", [Op("remove", "X", exclusive=True)]), ("S", [Op("getitem", "B")])],
        Setup(max_size=3, preload=("A", "X", "B"), unload_failures={"X": (1,)}),
        needs=frozenset({"lru"}),
    ),
    variants=Variant(cache_over_manager(cache_cls=AppendingRollbackCache)),
    breaks=("I5",),
    caught_by=("pct", "dpor", "random"),
)

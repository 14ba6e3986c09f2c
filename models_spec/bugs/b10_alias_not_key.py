"""B10 alias is not the key: the warm check uses the canonical id.

Bug path: `WithFixedSizeCache._warm_hit` (one override).  With C loaded,
`add_model(C, alias=A)` sees C loaded, appends A to the LRU and returns
without loading anything under A (I3; a phantom A in the LRU, I4).
"""

from __future__ import annotations

from typing import Any

from modelmanager import WithFixedSizeCache
from models_spec._harness.catalogue import Bug, Variant
from models_spec.bugs._support import cache_over_manager
from models_spec.scenarios import Op, Scenario, Setup

__all__ = ["BUG", "CanonicalWarmCheckCache"]


class CanonicalWarmCheckCache(WithFixedSizeCache):
    """Answers a warm hit when the *canonical* id is loaded (upstream)."""

    def _warm_hit(self, resolved_id: str, request: Any) -> bool:
        if request.model_id not in self.manager:
            return False
        with self._lru_guard():
            lru = self._book.lru  # lists the alias although nothing is loaded under it
            lru.setdefault(resolved_id, None)
            lru.move_to_end(resolved_id)
            if request.pin:
                self._book.pin(resolved_id)
        return True


BUG = Bug(
    id="B10",
    title="alias is not the key",
    story=(
        "C is loaded under C. add_model(C, alias=A) checks the canonical id C, sees it "
        "loaded and returns after appending A to the LRU: nothing is loaded under A "
        "(I3), A is a phantom in the LRU (I4, I7) and getitem(A) fails."
    ),
    scenario=Scenario(
        "B10-alias-is-the-key",
        ("B10",),
        "C loaded; add_model(C, alias=A) loads an entry under A",
        [("T", [Op("add", "C", alias="A", exclusive=True), Op("getitem", "A")])],
        Setup(max_size=3, preload=("C",)),
        needs=frozenset({"aliases"}),
    ),
    variants=Variant(cache_over_manager(cache_cls=CanonicalWarmCheckCache)),
    breaks=("I3", "I4", "I7"),
    caught_by=("pct", "dpor", "random"),
)

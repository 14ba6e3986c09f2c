"""B4 warm fast path bypass: "already loaded?" answered without the id's lifecycle.

Bug path: `WithFixedSizeCache._add` (one override).  The check reads the
registry with no lock (a `lockstep.checkpoint` on the id marks that read as a
switch point dependent with the id's constructor and `clear_cache`), so it
answers "loaded" while a removal is inside X's `clear_cache` and re-appends
X to the LRU (I3; a phantom LRU entry, I4).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import lockstep
from modelmanager import WithFixedSizeCache
from models_spec._harness.catalogue import Bug, Variant
from models_spec.bugs._support import cache_over_manager
from models_spec.scenarios import Op, Scenario, Setup

__all__ = ["BUG", "UnlockedFastPathCache"]


class UnlockedFastPathCache(WithFixedSizeCache):
    """The core cache with upstream's unlocked warm fast path in front of `_add`."""

    def _add(self, request: Any, after_load: Callable[[str], Any] | None) -> Any:
        resolved_id = request.resolved_id
        lockstep.checkpoint(f"unlocked loaded-check:{resolved_id}", resource=resolved_id)
        if resolved_id in self.manager:
            with self._lru_guard():
                lru = self._book.lru  # upstream re-appends on a "hit" (no state machine)
                lru.setdefault(resolved_id, None)
                lru.move_to_end(resolved_id)
            return after_load(resolved_id) if after_load is not None else None
        return super()._add(request, after_load)


BUG = Bug(
    id="B4",
    title="warm fast path bypass",
    story=(
        "R is inside X's clear_cache (X still registered). A's cache layer checks "
        '"already loaded?" without any lock, sees X and answers success (re-appending X '
        "to the LRU). R finishes; A's caller finds X gone: add_model returned without a "
        "live model (I3), and the LRU holds a phantom (I4)."
    ),
    scenario=Scenario(
        "B4-warm-fast-path-bypass",
        ("B4",),
        "A adds X while R is inside X's clear_cache: no success answered from a dying model",
        [("R", [Op("remove", "X")]), ("A", [Op("add", "X")])],
        Setup(preload=("X", "Y")),
        needs=frozenset({"lru"}),
    ),
    variants=Variant(cache_over_manager(cache_cls=UnlockedFastPathCache)),
    breaks=("I2", "I3", "I4", "I15"),
    caught_by=("pct", "dpor"),
)

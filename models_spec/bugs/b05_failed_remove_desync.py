"""B5 failed remove desynchronises the LRU: the entry goes before the inner remove.

Bug path: `WithFixedSizeCache.remove` (one override, a copy with the LRU
step moved first).  When `clear_cache` raises, X stays loaded but is gone
from the LRU: never evictable again (I5; I4 at quiescence).
"""

from __future__ import annotations

from modelmanager import WithFixedSizeCache
from models_spec._harness.catalogue import Bug, Variant
from models_spec.bugs._support import cache_over_manager
from models_spec.scenarios import Op, Scenario, Setup

__all__ = ["BUG", "ForgetFirstCache"]


class ForgetFirstCache(WithFixedSizeCache):
    """Drops the id from the LRU before the inner removal runs (upstream)."""

    def remove(self, model_id: str, delete_from_disk: bool = True) -> None:
        with self.manager.lifecycle(model_id):
            self._forget(model_id)
            self.manager.remove(model_id, delete_from_disk=delete_from_disk)


BUG = Bug(
    id="B5",
    title="failed remove desynchronises the LRU",
    story=(
        "LRU [A, X, B]. remove(X) drops X from the LRU first, then the inner remove "
        "fails (clear_cache raises): X stays loaded but is gone from the LRU, never "
        "evictable again (I5; I4 at quiescence)."
    ),
    scenario=Scenario(
        "B5-failed-remove-desyncs-lru",
        ("B5",),
        "remove(X) fails in clear_cache: X stays loaded and in the LRU",
        [("R", [Op("remove", "X", exclusive=True)])],
        Setup(max_size=3, preload=("A", "X", "B"), unload_failures={"X": (1,)}),
        needs=frozenset({"lru"}),
    ),
    variants=Variant(cache_over_manager(cache_cls=ForgetFirstCache)),
    breaks=("I4", "I5"),
    caught_by=("pct", "dpor", "random"),
)

"""B20 cache over a populated manager: the models it already holds are not adopted.

Bug path: `WithFixedSizeCache.__init__` (one override, after the core's):
the LRU starts empty whatever the inner manager holds, as before adoption
was specified.  Those models are unevictable and uncounted: the cap that
protects GPU memory is void (I11: the inner manager holds more than
``max_size``; I4: registered models missing from the LRU), and a warm add of
one of them "succeeds" while the cache does not list it.  The core adopts
them into its LRU in the inner manager's registration order (least recent
first), or refuses with ``InvalidArgument`` when they do not fit.
"""

from __future__ import annotations

from typing import Any

from modelmanager import WithFixedSizeCache
from models_spec._harness.catalogue import Bug, Variant
from models_spec.bugs._support import cache_over_manager
from models_spec.scenarios import Op, Scenario, Setup

__all__ = ["BUG", "NoAdoptionCache"]


class NoAdoptionCache(WithFixedSizeCache):
    """A cache that ignores what the manager it wraps already holds."""

    def __init__(self, manager: Any, max_size: int = 8, **kwargs: Any) -> None:
        super().__init__(manager, max_size=max_size, **kwargs)
        self._book.lru.clear()  # the inner models stay outside the LRU: never counted or evicted


BUG = Bug(
    id="B20",
    title="cache over a populated manager",
    story=(
        "The manager already holds A and B when a cache of 2 is built over it. T1 adds "
        "C: the cache counts no model, evicts nothing and loads C, so the manager holds "
        "three models under a cap of two (I11); T2's add of A answers a hit but A is "
        "not in the cache's LRU, never evictable (I4)."
    ),
    scenario=Scenario(
        "B20-cache-over-a-populated-manager",
        ("B20",),
        "a cache over a manager holding A and B keeps the cap and lists A and B",
        [("T1", [Op("add", "C")]), ("T2", [Op("add", "A"), Op("refresh", "B")])],
        Setup(max_size=2, inner_preload=("A", "B")),
        needs=frozenset({"lru", "capacity"}),
    ),
    variants=Variant(cache_over_manager(cache_cls=NoAdoptionCache)),
    breaks=("I4", "I11", "I15"),
    caught_by=("pct", "dpor", "random"),
)

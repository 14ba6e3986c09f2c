"""B8 failure path erases a concurrent success: a failed load drops every LRU entry of X.

Bug path: `WithFixedSizeCache._release_slot` (one override; on the failure
path only).  The core releases a failed load's slot after leaving the id's
lifecycle; this variant also removes X from the LRU there, as upstream's
failure path removes every occurrence.  When another add of X succeeded in
between, X stays loaded but is absent from the LRU (I4 at quiescence).

Second variant, ``remove-every-occurrence``: upstream's literal code path, on
top of B7's append-before-load cache (`b07_duplicate_lru.AppendBeforeLoadCache`):
both adds append X before loading, and the failed one's cleanup
(`_release_slot`, one override) removes *every* occurrence, the successful
add's included.  Its window is wide enough for the real-thread scenario of
``tests/core_threads`` to reach with gates.
"""

from __future__ import annotations

import sys

from modelmanager import WithFixedSizeCache
from models_spec._harness.catalogue import Bug, Variant
from models_spec.bugs._support import cache_over_manager
from models_spec.bugs.b07_duplicate_lru import AppendBeforeLoadCache
from models_spec.scenarios import Op, Scenario, Setup

__all__ = ["BUG", "EraseOnFailureCache", "RemoveEveryOccurrenceCache"]


class EraseOnFailureCache(WithFixedSizeCache):
    """A failed load's cleanup removes the id from the LRU, whoever put it there."""

    def _release_slot(self, resolved_id: str) -> None:
        super()._release_slot(resolved_id)
        if sys.exc_info()[0] is not None:  # only on the failure path
            with self._lru_changed:
                self._book.forget(resolved_id)


class RemoveEveryOccurrenceCache(AppendBeforeLoadCache):
    """B7's append-before-load cache whose failure path removes every occurrence of X."""

    def _release_slot(self, resolved_id: str) -> None:
        WithFixedSizeCache._release_slot(self, resolved_id)
        if sys.exc_info()[0] is not None:  # the failure path: every X goes
            with self._lru_changed:
                lru = self._book.lru
                while resolved_id in lru:
                    lru.pop(resolved_id, None)


BUG = Bug(
    id="B8",
    title="failure path erases a concurrent success",
    story=(
        "T1 and T2 both add X. T1's load fails and its cleanup removes X from the LRU "
        "while T2's load of X succeeded meanwhile: X is loaded but absent from the LRU "
        "(I4)."
    ),
    scenario=Scenario(
        "B8-failure-erases-concurrent-success",
        ("B8",),
        "T1's load of X fails while T2's succeeds: X stays in the LRU",
        [("T1", [Op("add", "X")]), ("T2", [Op("add", "X")])],
        Setup(max_size=3, load_failures={"X": (1,)}),
        needs=frozenset({"lru"}),
    ),
    variants=(
        Variant(cache_over_manager(cache_cls=EraseOnFailureCache)),
        Variant(
            cache_over_manager(cache_cls=RemoveEveryOccurrenceCache),
            slug="remove-every-occurrence",
        ),
    ),
    breaks=("I4", "I10"),
    caught_by=("pct", "dpor"),
)

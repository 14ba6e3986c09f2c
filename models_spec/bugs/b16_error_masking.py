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
from models_spec._harness.catalogue import Bug, Variant
from models_spec.bugs._support import cache_over_manager
from models_spec.scenarios import Op, Scenario, Setup

__all__ = ["BUG", "BoundedCleanupCache"]


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


BUG = Bug(
    id="B16",
    title="error masking and false failure",
    story=(
        "L's load of X fails; its cleanup then waits for the busy LRU lock and times "
        "out, and the timeout replaces the loader's error. R's remove of Y tore the "
        "model down, then its bookkeeping timed out and reported the successful remove "
        "as failed (I16)."
    ),
    scenario=Scenario(
        "B16-error-masking",
        ("B16",),
        "a failed load raises the loader's error and a successful remove reports success",
        [("L", [Op("add", "X")]), ("R", [Op("remove", "Y")]), ("I", [Op("refresh", "Z")])],
        Setup(max_size=3, preload=("Y", "Z"), load_failures={"X": (1,)}),
        needs=frozenset({"lru", "refresh"}),
    ),
    variants=Variant(cache_over_manager(cache_cls=BoundedCleanupCache)),
    breaks=("I10", "I15", "I16"),
    caught_by=("pct", "dpor", "random"),
)

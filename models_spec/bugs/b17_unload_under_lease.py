"""B17 add-then-infer is not atomic; unload under a running model.

Three ways of putting it back, one variant each:

* ``unload-under-lease`` (the module's own slug): `ModelManager._wait_for_leases`
  is a no-op (one override), so a removal runs `clear_cache` while an
  inference holds a lease on the model and uses it (I13).
* ``eviction-ignores-leases``: the cache's eviction treats leased models as
  evictable (`CapacityPolicy.evictable`, named by the cache's `policy_class`)
  and commits the victim without the core's lease re-check, after waiting
  for its lifecycle (`_hold_victim`, `_victim_gone`, `_confirm_victim_locked`:
  the steps of `_evict_one`).  The unload
  then waits for the lease, so an add made while holding a lease on the
  victim waits for itself until its timeout (I17); the core skips leased
  models and admits over capacity instead.
* ``non-atomic-acquire``: `WithFixedSizeCache.acquire` is ``add_model`` then
  ``lease`` (one override) with a window in between
  (`between_add_and_lease`, a switch point; real-thread tests pause there):
  another add can evict the model first, so the acquire fails with
  ModelNotFound (I15).  This was every error of a 90-minute two-client soak
  of upstream (1,030 of ~208,000 requests).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import lockstep
from modelmanager import Model, ModelManager, WithFixedSizeCache
from modelmanager.decorators._cache_policy import CapacityPolicy
from models_spec._harness.catalogue import Bug, Variant
from models_spec.bugs._support import cache_over_manager
from models_spec.scenarios import Op, Scenario, Setup

__all__ = [
    "BUG",
    "EvictionIgnoresLeasesCache",
    "LeaseBlindPolicy",
    "NoLeaseDrainManager",
    "NonAtomicAcquireCache",
]


class NoLeaseDrainManager(ModelManager):
    """Unloads without waiting for leases to be given back (upstream has no leases)."""

    def _wait_for_leases(self, resolved_id: str) -> None:
        return None


class LeaseBlindPolicy(CapacityPolicy):
    """Treats leased models as evictable."""

    def evictable(self, candidate: str, leased: Collection[str], exclude: str | None) -> bool:
        return super().evictable(candidate, frozenset(), exclude)


class EvictionIgnoresLeasesCache(WithFixedSizeCache):
    """Chooses and commits leased models as eviction victims (the unload waits for them)."""

    policy_class = LeaseBlindPolicy

    def _hold_victim(self, victim: str) -> AbstractContextManager[None]:
        return self.manager.lifecycle(victim)  # waits for the victim's lifecycle

    def _victim_gone(self, victim: str) -> bool:
        return victim not in self.manager or victim in self._book.pins  # a pin drops it

    def _confirm_victim_locked(self, victim: str) -> object | None:
        book = self._book
        if not book.chosen(victim):  # rescued meanwhile: committed all the same
            book.choose(victim, None)
        book.start_unload(victim)  # no lease re-check, no revalidation
        return victim  # any batch token: it chose the victim for no add's ticket


class NonAtomicAcquireCache(WithFixedSizeCache):
    """``acquire`` = ``add_model``, a window, then ``lease``."""

    def between_add_and_lease(self) -> None:
        """The window (a switch point under lockstep; real-thread tests replace it)."""
        lockstep.checkpoint("acquire: between the add and the lease")

    def acquire(
        self,
        model_id: str,
        api_key: str | None = None,
        model_id_alias: str | None = None,
        *,
        pin: bool = False,
        **load_kwargs: Any,
    ) -> AbstractContextManager[Model]:
        @contextmanager
        def acquired() -> Iterator[Model]:
            self.add_model(model_id, api_key, model_id_alias, pin=pin, **load_kwargs)
            self.between_add_and_lease()
            with self.lease(model_id_alias or model_id) as model:
                yield model

        return acquired()


BUG = Bug(
    id="B17",
    title="unload under a running model",
    story=(
        "In a cache of 1 holding X, U acquires X (load and lease), runs inferences and, "
        "still holding it, adds Y; R removes X; T adds Z. R must wait for U's lease "
        "before clear_cache (else I13); an add must skip the leased X and admit over "
        "capacity rather than wait for U's lease, which U, waiting for its own add, "
        "never gives back (I17); and no add may evict X between the load and the lease "
        "of U's acquire (else the acquire fails with ModelNotFound, I15)."
    ),
    scenario=Scenario(
        "B17-unload-under-running-model",
        ("B17",),
        "no unload, eviction or removal comes between an acquire's load and its lease's end",
        [
            ("U", [Op("acquire", "X", uses=2, inside=(Op("add", "Y"),))]),
            ("R", [Op("remove", "X")]),
            ("T", [Op("add", "Z")]),
        ],
        Setup(max_size=1, preload=("X",)),
        needs=frozenset({"leases", "capacity"}),
    ),
    variants=(
        # DPOR (preemption bound 2) reaches it at execution 489 since the cache split
        # changed the order of the core's switch points: past the suite's variant
        # budget of 360, so it is not claimed here (PCT and random find it well within).
        Variant(
            cache_over_manager(manager_cls=NoLeaseDrainManager),
            caught_by=("pct", "random"),
        ),
        # DPOR's default order times the drain out before the others block.
        Variant(
            cache_over_manager(cache_cls=EvictionIgnoresLeasesCache),
            slug="eviction-ignores-leases",
        ),
        Variant(cache_over_manager(cache_cls=NonAtomicAcquireCache), slug="non-atomic-acquire"),
    ),
    breaks=("I3", "I13", "I15", "I17"),
    caught_by=("pct", "random"),
)

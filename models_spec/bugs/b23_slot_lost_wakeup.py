"""B23 lost wake-up of a slot waiter: a failed load gives its slot back without a notify.

Bug path: `WithFixedSizeCache._notify_slot_freed` (one override: it does
nothing, so `_release_slot` wakes nobody). A cold add reserves its
capacity slot before it loads; a second cold add that finds the cache full of
loads in flight waits on the cache's condition for a slot or an eviction to
change. When the first load fails, its slot goes back to the book, but nobody is
told: the waiter sleeps until its timeout although the slot is free (I17 under
the virtual clock; in production the add fails with ``LockTimeout`` after
``queue_lock_timeout`` instead of loading at once). Written by hand as one of ten
"dropped ``notify_all``" mutants of the cache; it slipped past every scenario of
its time, which never had an add wait for the slot of a load that fails.
"""

from __future__ import annotations

from modelmanager import WithFixedSizeCache
from models_spec._harness.catalogue import Bug, Variant
from models_spec.bugs._support import cache_over_manager
from models_spec.scenarios import Op, Scenario, Setup

__all__ = ["BUG", "SilentSlotReleaseCache"]


class SilentSlotReleaseCache(WithFixedSizeCache):
    """The core cache whose released slot wakes nobody."""

    def _notify_slot_freed(self) -> None:
        return None  # the slot went back, and nobody is told


BUG = Bug(
    id="B23",
    title="lost wake-up of a slot waiter",
    story=(
        "A cache of 1. T1 adds X, reserving the only slot, and its constructor fails; "
        "T2 adds Y meanwhile and waits for a slot, the cache being full of X's load. "
        "X's slot is given back without a notify: T2 stays asleep until its timeout "
        "although the slot is free (I17), and fails with LockTimeout where it could "
        "have loaded Y."
    ),
    scenario=Scenario(
        "B23-lost-wakeup-of-a-slot-waiter",
        ("B23",),
        "an add waiting for a slot is woken when a failed load gives its slot back",
        [("T1", [Op("add", "X")]), ("T2", [Op("add", "Y")])],
        Setup(max_size=1, load_failures=(("X", (1,)),)),
        needs=frozenset({"capacity"}),
    ),
    variants=Variant(cache_over_manager(cache_cls=SilentSlotReleaseCache)),
    breaks=("I17",),
    caught_by=("pct", "dpor", "random"),
)

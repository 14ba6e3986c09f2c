"""B24 room taken, admitted over: a joined load takes the room an add made, under "refuse".

Bug path: the room-taken path of the admission, at its two ends: the
choice (`CapacityPolicy.joined`, named by the cache's `policy_class`, reports
no joined load) and the admission over the bound
(`WithFixedSizeCache._admits_over_room_taken` answers yes whatever the
policy), as the core had them before issue 35. Two cold adds of one id share a
slot; the first loads the model, and the second still holds its slot (it
will find the model loaded, a joined hit). A third add chooses that model as
its victim: evicting it makes no room, because the joined add then loads it
again. The add whose room was taken was admitted over the bound (counted in
``pinned_overflow``), whatever ``on_full`` says: under "refuse" and "wait" the
bound is a safety property (a GPU out of memory), and only the two
documented cases may go over it (I11). The core never chooses a model a
joined add holds a slot for: it waits for that add, then decides under its
policy.
"""

from __future__ import annotations

from modelmanager import WithFixedSizeCache
from modelmanager.decorators._cache_policy import CapacityPolicy
from models_spec._harness.catalogue import Bug, Variant
from models_spec.bugs._support import cache_over_manager
from models_spec.scenarios import Op, Scenario, Setup

__all__ = ["BUG", "JoinedBlindCache", "JoinedBlindPolicy"]


class JoinedBlindPolicy(CapacityPolicy):
    """Sees no joined load: a model another add is about to load again is a victim."""

    def joined(self) -> frozenset[str]:
        return frozenset()


class JoinedBlindCache(WithFixedSizeCache):
    """The core cache with `JoinedBlindPolicy`, admitting an add whose room was taken
    over the bound whatever its policy (the admission before issue 35)."""

    policy_class = JoinedBlindPolicy

    def _admits_over_room_taken(self, resolved_id: str) -> bool:
        return True


BUG = Bug(
    id="B24",
    title="room taken, admitted over",
    story=(
        "A cache of 2 with p pinned, on_full='refuse'. T1 (after a refresh of c, a "
        "no-op) and T2 add c at once and share one slot; T2 loads c, T1 still holds its "
        "share. T2 then adds a and evicts c, "
        "which puts T1's load of c back in flight: T1 loads c again, and T2, whose room "
        "was taken, is admitted over the bound: p, c and a loaded under a bound of 2 "
        "although nothing was leased and the policy refuses to go over it (I11)."
    ),
    scenario=Scenario(
        "B24-room-taken-admitted-over",
        ("B24",),
        "under on_full='refuse' no cold add is admitted over the bound",
        [("T1", [Op("refresh", "c"), Op("add", "c")]), ("T2", [Op("add", "c"), Op("add", "a")])],
        Setup(max_size=2, preload=("p",), pins=("p",)),
        needs=frozenset({"capacity"}),
    ),
    variants=Variant(cache_over_manager(cache_cls=JoinedBlindCache, on_full="refuse")),
    breaks=("I11", "I15"),
    caught_by=("pct",),
)

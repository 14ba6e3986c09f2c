"""B3 dispose-after-release: the entry is deleted right after the lock is released.

Bug path: `LifecycleTable.hold`'s exit (in `_lifecycle.RetiringTable`).  A
waiter that already holds a reference to L1 acquires it after the release
while a newcomer creates L2: two constructors at once (I2).
"""

from __future__ import annotations

from models_spec._harness.catalogue import Bug, Variant
from models_spec.bugs._lifecycle import RetiringTable, manager_with
from models_spec.bugs._support import BARE_CAPABILITIES, bare_manager
from models_spec.scenarios import Op, Scenario, Setup

__all__ = ["BUG", "RetireAfterRelease"]


class RetireAfterRelease(RetiringTable):
    """Every outermost holder retires the entry just after releasing its lock."""

    def retire_after_release(self, failed: bool) -> bool:
        return True


BUG = Bug(
    id="B3",
    title="dispose after release is not enough",
    story=(
        "R removes X and deletes X's entry right after releasing L1 (\"dispose after "
        'release"). W, already holding a reference to L1, acquires it; N, finding no '
        "entry, creates L2: W and N construct X concurrently (I2, I9). An old "
        "generation must never stay usable while new callers use a replacement."
    ),
    scenario=Scenario(
        "B3-dispose-after-release",
        ("B3",),
        "R removes (then re-adds) X and drops its lock while W and N add it: "
        "X is never constructed twice at once",
        [
            ("R", [Op("remove", "X"), Op("add", "X")]),
            ("W", [Op("add", "X")]),
            ("N", [Op("add", "X")]),
        ],
        Setup(preload=("X",), lock_timeout=5.0),
    ),
    variants=Variant(
        bare_manager(manager_with(RetireAfterRelease)), capabilities=BARE_CAPABILITIES
    ),
    breaks=("I1", "I2", "I9"),
    caught_by=("pct", "dpor", "random"),
)

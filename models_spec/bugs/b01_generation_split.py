"""B1 remove/add generation split: the holder deletes the id's lock entry while holding it.

Bug path: `LifecycleTable.hold` (the only override, in `_lifecycle.RetiringTable`).
A waiter W that already found generation L1 waits on it while a newcomer N,
finding no entry, creates L2 and constructs; when the remover releases L1, W
constructs too (I2).  The manager subclass only installs the table.
"""

from __future__ import annotations

from models_spec._harness.catalogue import Bug, Variant
from models_spec.bugs._lifecycle import RetiringTable, manager_with
from models_spec.bugs._support import BARE_CAPABILITIES, bare_manager
from models_spec.scenarios import Op, Scenario, Setup

__all__ = ["BUG", "RetireWhileHolding"]


class RetireWhileHolding(RetiringTable):
    """Every outermost holder deletes the entry before releasing the lock (upstream)."""

    def retire_while_holding(self, failed: bool) -> bool:
        return True


BUG = Bug(
    id="B1",
    title="remove/add generation split",
    story=(
        "R holds X's lock L1 and removes X; W already found L1 and waits on it. R "
        "deletes X's lock entry while still holding L1, so N finds no entry, creates L2 "
        "and starts constructing X. R releases L1; W acquires it, sees X absent and "
        "constructs X too: two constructors of X at once (I2), or the first model "
        "overwritten and never torn down (I9)."
    ),
    scenario=Scenario(
        "B1-remove-add-generation-split",
        ("B1",),
        "R removes (then re-adds) X while W and N add it: X is never constructed twice at once",
        [
            ("R", [Op("remove", "X"), Op("add", "X")]),
            ("W", [Op("add", "X")]),
            ("N", [Op("add", "X")]),
        ],
        Setup(preload=("X",)),
    ),
    variants=Variant(
        bare_manager(manager_with(RetireWhileHolding)), capabilities=BARE_CAPABILITIES
    ),
    breaks=("I1", "I2", "I3", "I9", "I13"),
    caught_by=("pct", "dpor", "random"),
)

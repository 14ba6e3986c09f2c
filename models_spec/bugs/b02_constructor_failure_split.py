"""B2 constructor-failure split: a failed holder deletes the entry before releasing.

Bug path: `LifecycleTable.hold`'s error exit (in `_lifecycle.RetiringTable`).
H's constructor raises; its error path retires L1 while W waits on it; N
creates L2 and constructs; W then constructs on L1 (I2).
"""

from __future__ import annotations

from models_spec._harness.catalogue import Bug, Variant
from models_spec.bugs._lifecycle import RetiringTable, manager_with
from models_spec.bugs._support import BARE_CAPABILITIES, bare_manager
from models_spec.scenarios import Op, Scenario, Setup

__all__ = ["BUG", "RetireOnFailure"]


class RetireOnFailure(RetiringTable):
    """The holder retires the entry before releasing only when its block raised."""

    def retire_while_holding(self, failed: bool) -> bool:
        return failed


BUG = Bug(
    id="B2",
    title="constructor-failure split",
    story=(
        "H constructs X holding L1 while W waits on L1. H's constructor raises and its "
        "error path deletes the entry before releasing L1; N finds no entry, creates L2 "
        "and constructs X; W then acquires L1 and constructs X as well (I2, I9)."
    ),
    scenario=Scenario(
        "B2-constructor-failure-split",
        ("B2",),
        "H's constructor of X fails (H retries) while W and N add X: "
        "X is never constructed twice at once",
        [("H", [Op("add", "X"), Op("add", "X")]), ("W", [Op("add", "X")]), ("N", [Op("add", "X")])],
        Setup(load_failures={"X": (1,)}),
    ),
    variants=Variant(bare_manager(manager_with(RetireOnFailure)), capabilities=BARE_CAPABILITIES),
    breaks=("I1", "I2", "I9", "I10"),
    caught_by=("pct", "dpor", "random"),
)

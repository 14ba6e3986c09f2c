"""B18 lost wake-up: a lease give-back wakes one drain waiter (``notify``), not all.

Bug path: `LeaseTable._wake_drainers` (one override, in `NotifyOneLeaseTable`);
`NotifyOneManager` only names a lifecycle table class holding that lease
table class (construction wiring).  Every remove draining leases on a manager waits on
the same condition, whatever id it drains, so one ``notify()`` can wake a
waiter of another id, which finds its own lease still held and waits again,
while the waiter whose lease was just given back stays blocked until its
timeout: under the virtual clock a wait that only its timeout can end
although its condition holds (I17).  The hand-written bug this catalogues
had slipped past every test of its time.
"""

from __future__ import annotations

from typing import Any

from modelmanager import ModelManager
from modelmanager.leases import LeaseTable
from modelmanager.lifecycle import LifecycleTable
from models_spec._harness.catalogue import Bug, Variant
from models_spec.bugs._support import BARE_CAPABILITIES, bare_manager
from models_spec.scenarios import Op, Scenario, Setup

__all__ = ["BUG", "NotifyOneLeaseTable", "NotifyOneManager"]


class NotifyOneLeaseTable(LeaseTable):
    """The core's lease table whose give-back wakes a single drain waiter."""

    def _wake_drainers(self, released: Any) -> None:
        released.notify()  # the core wakes them all: each waits for its own id


class _NotifyOneTable(LifecycleTable):
    _lease_table_class = NotifyOneLeaseTable


class NotifyOneManager(ModelManager):
    """A `ModelManager` whose lifecycle table holds a `NotifyOneLeaseTable`."""

    _lifecycle_table_class = _NotifyOneTable


BUG = Bug(
    id="B18",
    title="lost wake-up of a lease drain",
    story=(
        "U leases X and, inside that block, leases Y (a pipeline of two models). R1 "
        "removes X and R2 removes Y: both wait for their lease on the manager's one "
        "drain condition, R1 first. U gives Y back and notify() wakes the first "
        "waiter, R1: X is still leased, R1 waits again. R2, whose lease is gone, is "
        "left waiting until its timeout (I17: a lost wake-up); in production the "
        "remove waits out its full lock timeout although it could unload at once."
    ),
    scenario=Scenario(
        "B18-lost-wakeup-of-a-lease-drain",
        ("B18",),
        "two removes drain the leases of two ids: each is woken when its lease is given back",
        [
            ("U", [Op("lease", "X", uses=2, inside=(Op("lease", "Y", uses=2),))]),
            ("R1", [Op("remove", "X")]),
            ("R2", [Op("remove", "Y")]),
        ],
        Setup(max_size=2, preload=("X", "Y")),
    ),
    variants=Variant(bare_manager(NotifyOneManager), capabilities=BARE_CAPABILITIES),
    breaks=("I17",),
    caught_by=("pct", "dpor", "random"),
)

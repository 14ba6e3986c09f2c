"""B21 lost statistics updates: a counter is read, then written, without its lock.

Bug path: `Counters.increment` (one override, in `RacyCounters`);
`RacyStatisticsManager` only installs it (construction wiring).  Two loads
finishing at once both read ``loads`` = 0 and both write 1: an increment is
lost and ``statistics()`` no longer counts what happened (I19).  lockstep
switches threads only at synchronisation operations, so the variant marks
the read-modify-write window with a checkpoint on the counter: the
preemption CPython may make between the read and the write of ``+=``.  The
suite watches the counters (``models_spec._harness.watching``), so the two unordered
writes are reported as a data race first, in the first execution that has
both (the counters are declared for lock-free reads, not for lost updates).
"""

from __future__ import annotations

import lockstep
from modelmanager import ModelManager
from modelmanager.statistics import COUNTER_NAMES, Counters
from models_spec._harness.catalogue import Bug, Variant
from models_spec.bugs._support import cache_over_manager
from models_spec.scenarios import Op, Scenario, Setup

__all__ = ["BUG", "RacyCounters", "RacyStatisticsManager"]


class RacyCounters(Counters):
    """`Counters` whose increment is an unlocked read-modify-write."""

    def increment(self, name: str, amount: int = 1) -> None:
        """Read, (be preempted), write: without the lock an increment can be lost."""
        if name not in COUNTER_NAMES:
            raise KeyError(name)
        value = self._values[name]
        lockstep.checkpoint(f"unlocked counter update:{name}", resource=("counter", name))
        self._values[name] = value + amount


class RacyStatisticsManager(ModelManager):
    """A `ModelManager` counting with `RacyCounters`."""

    _counters_class = RacyCounters


BUG = Bug(
    id="B21",
    title="lost statistics updates",
    story=(
        "T1 and T2 load A and B at once. Both finish and count the load: T1 reads "
        "loads = 0, T2 reads loads = 0, both write 1. Two models were constructed, the "
        "statistics say one (I19); a dashboard or a test reading them is misled, and "
        "only a stale recorded schedule once hinted at it."
    ),
    scenario=Scenario(
        "B21-lost-statistics-update",
        ("B21",),
        "two concurrent loads are both counted in the statistics",
        [("T1", [Op("add", "A")]), ("T2", [Op("add", "B")])],
        Setup(max_size=3),
        needs=frozenset({"statistics"}),
    ),
    variants=Variant(cache_over_manager(manager_cls=RacyStatisticsManager)),
    breaks=("I19", "data-race"),
    caught_by=("pct", "dpor", "random"),
)

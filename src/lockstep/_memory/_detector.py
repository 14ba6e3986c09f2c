"""The happens-before data-race detector (FastTrack-style, over watched locations).

For each watched target the detector keeps, per slot, the last write and the reads
since it (one per thread), and, for containers, the last whole-container write,
the whole-container reads, and each thread's latest write and read of anything in
it. An access races with a recorded one when they conflict and the recorded one
does not happen before it (its epoch is above the accessing thread's clock
component for its thread):

* a slot read conflicts with writes of the slot and whole-container writes;
* a slot write conflicts with reads and writes of the slot and with
  whole-container reads and writes (not with writes of *other* keys: each dict
  operation is atomic; DPOR still explores their orders);
* a whole-container read (``len``, iteration) conflicts with every write to the
  container; a whole-container write with every access to it;
* ``move_to_end(k)`` reads k and writes the order (conflicts with whole reads
  and writes and with writes of k).

Because the search stops at the first failure, every recorded write of a slot is
ordered after the previous ones (or a race was reported), so keeping only the
last write is exact (FastTrack's argument); reads between writes are kept per
thread. On a location declared intentionally racy (``__benign_races__``,
``watch(..., racy=...)``) a read racing with a write is not reported; two
unordered writes still are (a lost update is never intended).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import TYPE_CHECKING

from lockstep._memory._clocks import SyncEvent, SyncTracker, VectorClock
from lockstep._memory._locations import WHOLE, Access
from lockstep._memory._report import DataRace, RaceAccess, where_text
from lockstep._memory._where import access_where
from lockstep._trace import StepRecord

if TYPE_CHECKING:
    from lockstep._memory._state import Shadow
    from lockstep._runtime import LogicalThread, Run

__all__ = ["RaceDetector"]


class _Record:
    """One recorded access (what a later conflicting access is compared with)."""

    __slots__ = (
        "access",
        "epoch",
        "position",
        "steps",
        "sync",
        "thread",
        "thread_name",
        "where",
    )

    @property
    def code(self) -> str:
        """file:line of the access."""
        return where_text(self.where)

    def __init__(  # noqa: PLR0917 - one field each, built in one place
        self,
        thread: int,
        thread_name: str,
        epoch: int,
        access: Access,
        where: tuple[str, int],
        steps: Sequence[StepRecord],
        sync: SyncEvent | None,
    ) -> None:
        self.thread = thread
        self.thread_name = thread_name
        self.epoch = epoch
        self.access = access
        self.where = where
        self.steps = steps  # the execution's step log (grows; read only for a report)
        self.position = len(steps)  # steps recorded when the access ran
        self.sync = sync

    def ordered_before(self, clock: VectorClock) -> bool:
        t = self.thread
        return t < len(clock) and self.epoch <= clock[t]

    def _step(self) -> tuple[int | None, bool]:
        """The step that marks this access, and whether it is the access itself."""
        steps = self.steps
        for index in range(self.position - 1, -1, -1):
            step = steps[index]
            if step.thread == self.thread:
                resource = step.op.resource
                own = isinstance(resource, Access) and resource.target == self.access.target
                return step.index, own and index == self.position - 1
        return None, False

    def side(self) -> RaceAccess:
        a = self.access
        step, switch = self._step()
        return RaceAccess(
            thread=self.thread,
            thread_name=self.thread_name,
            mode=a.mode,
            operation=a.op,
            location=a.location_text(),
            code=self.code,
            step=step,
            last_sync=None if self.sync is None else self.sync.describe(),
            switch=switch,
        )


class _Target:
    """The access history of one watched object or container."""

    __slots__ = ("r_all", "r_any", "reads", "seen", "w_all", "w_any", "writes")

    def __init__(self) -> None:
        # (thread, slot, write, reorder) -> the epoch of its last check: the same
        # access again at the same epoch adds nothing (FastTrack's same-epoch fast path).
        self.seen: dict[tuple[int, Hashable, bool, bool], int] = {}
        self.writes: dict[Hashable, _Record] = {}
        self.reads: dict[Hashable, dict[int, _Record]] = {}
        self.w_all: _Record | None = None
        self.r_all: dict[int, _Record] = {}
        self.w_any: dict[int, _Record] = {}
        self.r_any: dict[int, _Record] = {}

    def conflicts(self, access: Access) -> Iterable[_Record | None]:
        """The recorded accesses that conflict with ``access``."""
        slot = access.slot
        whole = slot is WHOLE
        if access.shape == "attr" or not whole:
            if access.write:
                yield self.writes.get(slot)
                yield from self.reads.get(slot, {}).values()
                yield self.w_all
                yield from self.r_all.values()
            else:
                yield self.writes.get(slot)
                yield self.w_all
                if access.reorder:
                    yield from self.r_all.values()
        elif access.write:
            yield from self.w_any.values()
            yield from self.r_any.values()
        else:
            yield from self.w_any.values()

    def record(self, rec: _Record) -> None:
        access = rec.access
        slot = access.slot
        t = rec.thread
        if slot is WHOLE and access.shape != "attr":
            if access.write:
                self.w_all = rec
                self.w_any[t] = rec
                self.r_all = {}
                self.r_any = {}
            else:
                self.r_all[t] = rec
                self.r_any[t] = rec
        elif access.write:
            self.writes[slot] = rec
            self.reads.pop(slot, None)
            self.w_any[t] = rec
        else:
            self.reads.setdefault(slot, {})[t] = rec
            self.r_any[t] = rec
            if access.reorder:
                self.w_any[t] = rec


class RaceDetector:
    """Checks each watched access of one execution against the earlier ones."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.sync = SyncTracker()
        self.checked = 0
        self.benign_hits: dict[str, int] = {}

    def holds_lock(self, lt: LogicalThread) -> bool:
        """Whether ``lt`` holds a Lock or RLock now."""
        self.sync.catch_up(self.run.steps)
        return self.sync.holds_lock(lt.index)

    def check(  # noqa: PLR0917 - the access's fields, passed on the hot path unboxed
        self,
        lt: LogicalThread,
        shadow: Shadow,
        slot: Hashable,
        write: bool,
        op: str,
        reorder: bool,
        access: Access | None,
    ) -> None:
        """Check one access by ``lt`` (already scheduled: it runs right after this).
        ``access`` is the Access when the caller built one (else built here if needed)."""
        run = self.run
        sync = self.sync
        sync.catch_up(run.steps)
        t = lt.index
        clock = sync.clock(t)
        epoch = clock[t]
        target: _Target | None = shadow.races
        if target is None:
            target = shadow.races = _Target()
        key = (t, slot, write, reorder)
        seen = target.seen
        if seen.get(key) == epoch:
            return  # checked already at this epoch: nothing new can race with it
        seen[key] = epoch
        if access is None:
            access = Access(shadow.target, shadow.name, shadow.shape, slot, write, op, reorder)
        where = access_where()
        rec = _Record(t, lt.name, epoch, access, where, run.steps, sync.last_sync.get(t))
        self.checked += 1
        code = rec.code
        for other in target.conflicts(access):
            if other is None or other.thread == t or other.ordered_before(clock):
                continue
            if _intended(shadow, access, rec, other):
                name = access.location_text()
                self.benign_hits[name] = self.benign_hits.get(name, 0) + 1
                continue
            race = DataRace(access.location_text(), other.side(), rec.side())
            run.fail(
                "data-race",
                f"data race on {race.location}: thread {other.thread}:{other.thread_name} "
                f"{other.access.mode}s it ({other.access.op}) at {other.code} and thread "
                f"{t}:{lt.name} {access.mode}s it ({access.op}) at {code} with nothing "
                "ordering the two",
                thread=lt,
                race=race,
            )
            break
        target.record(rec)


def _intended(shadow: Shadow, access: Access, rec: _Record, other: _Record) -> bool:
    """Whether a race on a declared location is the declared kind: a read racing with
    a write (reads of it may see either value). Two unordered writes are still
    reported: a lost update is never intended."""
    if shadow.benign_reason(access.slot if shadow.shape == "attr" else WHOLE) is None:
        return False
    first_writes = other.access.write or other.access.reorder
    second_writes = access.write or access.reorder
    return first_writes != second_writes

"""The happens-before data-race detector (FastTrack-style, over watched locations).

For each watched target the detector keeps, per slot, the last write and the reads
since it (one per thread), and, for containers, the last whole-container write,
the whole-container reads, and each thread's latest write and read of anything in
it. An access races with a recorded one when they conflict and the recorded one
does not happen before it (its epoch is above the accessing thread's clock
component for its thread):

* a slot read conflicts with writes of the slot and whole-container writes;
* a slot write conflicts with reads and writes of the slot and with
  whole-container reads and writes. Two writes of different keys that change the
  container's key order in ways that do not commute (two inserts, an insert and a
  ``move_to_end``, a set's insert and removal; ``lockstep._memory._state.
  changes_order`` says which writes change it) and that nothing orders are kept
  as a pending *order race*, reported when a whole-container access that reads
  the order (iteration, ``popitem``, ``repr``...) comes after both
  (:meth:`RaceDetector.observe`): nothing else can tell the two orders apart;
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

The check runs on every watched access, so it is built to cost little: a recorded
access is a plain tuple (thread, epoch, slot, mode, operation, site, step count,
last synchronisation), its ``file:line`` and its :class:`Access` are made only for
a report, and the vector clocks are read from the scheduler's step rows.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from lockstep._memory._clocks import SyncEvent, SyncTracker, VectorClock
from lockstep._memory._locations import WHOLE, Access
from lockstep._memory._report import DataRace, RaceAccess
from lockstep._memory._uncontrolled import uncontrolled_near
from lockstep._memory._where import USER_CODE, Site, site_of, site_text

if TYPE_CHECKING:
    from lockstep._memory._state import Shadow
    from lockstep._runtime import LogicalThread, Run

__all__ = ["Entered", "RaceDetector"]

_getframe = sys._getframe
_REMOVALS = frozenset({"discard", "remove"})  # a set's removals (lockstep._memory._state)
_TO_FRONT = "move_to_end(last=False)"  # the operation name of a move to the front
# Whole-container operations that do not read the key order (RaceDetector.observe);
# equality reads it only for an OrderedDict.
_ORDER_BLIND = frozenset({"len"})
_ORDER_EQUALITY = frozenset({"==", "!="})

# One recorded access (what a later conflicting access is compared with), a tuple:
# (thread, epoch, slot, write, reorder, op, site, position, thread name), where
# position is the number of steps recorded when the access ran. What only a report
# reads is derived from it then: the step of the thread's last synchronisation
# before the access (the step rows up to position, replayed), the line of the site.
_Record = tuple[int, int, Hashable, bool, bool, str, Site, int, str]
# An access begun inside a method a watched container's class overrides in Python
# (RaceDetector.entered): (thread, shadow, slot, write, op, reorder, epoch, site, position).
Entered = tuple["LogicalThread", "Shadow", Hashable, bool, str, bool, int, Site, int]
# A record ``rec`` of thread ``u = rec[0]`` races with an access by thread ``t`` whose
# vector clock is ``clock`` when ``u != t and (u >= len(clock) or rec[1] > clock[u])``:
# another thread's access that does not happen before it (written out where used:
# this is the hot path).


class _Target:
    """The access history of one watched object or container."""

    __slots__ = (
        "moves",
        "o_back",
        "o_front",
        "o_rem",
        "pending",
        "r_all",
        "r_any",
        "reads",
        "seen",
        "w_all",
        "w_any",
        "writes",
    )

    def __init__(self) -> None:
        # (thread, slot, write, reorder) -> the epoch of its last check: the same
        # access again at the same epoch adds nothing (FastTrack's same-epoch fast path;
        # containers only: for an attribute its records say it). ``whole`` keys a
        # whole-container access of a list or deque by ``2 * thread + write``.
        self.seen: dict[tuple[int, Hashable, bool, bool | str] | int, int] = {}
        self.writes: dict[Hashable, _Record] = {}
        self.reads: dict[Hashable, dict[int, _Record]] = {}
        self.w_all: _Record | None = None
        self.r_all: dict[int, _Record] = {}
        self.w_any: dict[int, _Record] = {}
        self.r_any: dict[int, _Record] = {}
        # Order changes (see ``reordering``), per thread: (its latest, its latest of
        # another slot than that one), by where they move a key: to the back (an
        # insert, ``move_to_end``, a set's add), to the front (``move_to_end(k,
        # last=False)``), or out of a set (its removals: two of them commute).
        self.o_back: dict[int, tuple[_Record, _Record | None]] = {}
        self.o_front: dict[int, tuple[_Record, _Record | None]] = {}
        self.o_rem: dict[int, tuple[_Record, _Record | None]] = {}
        # slot -> (thread, to the front) -> the latest move_to_end of that slot.
        self.moves: dict[Hashable, dict[tuple[int, bool], _Record]] = {}
        # The first two order changes found unordered (the earlier one first): reported
        # when something reads the order after both (RaceDetector.observe).
        self.pending: tuple[_Record, _Record] | None = None

    def reordering(self, slot: Hashable, op: str, t: int, clock: VectorClock) -> list[_Record]:
        """The recorded order changes that do not commute with this one (``op`` of
        ``slot``: an insert, a ``move_to_end`` or a set's add or removal) and do not
        happen before it: their order decides the container's iteration order.

        Two changes of *different* keys conflict when both move a key to the back,
        both to the front, or one adds to a set and the other removes from it (a
        dict's deletions are not order changes: they commute with inserts). Of *one*
        key, two ``move_to_end`` calls conflict when their directions differ (an
        insert and a ``move_to_end`` of one key conflict on the key itself, which
        :meth:`racing` reports). Keeping each thread's latest change and its latest
        of another slot is exact: a thread's epochs grow in program order, so if its
        latest change of another slot happens before this one, all of them do.
        """
        found: list[_Record] = []
        n = len(clock)
        if op in _REMOVALS:
            groups: tuple[dict[int, tuple[_Record, _Record | None]], ...] = (self.o_back,)
        elif op == _TO_FRONT:
            groups = (self.o_front,)
        else:
            groups = (self.o_back, self.o_rem)
        for group in groups:
            for last, other in group.values():
                rec = last if last[2] != slot else other
                if rec is None:
                    continue
                u = rec[0]
                if u != t and (u >= n or rec[1] > clock[u]):
                    found.append(rec)
        if op.startswith("move_to_end"):
            moves = self.moves.get(slot)
            if moves:
                front = op == _TO_FRONT
                for (u, direction), rec in moves.items():
                    if u != t and direction != front and (u >= n or rec[1] > clock[u]):
                        found.append(rec)
        return found

    def record_order(self, rec: _Record) -> None:
        """Keep ``rec``, an order change, as its thread's latest of its kind."""
        op = rec[5]
        if op in _REMOVALS:
            group = self.o_rem
        elif op == _TO_FRONT:
            group = self.o_front
        else:
            group = self.o_back
        t = rec[0]
        previous = group.get(t)
        if previous is None:
            group[t] = (rec, None)
        elif previous[0][2] == rec[2]:
            group[t] = (rec, previous[1])
        else:
            group[t] = (rec, previous[0])
        if op.startswith("move_to_end"):
            moves = self.moves.get(rec[2])
            if moves is None:
                moves = self.moves[rec[2]] = {}
            moves[t, op == _TO_FRONT] = rec

    def racing(  # noqa: PLR0917 - the access's fields, unboxed on the hot path
        self, slot: Hashable, whole: bool, write: bool, reorder: bool, t: int, clock: VectorClock
    ) -> list[_Record]:
        """The recorded accesses that conflict with this one and do not happen before it,
        in the order a report prefers them (usually none: the list is then empty)."""
        found: list[_Record] = []
        n = len(clock)
        if not whole:
            rec = self.writes.get(slot)
            if rec is not None and rec[0] != t and (rec[0] >= n or rec[1] > clock[rec[0]]):
                found.append(rec)
            if write:
                reads = self.reads.get(slot)
                if reads:
                    for rec in reads.values():
                        u = rec[0]
                        if u != t and (u >= n or rec[1] > clock[u]):
                            found.append(rec)
            rec = self.w_all
            if rec is not None and rec[0] != t and (rec[0] >= n or rec[1] > clock[rec[0]]):
                found.append(rec)
            if write or reorder:
                for rec in self.r_all.values():
                    u = rec[0]
                    if u != t and (u >= n or rec[1] > clock[u]):
                        found.append(rec)
        else:
            for rec in self.w_any.values():
                u = rec[0]
                if u != t and (u >= n or rec[1] > clock[u]):
                    found.append(rec)
            if write:
                for rec in self.r_any.values():
                    u = rec[0]
                    if u != t and (u >= n or rec[1] > clock[u]):
                        found.append(rec)
        return found

    def record(self, rec: _Record, slot: Hashable, whole: bool, write: bool, reorder: bool) -> None:
        """Keep ``rec`` (by thread ``rec[0]``) as the latest access of its kind (a
        container's: ``RaceDetector.check`` keeps an instance's attributes itself)."""
        t = rec[0]
        if whole:
            if write:
                self.w_all = rec
                self.w_any[t] = rec
                self.r_all = {}
                self.r_any = {}
            else:
                self.r_all[t] = rec
                self.r_any[t] = rec
        elif write:
            self.writes[slot] = rec
            self.reads.pop(slot, None)
            self.w_any[t] = rec
        else:
            reads = self.reads.get(slot)
            if reads is None:
                self.reads[slot] = {t: rec}
            else:
                reads[t] = rec
            self.r_any[t] = rec
            if reorder:
                self.w_any[t] = rec


class RaceDetector:
    """Checks each watched access of one execution against the earlier ones."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.rows = run._rows  # the scheduler's step rows (one list for the whole run)
        self.sync = SyncTracker()

    def holds_lock(self, lt: LogicalThread) -> bool:
        """Whether ``lt`` holds a Lock or RLock now."""
        rows = self.rows
        if self.sync.cursor != len(rows):
            self.sync.catch_up(rows)
        return self.sync.holds_lock(lt.index)

    # The two methods below are ``check`` for an attribute of a watched instance, written
    # out for it (most watched accesses are attribute reads and writes): called
    # directly by the instance's tracked ``__getattribute__``/``__setattr__``, whose
    # caller made the access.

    def read_attr(self, lt: LogicalThread, shadow: Shadow, name: str) -> None:
        """``check(lt, shadow, name, False, "read", False, 1)``, faster."""
        sync = self.sync
        rows = self.rows
        if sync.cursor != len(rows):
            sync.catch_up(rows)
        t = lt.index
        clock = sync.threads.get(t)
        if clock is None:
            clock = sync.clock(t)
        epoch = clock[t]
        target: _Target | None = shadow.races
        if target is None:
            target = shadow.races = _Target()
        reads = target.reads.get(name)
        if reads is not None:
            last = reads.get(t)
            if last is not None and last[1] == epoch:
                return  # read already at this epoch
        else:
            last = target.writes.get(name)
            if last is not None and last[0] == t and last[1] == epoch:
                # Written by this thread at this epoch and not read since: whatever
                # conflicts with this read conflicts with that write, at the same
                # epoch, and a report names the write first anyway.
                return
        frame = _getframe(2)
        code = frame.f_code
        site = (code, frame.f_lasti) if USER_CODE.get(id(code)) is code else site_of(frame)
        rec = (
            t,
            epoch,
            name,
            False,
            False,
            "read",
            site,
            len(rows),
            lt.name,
        )
        if reads is None:
            target.reads[name] = {t: rec}  # ``last`` is the write already
        else:
            reads[t] = rec
            last = target.writes.get(name)
        if last is not None:
            u = last[0]
            if u != t and (u >= len(clock) or last[1] > clock[u]):
                self._report(lt, shadow, rec, [last])

    def write_attr(self, lt: LogicalThread, shadow: Shadow, name: str) -> None:
        """``check(lt, shadow, name, True, "write", False, 1)``, faster."""
        sync = self.sync
        rows = self.rows
        if sync.cursor != len(rows):
            sync.catch_up(rows)
        t = lt.index
        clock = sync.threads.get(t)
        if clock is None:
            clock = sync.clock(t)
        epoch = clock[t]
        target: _Target | None = shadow.races
        if target is None:
            target = shadow.races = _Target()
        writes = target.writes
        last = writes.get(name)
        if last is not None and last[0] == t and last[1] == epoch:
            return  # written already at this epoch
        frame = _getframe(2)
        code = frame.f_code
        site = (code, frame.f_lasti) if USER_CODE.get(id(code)) is code else site_of(frame)
        rec = (
            t,
            epoch,
            name,
            True,
            False,
            "write",
            site,
            len(rows),
            lt.name,
        )
        writes[name] = rec
        racing = []
        if last is not None:
            u = last[0]
            if u != t and (u >= len(clock) or last[1] > clock[u]):
                racing.append(last)
        reads = target.reads.pop(name, None)
        if reads:
            for r in reads.values():
                u = r[0]
                if u != t and (u >= len(clock) or r[1] > clock[u]):
                    racing.append(r)
        if racing:
            self._report(lt, shadow, rec, racing)

    def whole(self, lt: LogicalThread, shadow: Shadow, write: bool, op: str) -> None:
        """``check(lt, shadow, WHOLE, write, op, False, 2)`` for a list or a deque (where
        every access is to the whole container), faster: called by ``_state.hook_whole``
        from the tracked method, whose caller made the access."""
        sync = self.sync
        rows = self.rows
        if sync.cursor != len(rows):
            sync.catch_up(rows)
        t = lt.index
        clock = sync.threads.get(t)
        if clock is None:
            clock = sync.clock(t)
        epoch = clock[t]
        target: _Target | None = shadow.races
        if target is None:
            target = shadow.races = _Target()
        seen = target.seen
        key = t + t + write  # (thread, write) as one int: no tuple to build
        if seen.get(key) == epoch:
            return
        seen[key] = epoch
        try:
            frame = _getframe(3)  # whole, hook_whole, the tracked method, its caller
        except ValueError:  # called from C at the bottom of a thread's stack
            frame = _getframe(2)
        code = frame.f_code
        site = (code, frame.f_lasti) if USER_CODE.get(id(code)) is code else site_of(frame)
        rec = (t, epoch, WHOLE, write, False, op, site, len(rows), lt.name)
        n = len(clock)
        racing = []
        for r in target.w_any.values():
            u = r[0]
            if u != t and (u >= n or r[1] > clock[u]):
                racing.append(r)
        if write:
            for r in target.r_any.values():
                u = r[0]
                if u != t and (u >= n or r[1] > clock[u]):
                    racing.append(r)
            if racing:
                self._report(lt, shadow, rec, racing)
            target.w_all = rec
            target.w_any[t] = rec
            target.r_all = {}
            target.r_any = {}
        else:
            if racing:
                self._report(lt, shadow, rec, racing)
            target.r_all[t] = rec
            target.r_any[t] = rec

    def check(  # noqa: PLR0917 - the access's fields, passed on the hot path unboxed
        self,
        lt: LogicalThread,
        shadow: Shadow,
        slot: Hashable,
        write: bool,
        op: str,
        reorder: bool,
        depth: int,
    ) -> None:
        """Check one access by ``lt`` (already scheduled: it runs right after this).

        ``depth``: the frames between this call and the code that made the access (1
        when the tracked method calls this directly), so that its site is found cheaply.
        """
        sync = self.sync
        rows = self.rows
        if sync.cursor != len(rows):
            sync.catch_up(rows)
        t = lt.index
        clock = sync.threads.get(t)
        if clock is None:
            clock = sync.clock(t)
        epoch = clock[t]
        target: _Target | None = shadow.races
        if target is None:
            target = shadow.races = _Target()
        if target.pending is not None and slot is WHOLE and op not in _ORDER_BLIND:
            self.observe(lt, shadow, target, clock, op, depth + 1)
        attr = shadow.shape == "attr"
        if attr:
            # The same access again at the same epoch adds nothing (FastTrack's
            # same-epoch fast path), read from the records themselves.
            if write:
                last = target.writes.get(slot)
                if last is not None and last[0] == t and last[1] == epoch:
                    return
            else:
                reads = target.reads.get(slot)
                if reads is not None:
                    last = reads.get(t)
                    if last is not None and last[1] == epoch:
                        return
        else:
            key = (t, slot, write, op if reorder else False)  # a move's direction counts
            seen = target.seen
            if seen.get(key) == epoch:
                return
            seen[key] = epoch
        try:
            frame = _getframe(depth + 1)  # the code that made the access, normally
        except ValueError:  # called from C at the bottom of a thread's stack
            frame = _getframe(depth)
        code = frame.f_code
        if USER_CODE.get(id(code)) is code:
            site: Site = (code, frame.f_lasti)
        else:
            site = site_of(frame)  # lockstep or the standard library: walk down
        rec: _Record = (
            t,
            epoch,
            slot,
            write,
            reorder,
            op,
            site,
            len(rows),
            lt.name,
        )
        if not attr:
            whole = slot is WHOLE
            racing = target.racing(slot, whole, write, reorder, t, clock)
            if reorder and not whole:
                self._order_change(shadow, target, rec, clock)
            if racing:
                self._report(lt, shadow, rec, racing)
            target.record(rec, slot, whole, write, reorder)
            return
        # An attribute (the common case, inlined): its last write, and for a write the
        # reads since; an instance has no whole-container accesses.
        racing = []
        last = target.writes.get(slot)
        if last is not None:
            u = last[0]
            if u != t and (u >= len(clock) or last[1] > clock[u]):
                racing.append(last)
        if write:
            reads = target.reads.pop(slot, None)
            if reads:
                for r in reads.values():
                    u = r[0]
                    if u != t and (u >= len(clock) or r[1] > clock[u]):
                        racing.append(r)
            target.writes[slot] = rec
        else:
            reads = target.reads.get(slot)
            if reads is None:
                target.reads[slot] = {t: rec}
            else:
                reads[t] = rec
        if racing:
            self._report(lt, shadow, rec, racing)

    def entered(  # noqa: PLR0917 - the access's fields, unboxed like check()'s
        self,
        lt: LogicalThread,
        shadow: Shadow,
        slot: Hashable,
        write: bool,
        op: str,
        reorder: bool,
        depth: int,
    ) -> Entered:
        """The start of a container access made somewhere inside a method the container's
        class overrides in Python (its body may synchronise before it touches the
        storage, which lockstep cannot see): what :meth:`check_entered` needs at the
        method's end. ``depth`` as for :meth:`check`."""
        sync = self.sync
        rows = self.rows
        if sync.cursor != len(rows):
            sync.catch_up(rows)
        clock = sync.clock(lt.index)
        try:
            frame = _getframe(depth + 1)
        except ValueError:
            frame = _getframe(depth)
        return (lt, shadow, slot, write, op, reorder, clock[lt.index], site_of(frame), len(rows))

    def check_entered(self, entered: Entered) -> None:
        """Check, when the overriding method returns, the access :meth:`entered` began.

        The access happened somewhere between the two, so it is judged leniently, never
        as a race that its method's own synchronisation rules out: against the others'
        accesses with the clock the thread has *now* (after any lock the method took),
        and kept with the epoch it had at the start (a thread that synchronised with
        any release the method made is ordered after it). A method that synchronises
        nothing has the same clock at both ends: its access is judged exactly.
        """
        lt, shadow, slot, write, op, reorder, epoch, site, position = entered
        sync = self.sync
        rows = self.rows
        if sync.cursor != len(rows):
            sync.catch_up(rows)
        t = lt.index
        clock = sync.clock(t)
        target: _Target | None = shadow.races
        if target is None:
            target = shadow.races = _Target()
        rec: _Record = (t, epoch, slot, write, reorder, op, site, position, lt.name)
        whole = slot is WHOLE
        if target.pending is not None and whole and op not in _ORDER_BLIND:
            self.observe(lt, shadow, target, clock, op, 0, rec)
        key = (t, slot, write, op if reorder else False)
        if target.seen.get(key) == clock[t] == epoch:
            return  # the same access at this epoch, with this clock, was checked already
        racing = target.racing(slot, whole, write, reorder, t, clock)
        if reorder and not whole:
            self._order_change(shadow, target, rec, clock)
        if racing:
            self._report(lt, shadow, rec, racing)
        target.record(rec, slot, whole, write, reorder)

    @staticmethod
    def _order_change(shadow: Shadow, target: _Target, rec: _Record, clock: VectorClock) -> None:
        """Record ``rec``, a change of the container's key order, and keep the first
        earlier change that does not commute with it and is not ordered before it as
        the pending order race (not on a declared container: its writes are switch
        points, so every search explores both orders)."""
        if target.pending is None and shadow.benign is None:
            found = target.reordering(rec[2], rec[5], rec[0], clock)
            if found:
                target.pending = (found[0], rec)
        target.record_order(rec)

    def observe(  # noqa: PLR0917 - the access's fields, passed unboxed
        self,
        lt: LogicalThread,
        shadow: Shadow,
        target: _Target,
        clock: VectorClock,
        op: str,
        depth: int,
        rec: _Record | None = None,
    ) -> None:
        """A whole-container access that reads the key order (iteration, ``popitem``,
        ``repr``, a copy...: everything but ``len``, ``clear`` and a dict's ``==``)
        while two order changes that nothing orders are pending: when both happen
        before it, what it sees depends on which of them ran first, an *order race*.
        (When one does not, the access races with that write, which :meth:`check`
        reports.) ``rec``: the access's record when the caller has it; else it is made
        from the frame ``depth`` levels above this call."""
        pending = target.pending
        assert pending is not None
        n = len(clock)
        t = lt.index
        for w in pending:
            u = w[0]
            if u != t and (u >= n or w[1] > clock[u]):
                return
        if op in _ORDER_EQUALITY and not isinstance(shadow.obj, OrderedDict):
            return  # a dict's or a set's equality does not depend on the order
        if op == "clear":
            target.pending = None  # the order is forgotten before anything read it
            return
        if rec is None:
            try:
                frame = _getframe(depth + 1)
            except ValueError:
                frame = _getframe(depth)
            rec = (t, clock[t], WHOLE, False, False, op, site_of(frame), len(self.rows), lt.name)
        self._report_order(lt, shadow, pending, rec)

    def _report_order(
        self,
        lt: LogicalThread,
        shadow: Shadow,
        pending: tuple[_Record, _Record],
        observer: _Record,
    ) -> None:
        """Fail the run with an order race: ``pending``'s two changes, then ``observer``."""
        first_rec, second_rec = pending
        first, second = _access(shadow, first_rec), _access(shadow, second_rec)
        seen = _access(shadow, observer)
        race = DataRace(
            f"the key order of {shadow.name}",
            _side(self.run, first, first_rec),
            _side(self.run, second, second_rec),
            order=True,
            observed=_side(self.run, seen, observer),
        )
        self.run.fail(
            "data-race",
            f"data race on {race.location}: thread {first_rec[0]}:{first_rec[8]} "
            f"{_order_verb(first_rec)} {first.location_text()} ({first.op}) at "
            f"{race.first.code} and thread {second_rec[0]}:{second_rec[8]} "
            f"{_order_verb(second_rec)} {second.location_text()} ({second.op}) at "
            f"{race.second.code} with nothing ordering the two, and thread "
            f"{observer[0]}:{lt.name} reads the order ({seen.op}) at {race.observed_code()}: "
            "what it sees depends on which of the two ran first",
            thread=lt,
            race=race,
        )

    def _check_explored(self, shadow: Shadow, rec: _Record, other: _Record) -> None:
        """An intended race: if one side is a read left out as a switch point (made
        holding a lock), DPOR never reorders the two, so its verdict must not claim
        the location's orders (``MemoryState.unordered``)."""
        memory = self.run.memory
        if memory is None or not memory.skipped:
            return
        skipped = memory.skipped
        if _was_skipped(skipped, shadow, rec) or _was_skipped(skipped, shadow, other):
            slot = rec[2]
            name = shadow.name if shadow.shape != "attr" else f"{shadow.name}.{slot}"
            memory.unordered.setdefault(
                name,
                "read holding a lock and written by another thread with nothing ordering "
                "the two: DPOR does not reorder that read with that write",
            )

    def _report(
        self, lt: LogicalThread, shadow: Shadow, rec: _Record, racing: list[_Record]
    ) -> None:
        """Fail the run with the first race of ``rec`` with ``racing`` that was not declared."""
        access = _access(shadow, rec)
        for other in racing:
            if _intended(shadow, access, other):
                self._check_explored(shadow, rec, other)
                continue
            first = _access(shadow, other)
            uncontrolled = self._uncontrolled()
            race = DataRace(
                access.location_text(),
                _side(self.run, first, other),
                _side(self.run, access, rec),
                uncontrolled,
            )
            ordering = (
                "with nothing lockstep controls ordering the two (unproven: the thread can "
                f"reach {uncontrolled[0].split(' `', 1)[0]} that lockstep does not control; "
                "patch the module that creates it)"
                if uncontrolled
                else "with nothing ordering the two"
            )
            sides = (
                f"thread {other[0]}:{other[8]} {first.mode}s it ({first.op}) at "
                f"{race.first.code} and thread {rec[0]}:{lt.name} {access.mode}s it "
                f"({access.op}) at {race.second.code}"
            )
            self.run.fail(
                "data-race",
                f"data race on {race.location}: {sides} {ordering}",
                thread=lt,
                race=race,
            )
            return

    def _uncontrolled(self) -> tuple[str, ...]:
        """The real primitives the accessing thread can reach (its stack, read with
        tracking off: nothing read here is an access of the program)."""
        memory = self.run.memory
        if memory is None:
            return uncontrolled_near(_getframe(2))
        busy, memory.busy = memory.busy, True
        try:
            return uncontrolled_near(_getframe(2))
        finally:
            memory.busy = busy


def _order_verb(rec: _Record) -> str:
    """What an order change did, as a verb: inserts, moves (move_to_end), removes."""
    op = rec[5]
    if op.startswith("move_to_end"):
        return "moves"
    return "removes" if op in _REMOVALS else "inserts"


def _was_skipped(
    skipped: set[tuple[int, Hashable, int, int]], shadow: Shadow, rec: _Record
) -> bool:
    return not rec[3] and (id(shadow), rec[2], rec[0], rec[7]) in skipped


def _access(shadow: Shadow, rec: _Record) -> Access:
    """The :class:`Access` a record stands for."""
    return Access(shadow.target, shadow.name, shadow.shape, rec[2], rec[3], rec[5], rec[4])


def _side(run: Run, access: Access, rec: _Record) -> RaceAccess:
    """One side of a race report (its step, whether it was a switch point, its last sync)."""
    thread = rec[0]
    position = rec[7]
    steps: Any = run.steps
    step: int | None = None
    switch = False
    for index in range(position - 1, -1, -1):
        record = steps[index]
        if record.thread == thread:
            resource = record.op.resource
            own = isinstance(resource, Access) and resource.target == access.target
            step, switch = record.index, own and index == position - 1
            break
    sync = _last_sync(run, thread, position)
    return RaceAccess(
        thread=thread,
        thread_name=rec[8],
        mode=access.mode,
        operation=access.op,
        location=access.location_text(),
        code=site_text(rec[6]),
        step=step,
        last_sync=None if sync is None else SyncEvent.of(sync, steps[sync].op).describe(),
        switch=switch,
    )


def _last_sync(run: Run, thread: int, position: int) -> int | None:
    """The step of ``thread``'s last synchronisation among the first ``position`` steps
    (what the tracker said when the access was recorded: the steps replayed)."""
    tracker = SyncTracker()
    tracker.catch_up(run._rows[:position])
    return tracker.last_sync.get(thread)


def _intended(shadow: Shadow, access: Access, other: _Record) -> bool:
    """Whether a race on a declared location is the declared kind: a read racing with
    a write (reads of it may see either value). Two unordered writes are still
    reported: a lost update is never intended."""
    if shadow.benign_reason(access.slot if shadow.shape == "attr" else WHOLE) is None:
        return False
    first_writes = other[3] or other[4]
    second_writes = access.write or access.reorder
    return first_writes != second_writes

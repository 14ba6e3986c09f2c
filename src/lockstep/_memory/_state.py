"""Per-execution memory state: what is watched, and what one watched access does.

A :class:`MemoryState` exists only in an execution that called ``watch`` (it is
created by the first one, so an execution that watches nothing pays nothing).
It keeps, by identity, a :class:`Shadow` for every watched object and
container (with a strong reference, so an id is never reused during the
execution), numbers targets and non-plain keys in order of first use (stable
ids across executions), and owns the race detector.

:func:`hook` is what every tracked method calls before it touches its data. It
is a no-op outside a run, inside an invariant, for objects not watched in the
current execution, and while lockstep itself is computing an access (a key's
``__hash__`` or ``__eq__`` reading watched state must not re-enter). Otherwise
:meth:`MemoryState.access` hands the access to the race detector and decides
whether it is also a switch point (kind "read" or "write", resource an
:class:`~lockstep._memory._locations.Access`):

* with race reporting on (``explore(races=True)``), only accesses to locations
  declared intentionally racy are switch points. This is CHESS's reduction: in an
  execution without a data race every access is ordered by synchronisation with
  the conflicting ones, so preempting at it is equivalent to preempting at the
  synchronisation next to it, and an execution that has a race reports it
  whatever the order the two accesses ran in. Declared locations are not
  reported, so their orders must be explored: their writes, and their reads made
  while the thread holds no lock (the lock-free side of the declared race), stay
  switch points; a read under a lock is ordered with the writes made under it.
* with race reporting off, every access is a switch point, and DPOR treats them
  as dependencies, so the search reaches what a race leads to.

Two exceptions keep traces short without losing an interleaving:

* an access covered by the same thread's previous access *made by the same
  operation* (the same instruction of the same frame, with no step in between:
  ``dict(d)`` reading every key after ``keys()``) is not a new switch point:
  nothing can run inside one operation, and every step that conflicts with it
  conflicts with the covering one. Two operations are two switch points even
  when the first covers the second (``d[k]`` right after ``k in d``: another
  thread can delete ``k`` between them);
* an access made while no other thread is alive is not a switch point (there
  is nothing to choose).

:meth:`MemoryState.close` ends the execution's watching: instances get their
class back, and every shadow is dropped (containers that were replaced by
tracked ones stay tracked objects whose hooks are no-ops from then on).
"""

from __future__ import annotations

import enum
from collections.abc import Hashable
from typing import Any, Literal

from lockstep._memory._classes import QUIET, set_class
from lockstep._memory._detector import Entered, RaceDetector
from lockstep._memory._locations import WHOLE, Access, ObjectKey
from lockstep._memory._where import access_frame, frame_location
from lockstep._runtime import LogicalThread, Run, _tls, current_logical_thread, primitive_id
from lockstep._trace import PrimitiveId

_switch_class = vars(object)["__class__"].__set__  # set_class, minus a call

__all__ = ["MemoryState", "Shadow", "active_run", "hook", "hook_whole", "memory_of"]

Shape = Literal["attr", "keyed", "seq"]
_PLAIN_KEYS = (str, int, float, complex, bytes)
_PLAIN_TYPES = frozenset(_PLAIN_KEYS)  # exactly these types (not subclasses): keys as they are

# Keyed writes that may change a container's key order (see changes_order).
_INSERTS = frozenset({"[]=", "setdefault", "[]", "add"})
_REMOVALS = frozenset({"discard", "remove"})  # a set's removals (a dict's commute with inserts)
_ORDER_OPS = _INSERTS | _REMOVALS


def changes_order(obj: object, key: object, op: str) -> bool:
    """Whether the keyed write ``op`` of ``key`` (about to run) changes ``obj``'s key
    order: it inserts a key that is absent now (a dict's or a set's), or removes a
    present element from a set (a set's iteration order depends on its history of
    insertions and removals). A dict's deletions, and writes of a present key, leave
    the order of the other keys as it is, so they commute with another key's insert.

    The race detector reports two such writes of one container by different threads
    that nothing orders, since iteration then depends on which ran first. ``key``
    must be hashable without reading watched state (the caller ensures it).
    """
    if op not in _ORDER_OPS:
        return False
    try:
        if isinstance(obj, dict):
            present = dict.__contains__(obj, key)
        elif isinstance(obj, set):
            present = set.__contains__(obj, key)
        else:
            return False
    except TypeError:  # unhashable: the operation itself raises
        return False
    return present if op in _REMOVALS else not present


class Shadow:
    """What lockstep knows about one watched object or container in one execution.

    ``obj``: the object (a strong reference). ``target``: its per-run id.
    ``name``: how reports name it (``Manager#1``, ``Manager#1._models``,
    ``dict#2``). ``shape``: "attr" (an instance), "keyed" or "seq" (containers).
    ``benign``: declared intentionally racy: for an instance, attribute name ->
    reason; for a container, the reason for all of it (None: not declared).
    ``restore``: the class to give back at the end of the execution (an instance
    or container whose class was swapped in place), else None.
    """

    __slots__ = ("benign", "name", "obj", "races", "restore", "shape", "target", "tracked_class")

    def __init__(  # noqa: PLR0917 - one field each, built in one place
        self,
        obj: object,
        target: PrimitiveId,
        name: str,
        shape: Shape,
        benign: dict[str, str] | str | None,
        restore: type | None,
        tracked_class: type | None,
    ) -> None:
        self.obj = obj
        self.target = target
        self.name = name
        self.shape: Shape = shape
        self.benign = benign
        self.restore = restore
        self.tracked_class = tracked_class
        self.races: Any = None  # the race detector's history of this target

    def benign_reason(self, slot: Hashable) -> str | None:
        """The declared reason why races on ``slot`` are intended (None if not declared)."""
        benign = self.benign
        if benign is None:
            return None
        if isinstance(benign, str):
            return benign
        if isinstance(slot, str):
            return benign.get(slot)
        return None

    def __repr__(self) -> str:
        return f"<Shadow {self.name} ({self.shape})>"


class MemoryState:
    """The watched objects of one execution and their race detector (internal)."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.shadows: dict[int, Shadow] = {}
        self.replaced: dict[int, tuple[object, object]] = {}  # id(original) -> (original, tracked)
        self.busy = False
        self._numbers: dict[str, int] = {}
        self._object_keys: dict[int, tuple[object, ObjectKey]] = {}
        self._key_numbers: dict[str, int] = {}
        # The last switch point at an access: (step, thread, access, the frame that made
        # it, that frame's instruction offset). The frame is held, so its id is not reused.
        self._last: tuple[int, LogicalThread, Access, Any, int] | None = None
        self.declared: dict[str, str] = {}  # benign_locations() as of close()
        # Reads of declared locations left out as switch points (made holding a lock):
        # (id(shadow), slot, thread, row position), as the race detector records them.
        self.skipped: set[tuple[int, Hashable, int, int]] = set()
        # Declared locations where such a read and a write of another thread were not
        # ordered by any synchronisation: name -> why it matters (see _explored).
        self.unordered: dict[str, str] = {}
        self.detector: RaceDetector | None = RaceDetector(run) if run.races else None
        # What quiet_now() switched for the invariants running now.
        self._quieted: list[tuple[object, type, type]] = []
        #: Writes to watched state in this execution so far (``lowlevel.watched_writes``):
        #: every hook that records a write (or a reordering) counts it first.
        self.writes = 0

    # -- registration -------------------------------------------------------------------

    def new_target(self, kind: str) -> PrimitiveId:
        """The next per-run id of a watched target of ``kind`` (``dict#1``, ``Manager#2``)."""
        number = self._numbers.get(kind, 0) + 1
        self._numbers[kind] = number
        return primitive_id(kind, number)

    def register(
        self,
        obj: object,
        *,
        kind: str,
        shape: Shape,
        name: str | None = None,
        benign: dict[str, str] | str | None = None,
        restore: type | None = None,
        tracked_class: type | None = None,
    ) -> Shadow:
        """Watch ``obj`` for the rest of this execution (idempotent: merges ``benign``)."""
        shadow = self.shadows.get(id(obj))
        if shadow is not None:
            if isinstance(benign, dict) and benign:
                merged = dict(shadow.benign) if isinstance(shadow.benign, dict) else {}
                merged.update(benign)
                shadow.benign = merged
            elif isinstance(benign, str):
                shadow.benign = benign
            return shadow
        target = self.new_target(kind)
        shadow = Shadow(obj, target, name or str(target), shape, benign, restore, tracked_class)
        self.shadows[id(obj)] = shadow
        return shadow

    def benign_locations(self) -> dict[str, str]:
        """Every location declared intentionally racy in this execution: name -> reason."""
        found: dict[str, str] = {}
        for shadow in self.shadows.values():
            if isinstance(shadow.benign, str):
                found[shadow.name] = shadow.benign
            elif shadow.benign:
                for attr, reason in shadow.benign.items():
                    found[f"{shadow.name}.{attr}"] = reason
        return found

    def stable_key(self, key: object) -> Hashable:
        """``key`` itself when it is a plain value, else a per-run numbered stand-in."""
        if isinstance(key, _PLAIN_KEYS) or key is None or isinstance(key, enum.Enum):
            return key
        if type(key) is tuple:
            return tuple(self.stable_key(k) for k in key)
        if type(key) is frozenset:
            return frozenset(self.stable_key(k) for k in key)
        entry = self._object_keys.get(id(key))
        if entry is None:
            kind = type(key).__qualname__
            number = self._key_numbers.get(kind, 0) + 1
            self._key_numbers[kind] = number
            entry = (key, ObjectKey(kind, number))
            self._object_keys[id(key)] = entry
        return entry[1]

    # -- accesses -----------------------------------------------------------------------

    def access(  # noqa: PLR0917 - the access's fields, passed on the hot path unboxed
        self,
        lt: LogicalThread,
        shadow: Shadow,
        write: bool,
        slot: object,
        op: str,
        reorder: bool = False,
        depth: int = 1,
        defer: bool = False,
    ) -> Entered | None:
        """One access by ``lt``: a switch point (unless covered or alone), then the race check.

        ``depth``: the frames between this call and the code that made the access (1
        when the tracked method calls this directly), so its place is found cheaply.
        ``defer``: the access is made somewhere inside a method the container's class
        overrides in Python; the race check is left to :meth:`leave`, called with the
        returned value when that method returns (None: nothing to check).
        """
        if write or reorder:
            self.writes += 1
        shape = shadow.shape
        if shape == "attr":
            stable: Hashable = slot
        elif shape == "seq" or slot is WHOLE:
            stable = WHOLE
        elif type(slot) in _PLAIN_TYPES:
            stable = slot  # a str, int...: hashable, itself
        else:
            stable = self._stable_slot(slot)
        detector = self.detector
        benign = shadow.benign
        if detector is not None and (
            not benign or (shape == "attr" and type(benign) is dict and stable not in benign)
        ):
            # Races are reported and this location is not declared racy: not a switch point.
            # The detector is told whether the access changes the container's key order
            # (``changes_order``; a declared container's changes are switch points,
            # explored, so it needs not know). Inside a method the class overrides in
            # Python the key's presence may change before the storage is reached: assume
            # it does.
            order = reorder
            if write and stable is not WHOLE and op in _ORDER_OPS:
                if defer:
                    order = True
                else:
                    busy, self.busy = self.busy, True  # a key's __eq__ may read watched state
                    try:
                        order = changes_order(shadow.obj, slot, op)
                    finally:
                        self.busy = busy
            if defer:
                return detector.entered(lt, shadow, stable, write, op, order, depth + 1)
            detector.check(lt, shadow, stable, write, op, order, depth + 1)
            return None
        access: Access | None = None
        if detector is None or _explored(self, detector, lt, shadow, stable, write or reorder):
            access = Access(shadow.target, shadow.name, shape, stable, write, op, reorder)
            run = self.run
            last = self._last
            frame = access_frame(depth + 2)
            lasti = -1 if frame is None else frame.f_lasti
            if (
                last is not None
                and last[0] == run.step
                and last[1] is lt
                and frame is not None
                and last[3] is frame
                and last[4] == lasti
                and covers(last[2], access)
            ):
                pass  # one operation (one instruction) made both: nothing can run between
            elif _others_alive(run, lt):
                where = frame_location(frame)
                run.switch(lt, access.mode, access, access.describe(), location=where)
                self._last = (run.step, lt, access, frame, lasti)
        if detector is not None:
            if defer:
                return detector.entered(lt, shadow, stable, write, op, reorder, depth + 1)
            detector.check(lt, shadow, stable, write, op, reorder, depth + 1)
        return None

    def leave(self, entered: Entered | None) -> None:
        """The end of the overriding method an access began in (``access(defer=True)``):
        its race check, unless the execution is failing or being torn down."""
        run = self.run
        detector = self.detector
        if entered is None or detector is None or run.failure_info is not None or run.aborting:
            return
        if self.shadows.get(id(entered[1].obj)) is not entered[1]:
            return  # the execution's watching ended meanwhile
        detector.check_entered(entered)

    def _stable_slot(self, slot: object) -> Hashable:
        """The slot a container key stands for (computed with hooks off: a key's
        ``__hash__``/``__eq__`` may read watched state)."""
        self.busy = True
        try:
            stable = self.stable_key(slot)
            try:
                hash(stable)
            except TypeError:
                stable = WHOLE  # the operation itself will raise TypeError
        finally:
            self.busy = False
        return stable

    def reads_missed(self) -> None:
        """An attribute whose reads were not recorded (none is before its first write
        in an execution, with races reported) is written: run the execution again from
        the start, recording them (``Run.restart``; see ``run_execution``). Not once
        the execution failed or is being torn down: nothing after that is checked."""
        run = self.run
        if run.failure_info is None and not run.aborting:
            run.restart = True

    def quiet_now(self, obj: object) -> None:
        """Switch ``obj``, which an invariant is reading, to a class that tracks nothing
        until the round of invariants ends (:meth:`wake_after_invariants`).

        Invariants record no access (``Run.in_invariant``), but through the tracked
        classes every read still costs a Python call, and copying a tracked dict calls
        one per key: the core's snapshot took 60% longer. Called by the hooks, so an
        object goes quiet at an invariant's first read of it, and objects no invariant
        reads (most of them, most of the time) are never switched.
        """
        if id(obj) not in self.shadows:
            return
        tracked = type(obj)
        quiet = QUIET.get(tracked)
        if quiet is not None:
            _switch_class(obj, quiet)
            self._quieted.append((obj, tracked, quiet))

    def wake_after_invariants(self) -> None:
        """The end of a round of invariants: give what :meth:`quiet_now` switched its
        tracked class back."""
        plan = self._quieted
        if plan:
            self._quieted = []
            self.wake(plan)

    @staticmethod
    def wake(plan: list[tuple[object, type, type]]) -> None:
        """Give the objects :meth:`quiet` switched their tracked classes back."""
        switch = _switch_class
        for obj, tracked, quiet in plan:
            if type(obj) is quiet:
                switch(obj, tracked)

    def close(self) -> None:
        """End of the execution: give swapped instances their class back, drop every shadow
        (what was declared intentionally racy is kept in ``declared``)."""
        self.declared = self.benign_locations()
        for shadow in self.shadows.values():
            restore = shadow.restore
            if restore is not None and type(shadow.obj) is shadow.tracked_class:
                set_class(shadow.obj, restore)
        self.shadows.clear()
        self.replaced.clear()
        self._object_keys.clear()
        self._last = None


def covers(first: Access, second: Access) -> bool:
    """True when every step that conflicts with ``second`` conflicts with ``first``
    (same target; a whole write covers everything, a whole read covers reads, and a
    slot access covers the same slot's reads, or writes too if it writes)."""
    if first.target != second.target:
        return False
    if first.slot is WHOLE and first.shape != "attr":
        return first.write or not (second.write or second.reorder)
    return (
        first.slot == second.slot
        and first.reorder == second.reorder
        and (first.write or not second.write)
    )


def _explored(  # noqa: PLR0917 - the access's fields, passed unboxed
    memory: MemoryState,
    detector: RaceDetector,
    lt: LogicalThread,
    shadow: Shadow,
    slot: Hashable,
    writes: bool,
) -> bool:
    """With races reported: is this access a switch point? Only for a location declared
    intentionally racy, and then for its writes and for reads made holding no lock.

    A read made holding a lock is left out on the assumption that the synchronisation
    orders it with the writes (they take that lock too), so that DPOR, reordering the
    lock steps, reorders the read with them. The race detector checks that assumption
    on what ran: a left-out read and another thread's write that nothing orders put
    the location in ``memory.unordered`` (RaceDetector._report), and the verdict then
    claims no completeness for its orders.
    """
    if shadow.benign is None:
        return False
    if shadow.benign_reason(slot if shadow.shape == "attr" else WHOLE) is None:
        return False
    if writes or not detector.holds_lock(lt):
        return True
    memory.skipped.add((id(shadow), slot, lt.index, len(detector.rows)))
    return False


def _others_alive(run: Run, lt: LogicalThread) -> bool:
    for t in run.threads:  # noqa: SIM110 - a loop, not any(): no generator per access
        if t is not lt and not t.finished:
            return True
    return False


def active_run(obj: object) -> tuple[MemoryState, LogicalThread, Shadow] | None:
    """The memory state, thread and shadow when ``obj`` is watched in the current run."""
    lt = current_logical_thread()
    if lt is None:
        return None
    run = lt.run
    memory: MemoryState | None = run.memory
    if memory is None or memory.busy or run.in_invariant:
        if memory is not None and run.in_invariant:
            memory.quiet_now(obj)
        return None
    shadow = memory.shadows.get(id(obj))
    if shadow is None:
        return None
    return memory, lt, shadow


def hook(obj: object, write: bool, slot: object, op: str, reorder: bool = False) -> None:
    """Record one access to ``obj`` when it is watched in the current run (else nothing).

    Called directly by the tracked method that makes the access (the place of the
    access is found from that)."""
    lt: LogicalThread | None = getattr(_tls, "thread", None)
    if lt is None:
        return
    run = lt.run
    memory: MemoryState | None = run.memory
    if memory is None or memory.busy or run.in_invariant:
        if memory is not None and run.in_invariant:
            memory.quiet_now(obj)
        return
    shadow = memory.shadows.get(id(obj))
    if shadow is None:
        return
    detector = memory.detector
    if detector is not None and not shadow.benign:
        # MemoryState.access for a container access that is not a switch point
        # (inlined: every tracked container method comes here).
        whole = shadow.shape == "seq" or slot is WHOLE
        if whole:
            if write or reorder:
                memory.writes += 1
            detector.check(lt, shadow, WHOLE, write, op, reorder, 2)
            return
        if type(slot) in _PLAIN_TYPES:
            if write:
                memory.writes += 1
                if op in _ORDER_OPS:
                    reorder = changes_order(obj, slot, op)
            elif reorder:
                memory.writes += 1
            detector.check(lt, shadow, slot, write, op, reorder, 2)
            return
    memory.access(lt, shadow, write, slot, op, reorder, 2)


def hook_whole(obj: object, write: bool, op: str) -> None:
    """:func:`hook` for an operation on the whole of ``obj`` (a list's or a deque's),
    called directly by the tracked method that makes it."""
    lt: LogicalThread | None = getattr(_tls, "thread", None)
    if lt is None:
        return
    run = lt.run
    memory: MemoryState | None = run.memory
    if memory is None or memory.busy or run.in_invariant:
        if memory is not None and run.in_invariant:
            memory.quiet_now(obj)
        return
    shadow = memory.shadows.get(id(obj))
    if shadow is None:
        return
    detector = memory.detector
    if detector is not None and not shadow.benign:
        if write:
            memory.writes += 1
        detector.whole(lt, shadow, write, op)
        return
    memory.access(lt, shadow, write, WHOLE, op, False, 2)


def memory_of(run: Run) -> MemoryState:
    """The execution's memory state, created by the first ``watch``."""
    memory: MemoryState | None = run.memory
    if memory is None:
        memory = run.memory = MemoryState(run)
    return memory


def describe_object(obj: Any) -> str:
    """A short description of ``obj`` for error messages (type and a bounded repr)."""
    try:
        text = repr(obj)
    except Exception:  # a broken __repr__ must not hide the real error
        text = object.__repr__(obj)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{text} (type {type(obj).__module__}.{type(obj).__qualname__})"

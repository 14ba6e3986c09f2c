"""Happens-before over the controlled primitives, as vector clocks derived from the steps.

Every synchronisation in a lockstep execution is a step on a controlled primitive,
so happens-before can be computed from the step log alone, lazily: the tracker
reads the steps recorded since it last looked (``catch_up``) whenever the race
detector needs a thread's clock. It reads the scheduler's compact step rows, not
the step records (which an execution builds only when someone looks at it). An
execution that watches nothing never creates one.

The edges (release -> acquire on the same primitive; clocks accumulate, so an
acquire follows *every* earlier release of that primitive):

===================================  ==========================================
release (the thread's clock flows     acquire (flows into the thread), only when
into the primitive)                   the step ran (a fired timeout acquires
                                      nothing)
===================================  ==========================================
``Lock.release``, ``RLock.release``  ``Lock.acquire``, ``RLock.acquire``
``Condition.wait`` (releases the     ``Condition.reacquire``
lock; Condition steps name the lock)
``Semaphore.release`` (and bounded)  ``Semaphore.acquire`` (and bounded)
``Event.set``, ``Event.clear``       ``Event.wait``, ``Event.is_set``
a thread's ``end``                   ``Thread.join``, ``Thread.is_alive``
``Thread.start`` (to the child's     the child's ``start``
first step)
===================================  ==========================================

Queue, Barrier and Timer are built on these (a ``put`` releases the queue's lock
after appending, the ``get`` acquires it before taking), so their edges follow.
``Condition.notify`` needs no edge of its own: the woken thread reacquires the
lock the notifier released. Lock ownership is followed from the steps (who
holds each Lock/RLock, with RLock counts and what a Condition wait saves), so a
non-blocking acquire that fails acquires nothing, and :meth:`SyncTracker.holds_lock`
says whether a thread holds any lock. A semaphore acquire that fails without
blocking still acquires (its count is not followed): it can only hide a race
with code that ran before the semaphore's last release. ``Lock.locked()``,
``sleep`` and checkpoints are not synchronisation.

A thread's own component counts its releases (FastTrack's epochs): an access at
epoch ``c`` of thread ``t`` happens before everything that acquired a release
of ``t`` made at epoch ``>= c``.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import attrs

from lockstep._trace import OpDescriptor, PrimitiveId

__all__ = ["ACQUIRES", "RELEASES", "SyncEvent", "SyncTracker", "VectorClock", "join"]

VectorClock = list[int]
"""A vector clock: component ``t`` is thread t's epoch (threads are indexed from 0)."""

ACQUIRES = frozenset(
    {
        "Lock.acquire",
        "RLock.acquire",
        "Condition.reacquire",
        "Semaphore.acquire",
        "BoundedSemaphore.acquire",
        "Event.wait",
        "Event.is_set",
        "Thread.join",
        "Thread.is_alive",
    }
)
RELEASES = frozenset(
    {
        "Lock.release",
        "RLock.release",
        "Condition.wait",
        "Semaphore.release",
        "BoundedSemaphore.release",
        "Event.set",
        "Event.clear",
        "end",
    }
)


_LOCKING = frozenset(
    {
        "Lock.acquire",
        "RLock.acquire",
        "Condition.reacquire",
        "Lock.release",
        "RLock.release",
        "Condition.wait",
    }
)


_SYNC_KINDS = ACQUIRES | RELEASES | {"Thread.start"}  # the steps that apply() reads

# What catch_up does with a step (SyncTracker._classify): nothing, a plain lock's
# acquire or release (written out), or apply().
_SKIP, _ACQUIRE, _RELEASE, _OTHER = 0, 1, 2, 3
_PLAIN_LOCK = {"Lock.acquire": _ACQUIRE, "Lock.release": _RELEASE}


def join(into: VectorClock, other: Sequence[int]) -> None:
    """``into = into ⊔ other`` (component-wise maximum), growing ``into`` as needed."""
    if len(into) < len(other):
        into.extend([0] * (len(other) - len(into)))
    for t, value in enumerate(other):
        if value > into[t]:  # noqa: PLR1730 - twice as fast as max() on the hot path
            into[t] = value


@attrs.frozen(slots=True)
class SyncEvent:
    """The last synchronisation a thread did before an access (for race reports)."""

    step: int
    kind: str
    label: str
    location: str

    def describe(self) -> str:
        """``Lock.release Lock#2 at cache.py:40 (step 7)``."""
        return f"{self.kind} {self.label} at {self.location} (step {self.step})"

    @classmethod
    def of(cls, step: int, op: OpDescriptor) -> SyncEvent:
        """The synchronisation that step ``step`` (which did ``op``) made."""
        return cls(step, op.kind, op.label, op.location)


class SyncTracker:
    """Vector clocks of the threads and primitives of one execution (see the module doc)."""

    def __init__(self) -> None:
        self.threads: dict[int, VectorClock] = {}
        # Primitives are keyed by a number per distinct resource (their PrimitiveIds
        # hash in Python, which would cost more than the rest of a step).
        self.primitives: dict[int, VectorClock] = {}
        self._numbers: dict[Hashable, int] = {}
        self._by_id: dict[int, tuple[Hashable, int]] = {}
        self.last_sync: dict[int, int] = {}  # thread -> step (SyncEvent.of describes it)
        self._spawned: dict[int, VectorClock] = {}
        self._next_child = 1
        self.cursor = 0  # rows applied so far
        # Lock ownership as the steps show it: lock -> (owner, recursion count); the
        # counts a Condition wait saved, by (thread, lock).
        self._owners: dict[int, tuple[int, int]] = {}
        # thread -> how many locks of _owners it owns (holds_lock runs before most
        # watched reads of a declared location: a count, not a scan of _owners).
        self._held: dict[int, int] = {}
        # lock -> the thread whose clock the lock's clock was copied from at its last
        # release (that thread's clock only grows: its next acquire joins nothing).
        self._copy_of: dict[int, int] = {}
        self._saved: dict[tuple[int, int], int] = {}
        # id(op) -> (op, what catch_up does with it, its lock's number or -1).
        self._ops: dict[int, tuple[OpDescriptor, int, int]] = {}

    def number(self, resource: Hashable) -> int:
        """The number standing for ``resource`` (equal resources get the same one)."""
        entry = self._by_id.get(id(resource))
        if entry is not None and entry[0] is resource:
            return entry[1]
        number = self._numbers.get(resource)
        if number is None:
            number = self._numbers[resource] = len(self._numbers)
        self._by_id[id(resource)] = (resource, number)  # keeps it alive: its id stays its
        return number

    def holds_lock(self, thread: int) -> bool:
        """Whether ``thread`` holds a Lock or RLock (as of the last step applied)."""
        return self._held.get(thread, 0) > 0

    def _set_owner(self, key: int, owner: tuple[int, int]) -> None:
        previous = self._owners.get(key)
        if previous is not None:
            self._held[previous[0]] -= 1
        self._owners[key] = owner
        self._held[owner[0]] = self._held.get(owner[0], 0) + 1

    def _drop_owner(self, key: int) -> tuple[int, int] | None:
        owner = self._owners.pop(key, None)
        if owner is not None:
            self._held[owner[0]] -= 1
        return owner

    def catch_up(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Apply the steps recorded since the last call (``rows``: the run's step rows,
        ``(thread, op, choice, ...)``, see ``Run._rows``).

        Runs before most watched accesses that follow a step, so the common steps
        (``Lock.acquire``/``Lock.release`` of a lock, steps that synchronise nothing) are
        handled here written out, from what each operation was classified as the first
        time it was seen (an operation's descriptor is shared by all its steps).
        """
        end = len(rows)
        index = self.cursor
        if index == end:
            return
        ops = self._ops
        owners = self._owners
        held = self._held
        threads = self.threads
        primitives = self.primitives
        copy_of = self._copy_of
        last_sync = self.last_sync
        while index < end:
            row = rows[index]
            op = row[1]
            entry = ops.get(id(op))
            if entry is None or entry[0] is not op:
                entry = self._classify(op)
            code = entry[1]
            if code == _SKIP:
                index += 1
                continue
            thread = row[0].index
            if code == _ACQUIRE:
                key = entry[2]
                # A timeout fired, or acquire(blocking=False) on a held lock failed: no edge.
                if row[2].kind == "run" and key not in owners:
                    owners[key] = (thread, 1)
                    held[thread] = held.get(thread, 0) + 1
                    vc = threads.get(thread)
                    if vc is None:
                        vc = self._start(thread)
                    released = primitives.get(key)
                    if released is not None and copy_of.get(key) != thread:
                        if len(vc) < len(released):
                            vc.extend([0] * (len(released) - len(vc)))
                        for u, value in enumerate(released):
                            if value > vc[u]:  # noqa: PLR1730 - faster than max()
                                vc[u] = value
                    last_sync[thread] = index
            elif code == _RELEASE:
                key = entry[2]
                owner = owners.pop(key, None) if row[2].kind == "run" else None
                if owner is not None:  # else RuntimeError: release of an unlocked lock
                    held[owner[0]] -= 1
                    vc = threads.get(thread)
                    if vc is None:
                        vc = self._start(thread)
                    if owner[0] == thread:
                        # It joined the lock's clock when it acquired it and held it
                        # since, so its clock covers the lock's: the join is a copy
                        # (FastTrack's rule).
                        primitives[key] = vc[:]
                        copy_of[key] = thread
                    else:  # released by another thread than the one that acquired it
                        released = primitives.get(key)
                        if released is None:
                            primitives[key] = vc[:]
                        else:
                            join(released, vc)
                        copy_of.pop(key, None)
                    vc[thread] += 1
                    last_sync[thread] = index
            else:
                self.apply(index, thread, op, row[2].kind)
            index += 1
        self.cursor = end

    def _classify(self, op: OpDescriptor) -> tuple[OpDescriptor, int, int]:
        """How :meth:`catch_up` handles ``op``'s steps (cached by identity; the entry
        keeps ``op`` alive, so its id is not reused)."""
        kind = op.kind
        resource = op.resource
        key = -1
        if kind not in _SYNC_KINDS:
            code = _SKIP
        elif kind in _PLAIN_LOCK and type(resource) is PrimitiveId:
            code = _PLAIN_LOCK[kind]
            key = self.number(resource)
        else:
            code = _OTHER
        entry = (op, code, key)
        self._ops[id(op)] = entry
        return entry

    def clock(self, thread: int) -> VectorClock:
        """Thread ``thread``'s current vector clock (created at its first step)."""
        vc = self.threads.get(thread)
        if vc is None:
            vc = self._start(thread)
        return vc

    def _start(self, thread: int) -> VectorClock:
        vc = list(self._spawned.pop(thread, ()))
        if len(vc) <= thread:
            vc.extend([0] * (thread + 1 - len(vc)))
        vc[thread] = max(vc[thread], 1)
        self.threads[thread] = vc
        return vc

    def apply(self, index: int, thread: int, op: OpDescriptor, choice: str) -> None:
        """The happens-before effect of step ``index``: ``thread`` did ``op``
        (``choice``: "run", or "timeout" when its timeout fired)."""
        kind = op.kind
        if kind in _LOCKING and not self._lock_step(thread, kind, op, choice):
            return
        vc = self.threads.get(thread)
        if vc is None:
            vc = self._start(thread)
        if kind in ACQUIRES:
            if choice != "run":
                return
            for key in self._numbered(op.resource):
                released = self.primitives.get(key)
                if released is not None:
                    join(vc, released)
            self.last_sync[thread] = index
        elif kind in RELEASES:
            for key in self._numbered(op.resource):
                target = self.primitives.get(key)
                if target is None:
                    self.primitives[key] = list(vc)
                else:
                    join(target, vc)
                self._copy_of.pop(key, None)
            vc[thread] += 1
            self.last_sync[thread] = index
        elif kind == "Thread.start":
            self._spawned[self._next_child] = list(vc)
            self._next_child += 1
            vc[thread] += 1
            self.last_sync[thread] = index

    def _lock_step(self, thread: int, kind: str, op: OpDescriptor, choice: str) -> bool:
        """Follow a Lock/RLock/Condition step's ownership change; False when it
        synchronises nothing (a failed non-blocking acquire, a release of an
        unlocked lock, a timed-out acquire)."""
        if choice != "run":
            return False
        keys = self._numbered(op.resource)
        if len(keys) != 1:
            return True
        key = keys[0]
        owner = self._owners.get(key)
        if kind in ("Lock.acquire", "RLock.acquire"):
            if owner is None:
                self._set_owner(key, (thread, 1))
                return True
            if owner[0] == thread and kind == "RLock.acquire":
                self._set_owner(key, (thread, owner[1] + 1))
                return True
            return False  # acquire(blocking=False) on a held lock: it failed
        if kind == "Condition.reacquire":
            count = self._saved.pop((thread, key), 1)
            self._set_owner(key, (thread, count))
            return True
        if owner is None:
            return False  # RuntimeError: release of an unlocked lock
        holder, count = owner
        if kind == "RLock.release" and count > 1:
            self._set_owner(key, (holder, count - 1))
            return True
        self._drop_owner(key)
        if kind == "Condition.wait":
            self._saved[(thread, key)] = count
        return True

    def _numbered(self, resource: Hashable | None) -> tuple[int, ...]:
        """The numbers of the primitives a step's resource names (a tuple names several)."""
        if resource is None:
            return ()
        if isinstance(resource, tuple):
            return tuple(self.number(r) for r in resource)
        return (self.number(resource),)

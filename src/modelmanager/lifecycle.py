"""The per-id lifecycle table: reservation-counted lock generations.

Every operation that changes whether a model id is loaded (add, remove,
eviction) runs while holding that id's *lifecycle lock*; warm hits and leases
do too unless they can answer under the state lock alone (see the end).
The locks live in a table keyed by resolved id, created on demand so the
table does not grow with every id ever seen. The hard part is deleting an
entry safely: upstream deleted the entry while still holding its lock, or
right after releasing it, and in both cases a thread that had already found
the old lock object (the old *generation*) could wait on it while a newcomer,
finding no entry, created a second generation. Two generations of one id
mean two threads "own" the id at once: two constructors run concurrently
after a remove (B1) or after a failed constructor (B2), and deleting the
entry after release instead of before does not help, because the waiter
already holds a reference to the old lock (B3).

The rule here: a caller first *reserves* the entry under the table's state
lock (creating it if absent and incrementing its reservation count), then
waits on the entry's lock, and only after releasing the lock does it release
its reservation. The entry is retired exactly when the count drops to zero,
checked by identity under the state lock. A waiter therefore always holds a
reservation, so the entry it waits on can never be retired and replaced under
it: there is one generation per id at any time, by construction, on every
path (success, constructor failure, removal, timeout, KeyboardInterrupt),
because reservation release sits in a ``finally``. When nothing is in flight
every count is zero and the table is empty (no leak, B12).

The entry lock is re-entrant per thread, so a decorator that needs a compound
step to be atomic for one id can hold the lifecycle and call inner layers that
take it again. What we give up: one small dict operation under a global state
lock per call (never held while waiting), and per-thread re-entrancy means a
thread must not hand the id's lifecycle to another thread.

The state lock also guards what the warm paths need to answer without taking
an id's lifecycle (see :mod:`modelmanager.manager`): each entry's ``depth``
(whether some thread is inside a :meth:`LifecycleTable.hold` block of the id,
read by :meth:`LifecycleTable.held_locked`) and the lease counts
(:attr:`LifecycleTable.leases`). A lease is counted only under the state lock
while no thread holds the id's lifecycle, so a holder sees a lease count that
can only go down.

Internal extension points (:attr:`LifecycleTable.EXTENSION_POINTS`): the
``_lease_table_class`` the table builds its :attr:`~LifecycleTable.leases`
with; a variant's own ``hold`` may use the entries and reservations
(:attr:`LifecycleTable.EXTENSION_HELPERS`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from types import TracebackType
from typing import ClassVar

from modelmanager.errors import LockTimeout
from modelmanager.leases import LeaseTable
from modelmanager.records import LifecycleEntryInfo

__all__ = ["LifecycleTable"]


class _Entry:
    """One generation of one id's lifecycle. Mutable fields are guarded as noted."""

    __slots__ = ("depth", "generation", "lock", "reservations", "resolved_id")

    def __init__(self, resolved_id: str, generation: int) -> None:
        self.resolved_id = resolved_id
        self.generation = generation
        self.lock = threading.RLock()
        # Guarded by the table's state lock. Invariant: >= 1 while in the table.
        self.reservations = 0
        # Re-entrancy depth of the holding thread: written by the holder under
        # the table's state lock, so warm paths can ask "is it held?" there.
        self.depth = 0


class _Hold:
    """The context manager :meth:`LifecycleTable.hold` returns (one use)."""

    __slots__ = ("_entry", "_resolved_id", "_table", "_timeout")

    def __init__(self, table: LifecycleTable, resolved_id: str, timeout: float) -> None:
        self._table = table
        self._resolved_id = resolved_id
        self._timeout = timeout
        self._entry: _Entry | None = None

    def __enter__(self) -> None:
        if self._entry is not None:
            raise RuntimeError("a lifecycle hold cannot be entered twice")
        table = self._table
        entry = table._reserve(self._resolved_id)
        try:
            if not entry.lock.acquire(True, self._timeout):
                if table._on_timeout is not None:
                    table._on_timeout()
                raise LockTimeout(
                    f"the lifecycle lock of model {self._resolved_id!r}", self._timeout
                )
        except BaseException:
            table._release_reservation(entry)
            raise
        with table._state_lock:
            entry.depth += 1
        self._entry = entry

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        entry = self._entry
        if entry is None:
            return
        _let_go(self._table, entry)


class _Held:
    """What :meth:`LifecycleTable.try_hold` returns: the lock already taken (one use).

    Entering does nothing; exiting gives the lock back, as :class:`_Hold` does.
    """

    __slots__ = ("_entry", "_table")

    def __init__(self, table: LifecycleTable, entry: _Entry) -> None:
        self._table = table
        self._entry: _Entry | None = entry

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        entry, self._entry = self._entry, None
        if entry is not None:
            _let_go(self._table, entry)


def _let_go(table: LifecycleTable, entry: _Entry) -> None:
    """Release a held entry's lock, then its depth and reservation."""
    try:
        entry.lock.release()
    finally:
        # depth and the reservation drop together under the state lock
        # (depth > 0 a moment longer than the lock is held only makes warm
        # paths more cautious).
        with table._state_lock:
            entry.depth -= 1
            entry.reservations -= 1
            if entry.reservations == 0 and table._entries.get(entry.resolved_id) is entry:
                del table._entries[entry.resolved_id]


class LifecycleTable:
    """Per-id re-entrant locks whose entries exist only while reserved.

    Thread-safe. :meth:`hold` is the only way to take an id's lock; it is
    bounded by a timeout and raises :class:`LockTimeout` with nothing changed.
    :attr:`state_lock` guards the entries, :attr:`leases` and whatever the
    owning manager keeps for its warm paths; it is only ever held for short,
    non-blocking steps and never while acquiring another lock.
    """

    # Intended lock-free reads (read by race detectors; see ModelManager).
    __benign_races__: ClassVar[dict[str, str]] = {
        "_entries": (
            "snapshot() and len() read it without the state lock: one atomic dict copy or "
            "len each, for introspection; every change and every decision is made under "
            "the state lock"
        ),
    }

    EXTENSION_POINTS: ClassVar[frozenset[str]] = frozenset({"_lease_table_class"})
    """The private names a subclass (a known-bug variant) may override."""
    EXTENSION_HELPERS: ClassVar[frozenset[str]] = frozenset(
        {"_entries", "_on_timeout", "_release_reservation", "_reserve"}
    )
    """The private names an override may use besides the public API: the entries
    and their reservations (a variant's own ``hold``, e.g. upstream's retiring one)."""

    _lease_table_class: ClassVar[type[LeaseTable]] = LeaseTable

    def __init__(self, on_timeout: Callable[[], None] | None = None) -> None:
        self._state_lock = threading.Lock()
        self.state_lock = self._state_lock
        """The table's state lock (see the class docstring); a plain attribute,
        not a property, because the warm paths read it on every call."""
        self._entries: dict[str, _Entry] = {}
        self._next_generation = 1
        self._on_timeout = on_timeout
        self.leases = self._lease_table_class(self._state_lock)
        """Lease counts, guarded by :attr:`state_lock`."""

    def _reserve(self, resolved_id: str) -> _Entry:
        with self._state_lock:
            entry = self._entries.get(resolved_id)
            if entry is None:
                entry = _Entry(resolved_id, self._next_generation)
                self._next_generation += 1
                self._entries[resolved_id] = entry
            entry.reservations += 1
            return entry

    def _release_reservation(self, entry: _Entry) -> None:
        with self._state_lock:
            entry.reservations -= 1
            # Identity check: only the entry we reserved may be retired.
            if entry.reservations == 0 and self._entries.get(entry.resolved_id) is entry:
                del self._entries[entry.resolved_id]

    def hold(self, resolved_id: str, timeout: float) -> _Hold:
        """Hold ``resolved_id``'s lifecycle lock for the duration of a ``with`` block.

        Re-entrant per thread. Waits at most ``timeout`` seconds (0: try once),
        then raises :class:`LockTimeout`; on every exit path the reservation is
        released and the entry retired if it was the last one.
        """
        return _Hold(self, resolved_id, timeout)

    def try_hold(self, resolved_id: str) -> AbstractContextManager[None] | None:
        """``resolved_id``'s lifecycle lock, taken now if no other thread holds it.

        Returns a context manager whose exit gives it back (use it at once in a
        ``with``), or None, nothing changed, when another thread holds the lock.
        Never waits and never counts a timeout; re-entrant like :meth:`hold`.
        """
        entry = self._reserve(resolved_id)
        try:
            taken = entry.lock.acquire(False)
        except BaseException:
            self._release_reservation(entry)
            raise
        if not taken:
            self._release_reservation(entry)
            return None
        with self._state_lock:
            entry.depth += 1
        return _Held(self, entry)

    def held_locked(self, resolved_id: str) -> bool:
        """Whether some thread is inside a :meth:`hold` block of ``resolved_id``.

        Call with :attr:`state_lock` held; the answer holds until it is released.
        ``ModelManager``'s warm lease take reads the same inline (a subclass
        must not change what it answers).
        """
        entry = self._entries.get(resolved_id)
        return entry is not None and entry.depth > 0

    def snapshot(self) -> dict[str, LifecycleEntryInfo]:
        """The current entries (empty when no operation is in flight).

        Takes no lock: it copies the table in one atomic dict operation, so it
        never blocks and is safe to call from an invariant check at any point
        of another thread's operation (exact at quiescence).
        """
        entries = list(self._entries.items())
        return {
            resolved_id: LifecycleEntryInfo(
                resolved_id=resolved_id,
                generation=entry.generation,
                reservations=entry.reservations,
                held=entry.depth > 0,
            )
            for resolved_id, entry in entries
        }

    def __len__(self) -> int:
        return len(self._entries)  # lock-free, like snapshot()

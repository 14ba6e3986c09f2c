"""The per-id lifecycle table: reservation-counted lock generations.

Every operation that changes whether a model id is loaded (add, remove,
eviction, lease acquisition) runs while holding that id's *lifecycle lock*.
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
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from modelmanager.errors import LockTimeout
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
        # Re-entrancy depth of the holding thread; written only by the holder.
        self.depth = 0


class LifecycleTable:
    """Per-id re-entrant locks whose entries exist only while reserved.

    Thread-safe. :meth:`hold` is the only way to take an id's lock; it is
    bounded by a timeout and raises :class:`LockTimeout` with nothing changed.
    """

    def __init__(self, on_timeout: Callable[[], None] | None = None) -> None:
        self._state_lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}
        self._next_generation = 1
        self._on_timeout = on_timeout

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

    @contextmanager
    def hold(self, resolved_id: str, timeout: float) -> Iterator[None]:
        """Hold ``resolved_id``'s lifecycle lock for the duration of the block.

        Re-entrant per thread. Waits at most ``timeout`` seconds (0: try once),
        then raises :class:`LockTimeout`; on every exit path the reservation is
        released and the entry retired if it was the last one.
        """
        entry = self._reserve(resolved_id)
        try:
            if not entry.lock.acquire(timeout=timeout):
                if self._on_timeout is not None:
                    self._on_timeout()
                raise LockTimeout(f"the lifecycle lock of model {resolved_id!r}", timeout)
            try:
                entry.depth += 1
                yield
            finally:
                entry.depth -= 1
                entry.lock.release()
        finally:
            self._release_reservation(entry)

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

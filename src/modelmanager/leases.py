"""Lease counts per resolved id, and the bounded wait for them to drain.

A lease says "this model is in use; do not unload it". The counts live in the
innermost manager's lifecycle table and are guarded by the table's *state
lock* (passed in as ``lock``), the same lock that guards the table's entries
and the manager's registration marks. One lock for all three is what lets a
lease be taken on the warm path without the id's lifecycle lock: under that
one lock the manager checks "registered, not being unloaded, and nobody holds
the id's lifecycle" and counts the lease, and a removal (which holds the
lifecycle) therefore sees a count that can only go down.

Methods ending in ``_locked`` must be called with ``lock`` held; the others
take it. :meth:`LeaseTable.give_back` wakes a drain waiter only if one waits.

Internal extension point (:attr:`LeaseTable.EXTENSION_POINTS`):
``_wake_drainers(released)`` — how a give-back that freed an id wakes the
drain waiters (all of them).
"""

from __future__ import annotations

import threading
from typing import ClassVar

__all__ = ["LeaseTable"]


class LeaseTable:
    """Lease counters with a drain wait. Ids at zero are not stored.

    Thread-safe: every change happens under ``lock`` (a new Lock if none is
    given); reads are lock-free atomic copies.
    """

    __slots__ = ("_counts", "_drain_waiters", "_lock", "_released")

    # Intended lock-free reads (read by race detectors; see ModelManager).
    __benign_races__: ClassVar[dict[str, str]] = {
        "_counts": (
            "count() and counts() read it without the lock: one atomic dict get or copy "
            "each; every change happens under the lock, and callers that act on a count "
            "(drain waits) read it under the lock"
        ),
    }

    EXTENSION_POINTS: ClassVar[frozenset[str]] = frozenset({"_wake_drainers"})
    """The private names a subclass (a known-bug variant) may override."""
    EXTENSION_HELPERS: ClassVar[frozenset[str]] = frozenset()
    """The private names an override may use besides the public API: none."""

    def __init__(self, lock: threading.Lock | None = None) -> None:
        self._lock = lock if lock is not None else threading.Lock()
        self._released = threading.Condition(self._lock)
        self._counts: dict[str, int] = {}
        # Guarded by _lock: threads inside wait_until_free, so that give_back
        # notifies only when someone waits (the warm path never does).
        self._drain_waiters = 0

    def take_locked(self, resolved_id: str) -> None:
        """Add one lease on ``resolved_id`` (``lock`` held).

        ``ModelManager``'s warm lease take writes this same update inline (one
        frame less on every request), so a subclass must not change what it
        does: the table's extension point is ``_wake_drainers`` only.
        """
        counts = self._counts
        counts[resolved_id] = counts.get(resolved_id, 0) + 1

    def take(self, resolved_id: str) -> None:
        """Add one lease on ``resolved_id``."""
        with self._lock:
            self.take_locked(resolved_id)

    def give_back(self, resolved_id: str) -> None:
        """Drop one lease on ``resolved_id``; wake drain waiters if any wait.

        Raises KeyError if ``resolved_id`` has no lease (nothing changed).
        """
        lock = self._lock
        lock.acquire()  # not ``with``: cheaper on this warm path (CPython 3.11)
        try:
            counts = self._counts
            remaining = counts[resolved_id] - 1
            if remaining:
                counts[resolved_id] = remaining
            else:
                del counts[resolved_id]
                if self._drain_waiters:
                    self._wake_drainers(self._released)
        finally:
            lock.release()

    def _wake_drainers(self, released: threading.Condition) -> None:
        """Wake the drain waiters after an id's last lease went (``lock`` held): all of
        them, since each waits for its own id."""
        released.notify_all()

    # Reads take no lock: each is one atomic dict operation, so they never
    # block (safe from invariant checks at any point of another operation).

    def count(self, resolved_id: str) -> int:
        """Current leases on ``resolved_id`` (lock-free)."""
        return self._counts.get(resolved_id, 0)

    def counts(self) -> dict[str, int]:
        """Ids with at least one lease, and their counts (lock-free copy)."""
        return dict(self._counts)

    def wait_until_free(self, resolved_id: str, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for ``resolved_id`` to have no lease.

        Returns whether it is free. Changes nothing either way.
        """
        with self._lock:
            if resolved_id not in self._counts:
                return True
            self._drain_waiters += 1
            try:
                return self._released.wait_for(
                    lambda: resolved_id not in self._counts, timeout=timeout
                )
            finally:
                self._drain_waiters -= 1

"""Lease counts per resolved id, and the bounded wait for them to drain.

A lease says "this model is in use; do not unload it". The count lives on the
innermost manager. Leases are *taken* only while holding the id's lifecycle
lock (so a removal holding that lock sees a stable count that can only go
down), and *released* without it. :meth:`LeaseTable.wait_until_free` is how a
removal drains them: a Condition wait bounded by a timeout.
"""

from __future__ import annotations

import threading

__all__ = ["LeaseTable"]


class LeaseTable:
    """Thread-safe lease counters with a drain wait. Ids at zero are not stored."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._released = threading.Condition(self._lock)
        self._counts: dict[str, int] = {}

    def take(self, resolved_id: str) -> None:
        """Add one lease on ``resolved_id`` (caller holds the id's lifecycle)."""
        with self._lock:
            self._counts[resolved_id] = self._counts.get(resolved_id, 0) + 1

    def give_back(self, resolved_id: str) -> None:
        """Drop one lease on ``resolved_id`` and wake drain waiters."""
        with self._lock:
            remaining = self._counts[resolved_id] - 1
            if remaining:
                self._counts[resolved_id] = remaining
            else:
                del self._counts[resolved_id]
            self._released.notify_all()

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
            return self._released.wait_for(
                lambda: resolved_id not in self._counts, timeout=timeout
            )

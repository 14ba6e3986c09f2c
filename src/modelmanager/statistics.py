"""Counters of what a manager stack did, and their frozen snapshot.

Each layer owns a :class:`Counters` (thread-safe) for the events it causes;
``statistics()`` on a stack returns one :class:`ManagerStatistics`, the sum of
the layers' counters (a decorator adds its own to its inner layer's).
"""

from __future__ import annotations

import threading
from typing import ClassVar

import attrs

__all__ = ["COUNTER_NAMES", "Counters", "ManagerStatistics"]


@attrs.frozen
class ManagerStatistics:
    """A snapshot of a stack's counters.

    * ``loads`` / ``load_failures``: constructors that returned / raised.
    * ``hits``: ``add_model`` calls that found the model already loaded.
    * ``removals``: models unloaded (explicit removes and evictions).
    * ``removal_failures``: removals whose ``clear_cache`` raised.
    * ``evictions_capacity`` / ``evictions_memory`` / ``evictions_restore``:
      evictions by cause (each is also counted in ``removals``): to admit a
      cold add, for memory pressure, and to bring the cache back within its
      bound after a lease was given back, a model unpinned or a load
      committed; ``eviction_failures``: evictions that raised (the add that
      needed them failed).
    * ``lock_timeouts``: bounded waits that ran out (per-id locks, lease
      drains, the LRU lock, admission waits).
    * ``pinned_overflow``: cold adds admitted over the bound (``max_size`` or
      ``max_weight``) because every registered model was pinned or leased, or
      (rarely, with weights) because the room an add's victims made was taken
      meanwhile by a load heavier than its estimate. Under ``on_full`` "wait"
      and "refuse" only the two documented cases count: an add whose thread
      holds a lease through the cache ("wait"), and a model heavier than
      ``max_weight`` alone.
    * ``full_waits``: cold adds that waited for a lease or pin to end (a full
      cache with ``on_full="wait"``); ``full_refusals``: cold adds refused with
      ``CacheFull`` (``on_full="refuse"``).
    * ``restoration_failures``: attempts to bring the cache back within its
      bound that stopped early (an unload failed or a wait timed out); the
      models stay loaded.
    * ``memory_probe_errors``: probe calls that raised (treated as no pressure).
    * ``lifecycle_entries``: entries in the lifecycle table at snapshot time
      (0 whenever no operation is in flight).
    """

    loads: int = 0
    load_failures: int = 0
    hits: int = 0
    removals: int = 0
    removal_failures: int = 0
    evictions_capacity: int = 0
    evictions_memory: int = 0
    evictions_restore: int = 0
    eviction_failures: int = 0
    lock_timeouts: int = 0
    pinned_overflow: int = 0
    full_waits: int = 0
    full_refusals: int = 0
    restoration_failures: int = 0
    memory_probe_errors: int = 0
    lifecycle_entries: int = 0

    @property
    def evictions(self) -> int:
        """All evictions, whatever the cause."""
        return self.evictions_capacity + self.evictions_memory + self.evictions_restore

    def __add__(self, other: ManagerStatistics) -> ManagerStatistics:
        """Field-wise sum (used to merge a decorator's counters into its inner's)."""
        return ManagerStatistics(
            **{name: getattr(self, name) + getattr(other, name) for name in _FIELD_NAMES}
        )


_FIELD_NAMES: tuple[str, ...] = tuple(field.name for field in attrs.fields(ManagerStatistics))

COUNTER_NAMES: frozenset[str] = frozenset(
    field.name for field in attrs.fields(ManagerStatistics) if field.name != "lifecycle_entries"
)


class Counters:
    """Thread-safe event counters; names are the fields of :class:`ManagerStatistics`."""

    # Intended lock-free reads (read by race detectors; see ModelManager).
    __benign_races__: ClassVar[dict[str, str]] = {
        "_values": (
            "snapshot() copies it without the lock: one atomic dict copy; every increment "
            "happens under the lock, so each counter read is a value it really had"
        ),
    }

    EXTENSION_POINTS: ClassVar[frozenset[str]] = frozenset()
    """The private names a subclass may override: none (override :meth:`increment`)."""
    EXTENSION_HELPERS: ClassVar[frozenset[str]] = frozenset({"_values"})
    """What an override may use besides the public API: the counters' dict."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[str, int] = dict.fromkeys(sorted(COUNTER_NAMES), 0)

    def increment(self, name: str, amount: int = 1) -> None:
        """Add ``amount`` to counter ``name`` (a :data:`COUNTER_NAMES` member)."""
        if name not in COUNTER_NAMES:
            raise KeyError(name)
        with self._lock:
            self._values[name] += amount

    def snapshot(self, lifecycle_entries: int = 0, **extra: int) -> ManagerStatistics:
        """The counters as a frozen record (lock-free: one atomic dict copy).

        ``extra`` adds counts kept elsewhere (e.g. a manager's warm hits, kept
        under its state lock so the warm path takes one lock, not two).
        """
        values = self._values.copy()
        for name, amount in extra.items():
            if name not in COUNTER_NAMES:
                raise KeyError(name)
            values[name] += amount
        return ManagerStatistics(lifecycle_entries=lifecycle_entries, **values)

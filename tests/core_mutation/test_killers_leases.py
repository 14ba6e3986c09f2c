"""Killers for mutants of `modelmanager.leases` (docs/mutation.md).

Sequential and deterministic: the lock discipline is checked by a dict that
refuses changes made without the table's lock, and the "notify only when
someone waits" contract by a condition that counts its notifications.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from modelmanager.leases import LeaseTable


class _GuardedCounts(dict[str, int]):
    """The lease counts, refusing any change made while ``lock`` is free."""

    def __init__(self, lock: threading.Lock) -> None:
        super().__init__()
        self._lock = lock

    def __setitem__(self, key: str, value: int) -> None:
        assert self._lock.locked(), f"counts[{key!r}] changed without the table's lock"
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        assert self._lock.locked(), f"counts[{key!r}] deleted without the table's lock"
        super().__delitem__(key)


class _CountingCondition(threading.Condition):
    """A condition that counts ``notify_all`` calls; ``wait_for`` may be made to raise."""

    def __init__(self, lock: threading.Lock) -> None:
        super().__init__(lock)
        self.notified = 0
        self.interrupt: BaseException | None = None

    def notify_all(self) -> None:
        self.notified += 1
        super().notify_all()

    def wait_for(self, predicate: Callable[[], Any], timeout: float | None = None) -> Any:
        if self.interrupt is not None:
            raise self.interrupt
        return super().wait_for(predicate, timeout)


def _table() -> tuple[LeaseTable, threading.Lock, _CountingCondition]:
    lock = threading.Lock()
    table = LeaseTable(lock)
    table._counts = _GuardedCounts(lock)  # type: ignore[assignment]
    condition = _CountingCondition(lock)
    table._released = condition
    return table, lock, condition


def test_take_and_give_back_change_the_counts_under_the_lock() -> None:
    """Every change of the counts happens under the table's lock (class doc).

    Kills ``take`` run without the lock or with its body moved past the release.
    """
    table, lock, _ = _table()
    table.take("a")
    table.take("a")
    assert table.counts() == {"a": 2}
    table.give_back("a")
    table.give_back("a")
    assert table.counts() == {}
    assert not lock.locked()


def test_give_back_without_a_lease_raises_and_frees_the_lock() -> None:
    """``give_back`` of an id with no lease raises KeyError, changes nothing, keeps the lock free.

    Kills the give-back with its ``try/finally`` dropped (the lock stays held
    after the KeyError and every later lease operation would block).
    """
    table, lock, _ = _table()
    table.take("a")
    with pytest.raises(KeyError):
        table.give_back("b")
    assert not lock.locked()
    assert table.counts() == {"a": 1}


def test_give_back_notifies_only_while_a_drain_waits() -> None:
    """After a drain wait ended, a give-back wakes nobody (module doc: only if one waits).

    A wait with timeout 0 on a leased id ends at once (not free); the waiter
    count must be back at zero, so the later give-back does not notify.
    Kills a waiter count that is decremented on entry, incremented by more
    than one, or initialised nonzero.
    """
    table, _, condition = _table()
    table.take("a")
    assert table.wait_until_free("a", 0) is False
    assert table.wait_until_free("b", 0) is True  # no lease: no wait, no count
    table.give_back("a")
    assert condition.notified == 0
    assert table.wait_until_free("a", 0) is True


def test_an_interrupted_drain_wait_is_no_longer_counted() -> None:
    """A drain wait that raises (KeyboardInterrupt, say) stops counting as a waiter.

    Kills ``wait_until_free`` with its ``try/finally`` dropped or the
    decrement changed: the next give-back would notify a waiter that left.
    """
    table, _, condition = _table()
    table.take("a")
    condition.interrupt = KeyboardInterrupt()
    with pytest.raises(KeyboardInterrupt):
        table.wait_until_free("a", 1.0)
    condition.interrupt = None
    table.give_back("a")
    assert condition.notified == 0
    assert table.counts() == {}

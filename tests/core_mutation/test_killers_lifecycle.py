"""Killers for mutants of `modelmanager.lifecycle` (docs/mutation.md).

Deterministic and single-threaded: the entry lock is replaced by one whose
acquire reports what the table says at that moment and then raises, and the
table's entries by a dict that refuses changes made without the state lock.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest

import modelmanager.lifecycle as lifecycle_module
from modelmanager.lifecycle import LifecycleTable


class _GuardedEntries(dict[str, Any]):
    """The table's entries, refusing any change made while the state lock is free."""

    def __init__(self, lock: threading.Lock) -> None:
        super().__init__()
        self._lock = lock

    def __setitem__(self, key: str, value: Any) -> None:
        assert self._lock.locked(), f"entry {key!r} added without the state lock"
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        assert self._lock.locked(), f"entry {key!r} retired without the state lock"
        super().__delitem__(key)


def test_an_interrupted_lock_wait_is_reserved_not_held_and_retires_its_entry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While a thread waits for an id's lock its entry is reserved, not held; an
    interrupted wait (KeyboardInterrupt) retires the entry under the state lock.

    Kills ``held_locked`` reporting a merely reserved entry (``depth >= 0``),
    ``snapshot`` doing the same, and ``_release_reservation`` changing the
    table without the state lock.
    """
    table = LifecycleTable()
    table._entries = _GuardedEntries(table.state_lock)
    seen: list[Any] = []

    class InterruptedLock:
        def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
            with table.state_lock:
                seen.append(table.held_locked("a"))
            seen.append(table.snapshot()["a"])
            raise KeyboardInterrupt

        def release(self) -> None:
            raise AssertionError("released a lock that was never acquired")

    monkeypatch.setattr(lifecycle_module, "threading", SimpleNamespace(RLock=InterruptedLock))
    with pytest.raises(KeyboardInterrupt), table.hold("a", 1.0):
        pass
    held, info = seen
    assert held is False
    assert (info.reservations, info.held) == (1, False)
    assert len(table) == 0
    assert table.snapshot() == {}


def test_reservations_and_lease_counts_change_under_the_state_lock() -> None:
    """Entries are created, and lease counts changed, under the table's one state lock.

    Kills ``_reserve`` without the state lock and a lease table given a lock
    of its own (a lease count and "held" would then be read under different
    locks).
    """
    table = LifecycleTable()
    lock = table.state_lock
    table._entries = _GuardedEntries(lock)
    table.leases._counts = _GuardedLeaseCounts(lock)  # type: ignore[assignment]
    with table.hold("a", 1.0):
        assert len(table) == 1
    table.leases.take("a")
    table.leases.give_back("a")
    assert table.leases.counts() == {}
    assert table.snapshot() == {}


class _GuardedLeaseCounts(dict[str, int]):
    """Lease counts refusing any change made while the state lock is free."""

    def __init__(self, lock: threading.Lock) -> None:
        super().__init__()
        self._lock = lock

    def __setitem__(self, key: str, value: int) -> None:
        assert self._lock.locked(), f"lease count of {key!r} changed without the state lock"
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        assert self._lock.locked(), f"lease count of {key!r} dropped without the state lock"
        super().__delitem__(key)


def test_an_entry_kept_by_a_waiter_is_not_held_once_its_holder_left() -> None:
    """After the holder leaves, an entry kept by another reservation reports not held.

    (The waiter's reservation is taken directly, as a thread waiting for the
    lock would hold it.) Kills a depth that is not back at zero after a hold:
    warm paths would then refuse the id, and ``snapshot`` would report a
    holder that is gone.
    """
    table = LifecycleTable()
    waiter = table._reserve("a")
    with table.hold("a", 1.0), table.hold("a", 1.0):  # re-entrant
        pass
    with table.state_lock:
        assert not table.held_locked("a")
    assert table.snapshot()["a"].held is False
    assert table.snapshot()["a"].reservations == 1
    table._release_reservation(waiter)
    assert table.snapshot() == {}


def test_a_hold_cannot_be_entered_twice() -> None:
    """One ``hold()`` object is one use: entering it again raises RuntimeError saying so."""
    table = LifecycleTable()
    hold = table.hold("a", 1.0)
    with hold, pytest.raises(RuntimeError, match="entered twice"), hold:
        pass
    assert table.snapshot() == {}


def test_a_failing_release_still_retires_the_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    """If releasing the id's lock raises, the hold still drops its depth and reservation.

    Kills ``_Hold.__exit__`` without its ``try/finally``: the entry would
    stay reserved and held for good.
    """
    table = LifecycleTable()

    class FailingRelease:
        def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
            return True

        def release(self) -> None:
            raise RuntimeError("release failed")

    monkeypatch.setattr(lifecycle_module, "threading", SimpleNamespace(RLock=FailingRelease))
    with pytest.raises(RuntimeError, match="release failed"), table.hold("a", 1.0):
        pass
    assert table.snapshot() == {}


class _FakeRLock:
    """A lifecycle lock whose non-blocking acquire answers ``answer`` (or raises it)."""

    answer: bool | BaseException = False
    calls: ClassVar[list[str]] = []

    def acquire(self, blocking: Any = True, timeout: float = -1) -> bool:
        _FakeRLock.calls.append("blocking" if blocking else "non-blocking")
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer

    def release(self) -> None:
        _FakeRLock.calls.append("release")


@pytest.mark.parametrize("answer", [False, KeyboardInterrupt()], ids=["busy", "interrupted"])
def test_try_hold_never_waits_and_changes_nothing_when_it_cannot_take_the_lock(
    monkeypatch: pytest.MonkeyPatch, answer: bool | BaseException
) -> None:
    """``try_hold`` asks the lock without blocking; busy or interrupted, the entry goes.

    Kills ``try_hold`` acquiring with ``blocking=True`` (it would wait for
    another thread's operation), and releasing anything but its own
    reservation when the lock is busy or the acquire raises.
    """
    table = LifecycleTable()
    monkeypatch.setattr(_FakeRLock, "answer", answer)
    monkeypatch.setattr(_FakeRLock, "calls", [])
    monkeypatch.setattr(lifecycle_module, "threading", SimpleNamespace(RLock=_FakeRLock))
    if isinstance(answer, BaseException):
        with pytest.raises(KeyboardInterrupt):
            table.try_hold("a")
    else:
        assert table.try_hold("a") is None
    assert _FakeRLock.calls == ["non-blocking"]
    assert table.snapshot() == {}


class _GuardedEntry(lifecycle_module._Entry):
    """A table entry whose depth and reservations change only under ``state_lock``."""

    __slots__ = ()
    state_lock: threading.Lock

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("depth", "reservations"):
            assert self.state_lock.locked(), f"{name} of {self.resolved_id!r} changed unlocked"
        super().__setattr__(name, value)


def test_try_hold_counts_its_depth_under_the_state_lock_and_gives_it_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A lifecycle taken with ``try_hold`` is held (depth one more, under the state
    lock) until its context exits, also inside a ``hold`` of the same thread;
    afterwards an entry kept by a waiter's reservation is not held.

    Kills ``try_hold`` changing the depth without the state lock, setting it
    to 1 or changing it by anything but +1.
    """
    table = LifecycleTable()
    monkeypatch.setattr(_GuardedEntry, "state_lock", table.state_lock, raising=False)
    monkeypatch.setattr(lifecycle_module, "_Entry", _GuardedEntry)
    waiter = table._reserve("a")  # keeps the entry when the holders leave
    with table.hold("a", 1.0):
        held = table.try_hold("a")  # re-entrant
        assert held is not None
        with held:
            assert table.snapshot()["a"].reservations == 3
        with table.state_lock:
            assert table.held_locked("a")  # the outer hold still holds it
    with table.state_lock:
        assert not table.held_locked("a")
    alone = table.try_hold("a")
    assert alone is not None
    with alone, table.state_lock:
        assert table.held_locked("a")
    with table.state_lock:
        assert not table.held_locked("a")
    assert table.snapshot()["a"].reservations == 1
    table._release_reservation(waiter)
    assert table.snapshot() == {}

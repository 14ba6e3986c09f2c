"""The lifecycle table: reservations, generations, re-entrancy, timeouts."""

from __future__ import annotations

import threading

import pytest

from modelmanager import LifecycleEntryInfo, LockTimeout
from modelmanager.lifecycle import LifecycleTable

from .helpers import join, run_in_thread


def test_entry_exists_only_while_held() -> None:
    """An entry appears on hold and is retired when the last reservation goes (I9)."""
    table = LifecycleTable()
    assert table.snapshot() == {}
    with table.hold("a", 1.0):
        assert table.snapshot() == {
            "a": LifecycleEntryInfo(resolved_id="a", generation=1, reservations=1, held=True)
        }
    assert table.snapshot() == {}
    assert len(table) == 0


def test_new_generation_after_retirement() -> None:
    """Each new entry of the same id gets a new generation number."""
    table = LifecycleTable()
    generations = []
    for _ in range(3):
        with table.hold("a", 1.0):
            generations.append(table.snapshot()["a"].generation)
    assert generations == [1, 2, 3]


def test_reentrant_hold_shares_one_generation() -> None:
    """Nested holds by one thread reuse the entry and count reservations."""
    table = LifecycleTable()
    with table.hold("a", 0), table.hold("a", 0):
        info = table.snapshot()["a"]
        assert (info.generation, info.reservations, info.held) == (1, 2, True)
    assert table.snapshot() == {}


def test_exception_in_block_retires_entry() -> None:
    """Any BaseException (KeyboardInterrupt included) leaves the table empty."""
    table = LifecycleTable()
    with pytest.raises(KeyboardInterrupt), table.hold("a", 1.0):
        raise KeyboardInterrupt
    assert table.snapshot() == {}


class _SignallingTable(LifecycleTable):
    """Sets ``reserved`` each time a reservation is taken (to order the test)."""

    def __init__(self) -> None:
        super().__init__()
        self.reserved = threading.Event()

    def _reserve(self, resolved_id: str):  # type: ignore[no-untyped-def]
        entry = super()._reserve(resolved_id)
        self.reserved.set()
        return entry


def test_waiter_keeps_the_generation_alive() -> None:
    """A waiter reserved during the hold uses the holder's generation; the holder's
    exit does not retire it, so no newcomer can make a second one (B1-B3)."""
    table = _SignallingTable()
    holding, release = threading.Event(), threading.Event()
    seen: list[int] = []

    def holder() -> None:
        with table.hold("a", 30):
            holding.set()
            assert release.wait(30)

    def waiter() -> None:
        with table.hold("a", 30):
            seen.append(table.snapshot()["a"].generation)

    first, _ = run_in_thread(holder)
    assert holding.wait(30)
    generation = table.snapshot()["a"].generation
    table.reserved.clear()
    second, outcome = run_in_thread(waiter)
    assert table.reserved.wait(30)
    assert table.snapshot()["a"].reservations == 2
    release.set()
    join(first)
    join(second)
    assert "error" not in outcome
    assert seen == [generation]
    assert table.snapshot() == {}


def test_timeout_raises_and_leaves_only_the_holders_entry() -> None:
    """A timed-out waiter raises LockTimeout and its reservation is gone (I10)."""
    timeouts: list[int] = []
    table = LifecycleTable(on_timeout=lambda: timeouts.append(1))
    holding, release = threading.Event(), threading.Event()

    def holder() -> None:
        with table.hold("a", 30):
            holding.set()
            assert release.wait(30)

    thread, _ = run_in_thread(holder)
    assert holding.wait(30)
    with pytest.raises(LockTimeout, match="lifecycle lock of model 'a'"), table.hold("a", 0):
        pytest.fail("must not enter")
    assert table.snapshot()["a"].reservations == 1
    assert timeouts == [1]
    release.set()
    join(thread)
    assert table.snapshot() == {}


def test_distinct_ids_do_not_block_each_other() -> None:
    """Holding one id does not delay another (timeout 0 succeeds)."""
    table = LifecycleTable()
    with table.hold("a", 0), table.hold("b", 0):
        assert set(table.snapshot()) == {"a", "b"}
    assert table.snapshot() == {}


def test_try_hold_takes_a_free_lifecycle_and_refuses_a_busy_one() -> None:
    """try_hold: held like hold (re-entrant); None with nothing changed when another
    thread holds the id, without waiting or counting a timeout."""
    timeouts: list[int] = []
    table = LifecycleTable(on_timeout=lambda: timeouts.append(1))
    held = table.try_hold("a")
    assert held is not None
    with held:
        assert table.snapshot()["a"].held
        again = table.try_hold("a")  # re-entrant for the holding thread
        assert again is not None
        with again:
            assert table.snapshot()["a"].reservations == 2
        before = table.snapshot()
        thread, outcome = run_in_thread(table.try_hold, "a")
        join(thread)
        assert outcome == {"result": None}
        assert table.snapshot() == before
    assert table.snapshot() == {}
    assert timeouts == []

"""lockstep.lowlevel.thread_states: runnable/bounded threads and lost wake-ups, both ways.

A lost wake-up (a waiter left blocked in ``Condition.wait_for`` although its
predicate holds, the lock is free and no notified waiter is about to run) is
reported on code that wakes the wrong waiter with ``notify()``, and never on
correct code: ``notify_all``, or ``notify()`` in the one-item hand-off pattern
where any waiter can take the item.  Searched with seeded random schedules and
depth-first from the end (DFS), deterministic.
"""

from __future__ import annotations

from collections.abc import Callable

from ls_helpers import backend_budget

import lockstep
from lockstep import lowlevel
from lockstep import threading as lthreading
from lockstep.strategies import DFSStrategy, RandomStrategy


def _watch(seen: list[lowlevel.ThreadState]) -> Callable[[], None]:
    def record() -> None:
        states = lowlevel.thread_states()
        assert states is not None
        seen.extend(s for s in states if s.lost_wakeup)

    return record


def _two_drains(*, notify_all: bool, seen: list[lowlevel.ThreadState]) -> Callable[[], None]:
    """Two waiters drain different keys of one condition; each key is released once."""

    def scenario() -> None:
        cond = lthreading.Condition(lthreading.Lock())
        held = {"x", "y"}
        lockstep.add_invariant(_watch(seen))

        def drain(key: str) -> None:
            with cond:
                cond.wait_for(lambda: key not in held, timeout=5.0)

        def release(key: str) -> None:
            with cond:
                held.discard(key)
                if notify_all:
                    cond.notify_all()
                else:
                    cond.notify()

        threads = [
            lockstep.spawn(drain, "x", name="R1"),
            lockstep.spawn(drain, "y", name="R2"),
            lockstep.spawn(release, "x", name="U1"),
            lockstep.spawn(release, "y", name="U2"),
        ]
        for thread in threads:
            thread.join()

    return scenario


def test_notify_one_for_different_conditions_loses_a_wakeup() -> None:
    """notify() wakes the waiter of the other key: the right one is left blocked (seed 1
    first leaves one so within 100 executions; 300 found 10, 49 s on 3.13t's thread
    backend under load)."""
    seen: list[lowlevel.ThreadState] = []
    result = lockstep.explore(
        _two_drains(notify_all=False, seen=seen), strategy=RandomStrategy(seed=1), budget=100
    )
    assert result.failure is None
    assert seen, "no schedule left a waiter blocked with its predicate true"
    assert {s.name for s in seen} <= {"R1", "R2"}
    assert all(not s.runnable and s.bounded for s in seen)
    assert all(s.waiting_for.startswith("Condition.wake") for s in seen)


def test_notify_all_never_loses_a_wakeup() -> None:
    """With notify_all every waiter whose key was released is woken: nothing is reported.

    (On the thread backend, 100 random executions: notify() loses a wake-up between
    the 61st and the 100th random one of seed 1, the test above, so 100 see the states
    where it would; DFS, whose first 100 reach none of them, explores 20 there.)"""
    seen: list[lowlevel.ThreadState] = []
    for strategy, budget in (
        (RandomStrategy(seed=1), backend_budget(greenlet=300, thread=100)),
        (DFSStrategy(), backend_budget(greenlet=300, thread=20)),
    ):
        result = lockstep.explore(
            _two_drains(notify_all=True, seen=seen), strategy=strategy, budget=budget
        )
        assert result.failure is None
    assert seen == []


def test_notify_one_hand_off_is_not_a_lost_wakeup() -> None:
    """One item, two consumers, notify(): the other consumer's predicate holds only until
    the notified one runs, which is not a lost wake-up."""
    seen: list[lowlevel.ThreadState] = []

    def scenario() -> None:
        cond = lthreading.Condition(lthreading.Lock())
        items: list[int] = []
        lockstep.add_invariant(_watch(seen))

        def consume() -> None:
            with cond:
                if cond.wait_for(lambda: bool(items), timeout=5.0):
                    items.pop()

        def produce() -> None:
            with cond:
                items.append(1)
                cond.notify()

        threads = [lockstep.spawn(consume, name="C1"), lockstep.spawn(consume, name="C2")]
        threads.append(lockstep.spawn(produce, name="P"))
        for thread in threads:
            thread.join()

    # Each execution: a consumer waits and is notified (thread backend: fewer, as above).
    for strategy, budget in (
        (RandomStrategy(seed=1), backend_budget(greenlet=300, thread=100)),
        (DFSStrategy(), backend_budget(greenlet=300, thread=20)),
    ):
        result = lockstep.explore(scenario, strategy=strategy, budget=budget)
        assert result.failure is None
    assert seen == []


def test_every_thread_blocked_only_timeouts_left() -> None:
    """Two threads each wait (bounded) for the other's event: no thread is runnable and
    some are bounded, the state a timeout-masked deadlock is in."""
    masked: list[tuple[lowlevel.ThreadState, ...]] = []

    def scenario() -> None:
        first, second = lthreading.Event(), lthreading.Event()

        def check() -> None:
            states = lowlevel.thread_states()
            assert states is not None
            if not any(s.runnable for s in states) and any(s.bounded for s in states):
                masked.append(states)

        lockstep.add_invariant(check)

        def a() -> None:
            second.wait(1.0)
            first.set()

        def b() -> None:
            first.wait(1.0)
            second.set()

        threads = [lockstep.spawn(a, name="A"), lockstep.spawn(b, name="B")]
        for thread in threads:
            thread.join()

    result = lockstep.explore(scenario, budget=5)
    assert result.failure is None
    assert masked
    names = {s.name: s for s in masked[0]}
    assert not names["A"].runnable
    assert names["A"].bounded
    assert names["A"].waiting_for.startswith("Event.wait")


def test_outside_a_run_there_is_no_state() -> None:
    """None outside an execution, like current_step."""
    assert lowlevel.thread_states() is None


def test_the_states_an_invariant_sees_equal_those_computed_afresh() -> None:
    """Inside the scheduler's invariants thread_states reuses which threads it found
    runnable (and one state object per runnable thread); every answer must equal the
    one computed from the threads' own predicates, on both drain scenarios."""
    compared: list[int] = []

    def compare() -> None:
        run = lockstep._runtime.current_logical_thread().run  # type: ignore[union-attr]
        reused = lowlevel.thread_states()
        assert run.enabled_now is not None  # the scheduler's answer is in use here
        saved, run.enabled_now = run.enabled_now, None
        try:
            fresh = lowlevel.thread_states()
        finally:
            run.enabled_now = saved
        assert reused == fresh
        compared.append(1)

    for notify_all in (True, False):

        def scenario(notify_all: bool = notify_all) -> None:
            lockstep.add_invariant(compare)
            _two_drains(notify_all=notify_all, seen=[])()

        lockstep.explore(scenario, strategy=RandomStrategy(seed=3), budget=30)
    assert len(compared) > 100

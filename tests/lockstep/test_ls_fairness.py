"""A thread that sleeps or times out lets the others run: polling loops terminate.

``while not done: sleep(0.01)`` and ``while not event.wait(0.1)`` wait for another
thread. A search that keeps running the poller after every sleep (DFS's and DPOR's
first, non-preemptive execution; PCT's highest-priority thread) starved that thread
until the step limit and reported a "step_limit" failure for correct code. After a
yield (a sleep, or a timed wait that timed out) switching away is no preemption and
running on while another thread can run is one (``StepContext.yielded``), so every
strategy terminates such loops, and DFS bounds how often a poller may run on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from ls_helpers import run_once

import lockstep
import lockstep.threading as ls_threading
import lockstep.time as ls_time
from lockstep import DFSStrategy, DporStrategy, PCTStrategy, RandomStrategy, explore
from lockstep._schedule import Choice
from lockstep.strategies import StepContext


class Box:
    def __init__(self) -> None:
        self.done = False
        self.result: int | None = None


def _sleep_poller(publish_first: bool) -> Callable[[], None]:
    """The main thread polls a flag, sleeping between polls, until a worker sets it."""

    def scenario() -> None:
        box = lockstep.watch(Box())
        lock = ls_threading.Lock()

        def worker() -> None:
            with lock:
                if publish_first:
                    box.result = 42
                box.done = True
            if not publish_first:  # the bug: done is visible before the result
                with lock:
                    box.result = 42

        thread = lockstep.spawn(worker)
        while True:
            with lock:
                if box.done:
                    result = box.result
                    break
            ls_time.sleep(0.01)
        thread.join()
        assert result == 42, f"saw done but result={result}"

    return scenario


def _event_poller() -> None:
    """A refresher loops on ``stop.wait(timeout)`` until the main thread stops it."""
    stop = ls_threading.Event()
    refreshes = lockstep.watch([])
    lock = ls_threading.Lock()

    def refresher() -> None:
        while not stop.wait(1.0):
            with lock:
                refreshes.append(1)

    thread = lockstep.spawn(refresher)
    with lock:
        refreshes.append(0)
    stop.set()
    thread.join()


STRATEGIES: dict[str, Callable[[], Any]] = {
    "dfs": DFSStrategy,
    "dpor": DporStrategy,
    "pct": lambda: PCTStrategy(seed=0),
    "random": lambda: RandomStrategy(seed=0),
}


@pytest.mark.parametrize("name", sorted(STRATEGIES))
@pytest.mark.parametrize(
    "scenario",
    [_sleep_poller(publish_first=True), _event_poller],
    ids=["sleep-poll", "event-wait-poll"],
)
def test_a_correct_polling_loop_is_no_failure(name: str, scenario: Callable[[], None]) -> None:
    result = explore(scenario, strategy=STRATEGIES[name](), budget=60, shrink=False)
    assert result.failure is None, result.failure
    if name == "dfs":
        assert result.exhausted  # every fair interleaving within the bound, and no more


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_a_bug_behind_a_polling_loop_is_still_found(name: str) -> None:
    result = explore(_sleep_poller(publish_first=False), strategy=STRATEGIES[name](), budget=200)
    assert result.failure is not None, result.summary()
    assert result.failure.kind == "exception"
    assert "saw done but result=None" in result.failure.message


def _context(*, yielded: bool, enabled: frozenset[int]) -> StepContext:
    return StepContext(5, 0, enabled, frozenset(), {}, ("main", "worker"), 0.0, yielded)


def test_after_a_yield_running_on_is_the_preemption() -> None:
    main, worker = Choice.of(0, "run"), Choice.of(1, "run")
    plain = _context(yielded=False, enabled=frozenset({0, 1}))
    assert not plain.is_preemption(main)
    assert plain.is_preemption(worker)
    after_yield = _context(yielded=True, enabled=frozenset({0, 1}))
    assert after_yield.is_preemption(main)
    assert not after_yield.is_preemption(worker)
    alone = _context(yielded=True, enabled=frozenset({0}))  # nobody else can run
    assert not alone.is_preemption(main)
    assert StepContext(0, None, frozenset({0}), frozenset(), {}, ("main",), 0.0).yielded is False


def test_the_trace_marks_running_on_after_a_sleep_while_another_could_run() -> None:
    def scenario() -> None:
        lock = ls_threading.Lock()

        def worker() -> None:
            with lock:
                pass

        thread = lockstep.spawn(worker)
        ls_time.sleep(1)
        with lock:
            pass
        thread.join()
        raise AssertionError("the end: a failure carries the trace")

    # main: start, spawn the worker, sleep, then take the lock although the worker could run
    main = Choice.of(0, "run")
    _, forced = run_once(scenario, choices=(main, main, main, main))
    assert forced.failure is not None
    steps = list(forced.failure.trace.steps)
    sleep = next(i for i, s in enumerate(steps) if s.op.kind == "sleep")
    after = steps[sleep + 1]
    assert after.thread == 0
    assert after.op.kind == "Lock.acquire"
    assert after.preemption  # ran on after its sleep while the worker could run
    assert not steps[sleep].preemption
    # By default (no forced choices) the worker runs after the sleep: no preemption.
    _, fair = run_once(scenario)
    assert fair.failure is not None
    fair_steps = list(fair.failure.trace.steps)
    sleep = next(i for i, s in enumerate(fair_steps) if s.op.kind == "sleep")
    assert fair_steps[sleep + 1].thread == 1
    assert fair.failure.trace.preemptions == 0


def _sleep_instead_of_join(wait: str) -> Callable[[], None]:
    """The main thread starts a worker, waits 5 s, then checks the worker ran. A sleep
    is not synchronisation: real threads may run the check first, so this has a bug."""

    def scenario() -> None:
        box = lockstep.watch(Box())
        lock = ls_threading.Lock()

        def worker() -> None:
            with lock:
                box.done = True

        t = ls_threading.Thread(target=worker)
        t.start()
        if wait == "sleep":
            ls_time.sleep(5)
        else:
            ls_threading.Event().wait(5)
        with lock:
            assert box.done, "the worker had not run"
        t.join()

    return scenario


STRATEGIES_WITHOUT_TIMEOUTS: dict[str, Callable[[], Any]] = {
    "dpor": lambda: DporStrategy(timeouts=False),
    "dfs": lambda: DFSStrategy(timeouts=False),
    "random": lambda: RandomStrategy(seed=0, timeouts=False),
    "pct": lambda: PCTStrategy(seed=0, timeouts=False),
}


@pytest.mark.parametrize("name", sorted(STRATEGIES_WITHOUT_TIMEOUTS))
def test_timeouts_false_holds_timed_waits_but_not_sleeps(name: str) -> None:
    """``timeouts=False`` lets a timed wait time out only when nothing else can run
    (timeouts are then fallbacks, not scheduling choices); a sleep is no wait for
    anything, only a yield, so a test that sleeps to let a worker finish keeps the
    schedule where the worker had not run."""
    timed = explore(
        _sleep_instead_of_join("event"), strategy=STRATEGIES_WITHOUT_TIMEOUTS[name](), budget=50
    )
    assert timed.failure is None, timed.failure
    slept = explore(
        _sleep_instead_of_join("sleep"), strategy=STRATEGIES_WITHOUT_TIMEOUTS[name](), budget=50
    )
    assert slept.failure is not None
    assert "the worker had not run" in slept.failure.message

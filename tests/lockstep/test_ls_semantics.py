"""More threading semantics under lockstep, and the replay property over random seeds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from ls_helpers import raises_in_run, run_once

import lockstep
import lockstep.threading
from lockstep import DFSStrategy, RandomStrategy, explore, replay, spawn


def _workload():
    """Three threads, a condition with notify(n), an RLock inside the condition, a queue."""
    cond = lockstep.threading.Condition(lockstep.threading.RLock())
    ready = []
    q = lockstep.queue.Queue()
    log = []

    def worker(i):
        with cond, cond:  # re-entrant: wait must release both levels
            while not ready:
                cond.wait()
        q.put(i)

    threads = [spawn(worker, i) for i in range(3)]
    with cond:
        ready.append(True)
        cond.notify(2)
        cond.notify()
    for _ in range(3):
        log.append(q.get(timeout=5))
    for t in threads:
        t.join()
    assert sorted(log) == [0, 1, 2]


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32))
def test_any_random_execution_replays_exactly(seed):
    """For any seed, replaying the recorded schedule gives the same steps and outcome."""
    recorded = {}

    class Recorder(RandomStrategy):
        def end_execution(self, outcome):
            recorded["outcome"] = outcome
            return False

    explore(_workload, strategy=Recorder(seed), budget=1, shrink=False)
    outcome = recorded["outcome"]
    again = replay(_workload, lockstep.Schedule(choices=outcome.choices))
    assert again.schedule.choices == outcome.choices
    assert again.trace.steps == outcome.steps
    if outcome.failure is None:
        assert again.failure is None
    else:
        assert again.failure is not None
        assert again.failure.message == outcome.failure.message


def test_notify_n_wakes_exactly_n_waiters():
    """notify(2) wakes two of three waiters; the third stays blocked until notify()."""

    def body():
        cond = lockstep.threading.Condition()
        woken = []

        def waiter(i):
            with cond:
                cond.wait()
                woken.append(i)

        threads = [spawn(waiter, i) for i in range(3)]
        lockstep.checkpoint("let them wait")
        # all three are waiting under the non-preemptive default once main blocks
        for t in threads:
            t.join(timeout=0)  # timeout fires immediately: lets the waiters run first
        with cond:
            cond.notify(2)
        for t in threads[:2]:
            t.join(timeout=1)
        first_round = len(woken)
        with cond:
            cond.notify()
        for t in threads:
            t.join()
        return first_round, sorted(woken)

    value, result = run_once(body)
    assert result.failure is None, result.failure
    assert value == (2, [0, 1, 2])


def test_semaphore_timeout_is_a_choice():
    """acquire(timeout=...) on an exhausted semaphore can time out or succeed."""
    outcomes = set()

    def scenario():
        sem = lockstep.threading.Semaphore(0)
        got = []

        def waiter():
            got.append(sem.acquire(timeout=1))

        t = spawn(waiter)
        sem.release()
        t.join()
        outcomes.add(got[0])

    result = explore(scenario, strategy=DFSStrategy(preemption_bound=None), budget=1000)
    assert result.failure is None
    assert outcomes == {True, False}


def test_enumerate_and_active_count_inside_a_run():
    """threading.enumerate()/active_count() list the live logical threads."""

    def body():
        gate = lockstep.threading.Event()
        t = spawn(gate.wait, name="gated")
        names = sorted(th.name for th in lockstep.threading.enumerate())
        count = lockstep.threading.active_count()
        gate.set()
        t.join()
        return names, count, lockstep.threading.active_count()

    value, result = run_once(body)
    assert result.failure is None
    assert value == (["gated", "main"], 2, 1)


def test_blocked_daemon_thread_does_not_fail_the_execution():
    """When only daemon threads remain, the execution ends (as the interpreter would)."""

    def scenario():
        never = lockstep.threading.Event()
        lockstep.threading.Thread(target=never.wait, daemon=True).start()

    result = explore(scenario, budget=20)
    assert result.failure is None


def test_blocked_non_daemon_thread_is_a_deadlock():
    """A non-daemon thread blocked forever after main returns is a deadlock."""

    def scenario():
        never = lockstep.threading.Event()
        spawn(never.wait, name="forever")

    failure = explore(scenario, budget=5).failure
    assert failure is not None
    assert failure.kind == "deadlock"
    assert [row.thread_name for row in failure.deadlock] == ["forever"]
    assert failure.deadlock[0].holders == ("nobody: waiting for set()",)


def test_waiting_inside_an_invariant_is_an_error():
    """Invariants must not block: waits raise, reported as an invariant failure."""

    def scenario():
        ev = lockstep.threading.Event()
        lockstep.add_invariant(ev.wait)
        lockstep.checkpoint("x")

    failure = explore(scenario, budget=1).failure
    assert failure is not None
    assert failure.kind == "invariant"
    assert "must not block" in failure.message


def test_add_invariant_rejects_non_callables():
    """add_invariant validates its argument."""
    exc = raises_in_run(lambda: lockstep.add_invariant(3))  # type: ignore[arg-type]
    assert isinstance(exc, lockstep.errors.InvalidArgumentType)

"""DPOR against exhaustive DFS on the real runtime: the same observable outcomes.

Each program's threads record only what their own operations returned (a wait
that timed out, an acquire that failed, the item a get received, the value read
after a lock), so equivalent interleavings give the same record.  Unbounded DFS
enumerates every interleaving; DPOR must reach exactly the same set of records.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

import lockstep
from lockstep.strategies._dpor import DporStrategy

Record = tuple[tuple[object, ...], ...]


def _program(
    body: Callable[[list[list[object]]], None], threads: int
) -> Callable[[list[Record]], Callable[[], None]]:
    def build(sink: list[Record]) -> Callable[[], None]:
        def scenario() -> None:
            logs: list[list[object]] = [[] for _ in range(threads)]
            body(logs)
            sink.append(tuple(tuple(log) for log in logs))

        return scenario

    return build


def condition_with_timeout(logs: list[list[object]]) -> None:
    cond = lockstep.threading.Condition()
    state = {"ready": False}

    def consumer() -> None:
        with cond:
            if not state["ready"]:
                logs[0].append(("notified", cond.wait(timeout=1.0)))
            logs[0].append(("ready", state["ready"]))

    def producer() -> None:
        with cond:
            state["ready"] = True
            cond.notify()
        logs[1].append("done")

    ts = [lockstep.spawn(consumer), lockstep.spawn(producer)]
    for t in ts:
        t.join()


def event_with_timeout(logs: list[list[object]]) -> None:
    event = lockstep.threading.Event()

    def waiter() -> None:
        logs[0].append(event.wait(timeout=1.0))

    def setter() -> None:
        lockstep.checkpoint("before set")
        event.set()

    ts = [lockstep.spawn(waiter), lockstep.spawn(setter)]
    for t in ts:
        t.join()


def semaphore_timeouts(logs: list[list[object]]) -> None:
    sem = lockstep.threading.Semaphore(1)

    def user(k: int) -> None:
        got = sem.acquire(timeout=1.0)
        logs[k].append(got)
        if got:
            lockstep.checkpoint("using")
            sem.release()

    ts = [lockstep.spawn(user, k) for k in range(2)]
    for t in ts:
        t.join()


def nonblocking_lock(logs: list[list[object]]) -> None:
    lock = lockstep.threading.Lock()
    box = {"v": 0}

    def holder() -> None:
        with lock:
            box["v"] = 1
            lockstep.checkpoint("held")
        logs[0].append("released")

    def prober() -> None:
        lockstep.checkpoint("before probe", resource="probe")
        if lock.acquire(blocking=False):
            logs[1].append(("got", box["v"]))
            lock.release()
        else:
            logs[1].append("busy")

    ts = [lockstep.spawn(holder), lockstep.spawn(prober)]
    for t in ts:
        t.join()


def queue_with_timeout(logs: list[list[object]]) -> None:
    q: lockstep.queue.Queue[int] = lockstep.queue.Queue()

    def producer() -> None:
        q.put(1)
        q.put(2)

    def consumer() -> None:
        for _ in range(2):
            try:
                logs[1].append(q.get(timeout=1.0))
            except Exception as exc:  # queue.Empty
                logs[1].append(type(exc).__name__)

    ts = [lockstep.spawn(producer), lockstep.spawn(consumer)]
    for t in ts:
        t.join()


def rlock_and_timed_lock(logs: list[list[object]]) -> None:
    rlock = lockstep.threading.RLock()
    lock = lockstep.threading.Lock()

    def nested() -> None:
        with rlock, rlock:
            logs[0].append(lock.acquire(timeout=0.5))
            if logs[0][-1]:
                lock.release()

    def other() -> None:
        with lock:
            logs[1].append(rlock.acquire(timeout=0.5))
            if logs[1][-1]:
                rlock.release()

    ts = [lockstep.spawn(nested), lockstep.spawn(other)]
    for t in ts:
        t.join()


def notify_all_two_waiters(logs: list[list[object]]) -> None:
    cond = lockstep.threading.Condition()
    state = {"go": False}

    def waiter(k: int) -> None:
        with cond:
            if not state["go"]:
                logs[k].append(cond.wait(timeout=1.0))

    def releaser() -> None:
        with cond:
            state["go"] = True
            cond.notify_all()

    ts = [lockstep.spawn(waiter, 0), lockstep.spawn(waiter, 1), lockstep.spawn(releaser)]
    for t in ts:
        t.join()


def join_with_timeout(logs: list[list[object]]) -> None:
    def child() -> None:
        lockstep.checkpoint("child works", resource="work")

    t = lockstep.spawn(child)
    lockstep.checkpoint("parent works", resource="work")
    t.join(timeout=0.5)
    logs[0].append(t.is_alive())
    t.join()


PROGRAMS = {
    "join-timeout": (join_with_timeout, 1),
    "condition-timeout": (condition_with_timeout, 2),
    "event-timeout": (event_with_timeout, 2),
    "semaphore-timeouts": (semaphore_timeouts, 2),
    "nonblocking-lock": (nonblocking_lock, 2),
    "queue-timeout": (queue_with_timeout, 2),
    "rlock-and-timed-lock": (rlock_and_timed_lock, 2),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_dpor_reaches_every_outcome_dfs_reaches(name: str) -> None:
    """Same set of per-thread records as exhaustive DFS, with far fewer executions."""
    body, threads = PROGRAMS[name]
    build = _program(body, threads)
    by_dfs: list[Record] = []
    dfs = lockstep.explore(
        build(by_dfs), strategy=lockstep.DFSStrategy(preemption_bound=None), budget=50_000
    )
    assert dfs.ok, dfs.failure
    assert dfs.exhausted
    by_dpor: list[Record] = []
    strategy = DporStrategy()
    dpor = lockstep.explore(build(by_dpor), strategy=strategy, budget=50_000)
    assert dpor.ok, dpor.failure
    assert dpor.exhausted
    assert set(by_dpor) == set(by_dfs)
    assert dpor.executions <= dfs.executions


def test_dpor_covers_bounded_dfs_on_a_larger_program() -> None:
    """Two timed waiters and a notify_all (too big for unbounded DFS: > 200,000
    interleavings): every outcome of DFS with one preemption is reached by DPOR.
    (Measured: DFS with two preemptions, 16,666 executions, finds the same 9
    outcomes as DPOR's 286 executions.)"""
    build = _program(notify_all_two_waiters, 3)
    by_dfs: list[Record] = []
    dfs = lockstep.explore(
        build(by_dfs), strategy=lockstep.DFSStrategy(preemption_bound=1), budget=50_000
    )
    assert dfs.ok, dfs.failure
    assert dfs.exhausted
    by_dpor: list[Record] = []
    dpor = lockstep.explore(build(by_dpor), strategy=DporStrategy(), budget=50_000)
    assert dpor.ok, dpor.failure
    assert dpor.exhausted
    assert set(by_dfs) <= set(by_dpor)
    assert len(set(by_dpor)) == 9

"""Controlled primitives follow threading's semantics, inside a run and outside one."""

from __future__ import annotations

import pathlib
import queue
import threading

import pytest
from ls_helpers import backend_budget, raises_in_run, run_once

import lockstep
from lockstep import DFSStrategy, explore, spawn


def _real_message(body):
    try:
        body()
    except Exception as exc:
        return str(exc)
    raise AssertionError("expected an exception")


# CPython 3.13 reworded this one; compare with the running interpreter's message.
NEGATIVE_TIMEOUT = _real_message(lambda: threading.Lock().acquire(True, -2))

MISUSE = [
    (
        "Lock.release unlocked",
        lambda: lockstep.threading.Lock().release(),
        RuntimeError,
        "release unlocked lock",
    ),
    (
        "RLock.release unowned",
        lambda: lockstep.threading.RLock().release(),
        RuntimeError,
        "cannot release un-acquired lock",
    ),
    (
        "Condition.wait unowned",
        lambda: lockstep.threading.Condition().wait(),
        RuntimeError,
        "cannot wait on un-acquired lock",
    ),
    (
        "Condition.notify unowned",
        lambda: lockstep.threading.Condition().notify(),
        RuntimeError,
        "cannot notify on un-acquired lock",
    ),
    (
        "Lock nonblocking timeout",
        lambda: lockstep.threading.Lock().acquire(False, 1),
        ValueError,
        "can't specify a timeout for a non-blocking call",
    ),
    (
        "Lock negative timeout",
        lambda: lockstep.threading.Lock().acquire(True, -2),
        ValueError,
        NEGATIVE_TIMEOUT,
    ),
    (
        "Semaphore negative",
        lambda: lockstep.threading.Semaphore(-1),
        ValueError,
        "semaphore initial value must be >= 0",
    ),
    (
        "Semaphore nonblocking timeout",
        lambda: lockstep.threading.Semaphore().acquire(False, 1),
        ValueError,
        "can't specify timeout for non-blocking acquire",
    ),
    (
        "Semaphore release 0",
        lambda: lockstep.threading.Semaphore().release(0),
        ValueError,
        "n must be one or more",
    ),
    (
        "BoundedSemaphore over-release",
        lambda: lockstep.threading.BoundedSemaphore(1).release(),
        ValueError,
        "Semaphore released too many times",
    ),
    (
        "join before start",
        lambda: lockstep.threading.Thread(target=print).join(),
        RuntimeError,
        "cannot join thread before it is started",
    ),
    (
        "join current",
        lambda: lockstep.threading.current_thread().join(),
        RuntimeError,
        "cannot join current thread",
    ),
    (
        "queue negative timeout",
        lambda: lockstep.queue.Queue().get(timeout=-1),
        ValueError,
        "'timeout' must be a non-negative number",
    ),
    ("queue get_nowait empty", lambda: lockstep.queue.Queue().get_nowait(), queue.Empty, ""),
    (
        "task_done too often",
        lambda: lockstep.queue.Queue().task_done(),
        ValueError,
        "task_done() called too many times",
    ),
    (
        "sleep negative",
        lambda: lockstep.time.sleep(-1),
        ValueError,
        "sleep length must be non-negative",
    ),
]


@pytest.mark.parametrize(
    ("name", "body", "exc_type", "message"), MISUSE, ids=[m[0] for m in MISUSE]
)
def test_misuse_raises_what_threading_raises_inside_a_run(name, body, exc_type, message):
    """Inside a run, misuse raises the same exception type and message as threading."""
    import lockstep.threading
    import lockstep.time  # noqa: F401

    exc = raises_in_run(body)
    assert isinstance(exc, exc_type), exc
    assert str(exc) == message


@pytest.mark.parametrize(
    ("name", "body", "exc_type", "message"), MISUSE, ids=[m[0] for m in MISUSE]
)
def test_misuse_raises_the_same_outside_a_run(name, body, exc_type, message):
    """Outside a run the objects delegate to threading and fail identically."""
    import lockstep.threading
    import lockstep.time  # noqa: F401

    with pytest.raises(exc_type) as info:
        body()
    assert str(info.value) == message


def test_start_twice_raises_inside_a_run():
    """A Thread can only be started once, as in threading."""

    def body():
        t = lockstep.threading.Thread(target=lambda: None)
        t.start()
        try:
            t.start()
        finally:
            t.join()

    exc = raises_in_run(body)
    assert isinstance(exc, RuntimeError)
    assert str(exc) == "threads can only be started once"


def test_primitives_work_outside_a_run_with_real_threads():
    """Outside a run, lockstep objects are real: real threads, real blocking."""
    lock = lockstep.threading.Lock()
    cond = lockstep.threading.Condition(lock)
    ready = lockstep.threading.Event()
    q: lockstep.queue.Queue[int] = lockstep.queue.Queue(maxsize=1)
    seen = []

    def worker():
        with cond:
            ready.set()
            cond.wait_for(lambda: bool(seen))
        q.put(42)

    t = lockstep.spawn(worker, name="real-worker")
    assert isinstance(t, threading.Thread)
    assert ready.wait(10)
    with cond:
        seen.append(1)
        cond.notify_all()
    assert q.get(timeout=10) == 42
    t.join(10)
    assert not t.is_alive()
    assert lockstep.threading.Semaphore(2).acquire(timeout=0)
    rlock = lockstep.threading.RLock()
    with rlock, rlock:
        pass


def test_lock_mutual_exclusion_in_every_interleaving():
    """Two threads incrementing under a Lock never lose an update (all schedules)."""

    def scenario():
        lock = lockstep.threading.Lock()
        box = [0]

        def inc():
            with lock:
                v = box[0]
                lockstep.checkpoint("between")
                box[0] = v + 1

        ts = [spawn(inc), spawn(inc)]
        for t in ts:
            t.join()
        assert box[0] == 2

    result = explore(scenario, strategy=DFSStrategy(preemption_bound=None), budget=10_000)
    assert result.failure is None
    assert result.exhausted


def test_nonblocking_acquire_and_locked():
    """acquire(blocking=False) fails on a held lock; locked() reflects the state."""

    def body():
        lock = lockstep.threading.Lock()
        assert not lock.locked()
        assert lock.acquire(blocking=False)
        assert lock.locked()
        assert not lock.acquire(blocking=False)
        lock.release()
        return lock.locked()

    value, result = run_once(body)
    assert result.failure is None
    assert value is False


def test_rlock_is_reentrant_and_owned():
    """RLock: the owner re-acquires; another thread cannot release it."""

    def body():
        rlock = lockstep.threading.RLock()
        rlock.acquire()
        rlock.acquire()
        errors = []

        def other():
            try:
                rlock.release()
            except RuntimeError as exc:
                errors.append(str(exc))

        spawn(other).join()
        rlock.release()
        rlock.release()
        return errors

    value, result = run_once(body)
    assert result.failure is None
    assert value == ["cannot release un-acquired lock"]


def test_timed_acquire_times_out_as_a_choice():
    """A blocked acquire(timeout=...) can time out even while the holder could run."""
    outcomes = set()

    def scenario():
        lock = lockstep.threading.Lock()
        got = []

        def holder():
            with lock:
                lockstep.checkpoint("holding")

        def waiter():
            got.append(lock.acquire(timeout=1.0))
            if got[0]:
                lock.release()

        a = spawn(holder)
        b = spawn(waiter)
        a.join()
        b.join()
        outcomes.add(got[0])

    result = explore(scenario, strategy=DFSStrategy(preemption_bound=None), budget=5000)
    assert result.failure is None
    assert result.exhausted
    assert outcomes == {True, False}


def test_timeout_advances_the_virtual_clock():
    """Firing a timeout jumps the virtual clock to its deadline; time never goes back."""

    def body():
        ev = lockstep.threading.Event()
        start = lockstep.time.monotonic()
        fired = ev.wait(timeout=2.5)
        return fired, lockstep.time.monotonic() - start

    import lockstep.time

    value, result = run_once(body)
    assert result.failure is None
    assert value == (False, 2.5)


def test_sleep_advances_the_clock_and_is_a_switch_point():
    """sleep(x) is a step of kind "sleep" and moves the clock by x."""
    import lockstep.time

    def body():
        t0 = lockstep.time.time()
        lockstep.time.sleep(3)
        return lockstep.time.time() - t0

    value, result = run_once(body)
    assert result.failure is None
    assert value == 3.0


def test_condition_wait_notify_and_timeout():
    """Condition.wait returns True when notified, False when its timeout is chosen."""
    results = set()

    def scenario():
        cond = lockstep.threading.Condition()
        flag = []
        out = []

        def waiter():
            with cond:
                out.append(cond.wait_for(lambda: bool(flag), timeout=1.0))

        t = spawn(waiter)
        with cond:
            flag.append(1)
            cond.notify()
        t.join()
        results.add(out[0])

    result = explore(scenario, strategy=DFSStrategy(preemption_bound=None), budget=5000)
    assert result.failure is None
    assert result.exhausted
    # The timeout may fire before the flag is set (False) or the notify arrives (True).
    assert results == {True, False}


def test_condition_lost_wakeup_deadlocks():
    """A wait without a predicate loop can miss a notify: lockstep finds the deadlock."""

    def scenario():
        cond = lockstep.threading.Condition()

        def waiter():
            with cond:
                cond.wait()

        t = spawn(waiter)
        with cond:
            cond.notify()
        t.join()

    result = explore(scenario, strategy=DFSStrategy(preemption_bound=2), budget=1000)
    assert result.failure is not None
    assert result.failure.kind == "deadlock"
    rows = {row.thread: row for row in result.failure.deadlock}
    assert rows[1].operation == "Condition.wake"
    assert rows[0].operation == "Thread.join"


def test_semaphore_bounds_concurrency():
    """A Semaphore(1) admits one thread at a time in every interleaving."""

    def scenario():
        sem = lockstep.threading.BoundedSemaphore(1)
        inside = [0]

        def worker():
            with sem:
                inside[0] += 1
                lockstep.checkpoint("inside")
                assert inside[0] == 1
                inside[0] -= 1

        ts = [spawn(worker) for _ in range(2)]
        for t in ts:
            t.join()

    result = explore(scenario, strategy=DFSStrategy(preemption_bound=None), budget=10_000)
    assert result.failure is None


def test_queue_producer_consumer_and_join():
    """Queue put/get/task_done/join keep FIFO order and count unfinished tasks."""

    def scenario():
        q = lockstep.queue.Queue(maxsize=1)
        got = []

        def consumer():
            for _ in range(3):
                got.append(q.get())
                q.task_done()

        t = spawn(consumer)
        for i in range(3):
            q.put(i)
        q.join()
        assert got == [0, 1, 2]
        assert q.empty()
        assert not q.full()
        assert q.qsize() == 0
        t.join()

    # Every execution blocks on the full queue and on join (maxsize 1, three items).
    result = explore(scenario, budget=backend_budget(greenlet=200, thread=60))
    assert result.failure is None, result.failure


def test_queue_timeouts_raise_empty_and_full():
    """get/put with a timeout raise queue.Empty / queue.Full when the timeout is chosen."""

    def body():
        q = lockstep.queue.Queue(maxsize=1)
        out = []
        try:
            q.get(timeout=1)
        except queue.Empty:
            out.append("empty")
        q.put_nowait(1)
        try:
            q.put(2, timeout=1)
        except queue.Full:
            out.append("full")
        try:
            q.put_nowait(3)
        except queue.Full:
            out.append("full-nowait")
        return out

    value, result = run_once(body)
    assert result.failure is None
    assert value == ["empty", "full", "full-nowait"]


def test_thread_api_inside_a_run():
    """name/ident/is_alive/daemon/join(timeout) behave like threading's."""

    def body():
        import lockstep.threading as lt

        release = lockstep.threading.Event()
        t = lockstep.threading.Thread(target=release.wait, name="waiter", daemon=True)
        assert not t.is_alive()
        t.start()
        alive = t.is_alive()
        t.join(timeout=1)  # the waiter is blocked: the timeout fires
        still = t.is_alive()
        release.set()
        t.join()
        return (
            t.name,
            t.daemon,
            alive,
            still,
            t.is_alive(),
            t.ident != lt.get_ident(),
            lt.current_thread().name,
            lt.main_thread().name,
        )

    value, result = run_once(body)
    assert result.failure is None, result.failure
    assert value == ("waiter", True, True, True, False, True, "main", "main")


def test_thread_subclass_run_override():
    """Subclasses overriding run() are scheduled like any thread."""

    class Worker(lockstep.threading.Thread):
        def __init__(self, out):
            super().__init__()
            self.out = out

        def run(self):
            lockstep.checkpoint("work")
            self.out.append(self.name)

    def body():
        out = []
        w = Worker(out)
        w.start()
        w.join()
        return out

    value, result = run_once(body)
    assert result.failure is None
    assert value == ["Thread-1"]


def test_default_thread_names_are_deterministic():
    """Default names restart at Thread-1 in every execution."""
    names = []

    def scenario():
        t = spawn(lambda: None)
        t.join()
        names.append(t.name)

    explore(scenario, budget=3)
    assert names == ["Thread-1 (<lambda>)"] * 3


def test_global_primitive_is_fresh_in_every_execution():
    """A primitive created outside the run starts each execution unlocked."""
    lock = lockstep.threading.Lock()

    def scenario():
        lock.acquire()  # never released: the next execution must still find it free

    result = explore(scenario, budget=3)
    assert result.failure is None
    assert not lock.locked()


def test_timer_fires_or_is_cancelled():
    """Timer runs its function after the (virtual) interval unless cancelled first."""
    outcomes = set()

    def scenario():
        fired = []
        t = lockstep.threading.Timer(5.0, fired.append, args=[1])
        t.start()
        t.cancel()
        t.join()
        outcomes.add(tuple(fired))

    result = explore(scenario, strategy=DFSStrategy(preemption_bound=None), budget=1000)
    assert result.failure is None
    assert outcomes == {(), (1,)}


def test_barrier_releases_all_parties_once_in_every_interleaving():
    """Barrier(3): indices 0..2, the action runs exactly once, nobody passes early."""

    def scenario():
        actions = []
        barrier = lockstep.threading.Barrier(3, action=lambda: actions.append("go"))
        passed = []

        def party():
            index = barrier.wait()
            assert actions == ["go"]
            passed.append(index)

        threads = [spawn(party) for _ in range(2)]
        party()
        for t in threads:
            t.join()
        assert sorted(passed) == [0, 1, 2]
        assert not barrier.broken

    result = explore(scenario, strategy=DFSStrategy(preemption_bound=1), budget=5000)
    assert result.failure is None, result.failure
    assert result.exhausted


def test_barrier_timeout_breaks_it():
    """A waiter whose timeout is chosen breaks the barrier (BrokenBarrierError)."""

    def body():
        barrier = lockstep.threading.Barrier(2, timeout=1.0)
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            return barrier.broken
        return None

    value, result = run_once(body)
    assert result.failure is None
    assert value is True


def test_barrier_outside_a_run():
    """Outside a run the barrier works with real threads."""
    barrier = lockstep.threading.Barrier(2)
    t = threading.Thread(target=barrier.wait)
    t.start()
    assert barrier.wait(timeout=10) in (0, 1)
    t.join(10)
    assert barrier.n_waiting == 0


class _CountingLock(lockstep.threading.Lock):
    """A user's subclass overriding acquire and release (with must still use them)."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def acquire(self, blocking=True, timeout=-1):
        self.calls.append("acquire")
        return super().acquire(blocking, timeout)  # subclass-acquire

    def release(self):
        self.calls.append("release")
        super().release()  # subclass-release


@pytest.mark.parametrize("make", [lockstep.threading.Lock, lockstep.threading.RLock, _CountingLock])
def test_with_a_lock_records_the_with_line_and_uses_the_classes_acquire(make):
    """`with lock:` (inlined for plain Locks) and acquire()/release() record the user's
    line as the step's location (for a subclass: its own acquire's and release's, the
    first frames outside lockstep); a subclass's acquire and release still run."""
    lock = make()
    held = []

    def scenario():
        with lock:  # with-line
            held.append(lock.locked() if hasattr(lock, "locked") else True)
        lock.acquire()  # acquire-line
        lock.release()  # release-line

    run = lockstep.replay(scenario, lockstep.Schedule(choices=()))
    assert run.failure is None
    steps = run.trace.steps
    source = pathlib.Path(__file__).read_text().splitlines()

    def line(marker):
        return f"{__file__}:{1 + next(i for i, s in enumerate(source) if s.endswith(marker))}"

    kind = "RLock" if make is lockstep.threading.RLock else "Lock"
    where = [(s.op.kind, s.op.location) for s in steps if s.op.kind.startswith(kind + ".")]
    acquires = [loc for op, loc in where if op == f"{kind}.acquire"]
    releases = [loc for op, loc in where if op == f"{kind}.release"]
    if make is _CountingLock:
        assert acquires == [line("# subclass-acquire")] * 2
        assert releases == [line("# subclass-release")] * 2
        assert lock.calls == ["acquire", "release", "acquire", "release"]
    else:
        assert acquires == [line("# with-line"), line("# acquire-line")]
        assert releases == [line("# with-line"), line("# release-line")]
    assert held == [True]

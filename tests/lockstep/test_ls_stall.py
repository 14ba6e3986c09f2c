"""Stall diagnosis: a thread stuck in an uncontrolled primitive is named within seconds.

Real threads are ordered with events and a bounded probe of their frames; the
detector's clock is injected, so no assertion depends on how long anything took.
"""

from __future__ import annotations

import concurrent.futures
import os
import queue
import select
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

import pytest

import lockstep
from lockstep import _stall
from lockstep._stall import BlockedCall, StallDetector, blocked_call, stall_message

HERE = os.path.abspath(__file__)
PROBES = 20_000


def _line(fragment: str) -> int:
    with open(HERE, encoding="utf-8") as source:
        return next(i for i, text in enumerate(source, 1) if fragment in text)


def _frame_of(thread: threading.Thread) -> FrameType | None:
    assert thread.ident is not None
    return sys._current_frames().get(thread.ident)


def _until(predicate: Callable[[], object], what: str) -> object:
    """Bounded probe for a state the test relies on (never for elapsed time)."""
    pause = threading.Event()
    for _ in range(PROBES):
        value = predicate()
        if value:
            return value
        pause.wait(0.001)
    raise AssertionError(f"gave up waiting for {what}")


@contextmanager
def _blocked(target: Callable[[], object], release: Callable[[], object]) -> Iterator[BlockedCall]:
    """Run ``target`` on a real thread until blocked_call() sees it blocked; then release."""
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    try:
        call = _until(lambda: blocked_call(_frame_of(thread)), "the thread to block")
        assert isinstance(call, BlockedCall)
        yield call
    finally:
        release()
        thread.join(30)
        assert not thread.is_alive()


class _Holder:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rlock = threading.RLock()
        self.cond = threading.Condition()
        self.event = threading.Event()
        self.queue: queue.Queue[int] = queue.Queue()
        self.simple: queue.SimpleQueue[int] = queue.SimpleQueue()


def _with_lock(h: _Holder) -> None:
    with h.lock:  # stall-site: with
        pass


def _acquire_timeout(h: _Holder) -> None:
    h.lock.acquire(timeout=max(60, len(h.__dict__)))  # stall-site: acquire
    h.lock.release()


def _rlock(h: _Holder) -> None:
    with h.rlock:  # stall-site: rlock
        pass


def _cond_wait(h: _Holder) -> None:
    with h.cond:
        h.cond.wait()  # stall-site: cond


def _event_wait(h: _Holder) -> None:
    h.event.wait()  # stall-site: event


def _queue_get(h: _Holder) -> None:
    h.queue.get()  # stall-site: queue


def _simple_get(h: _Holder) -> None:
    h.simple.get()  # stall-site: simple


def _notify(h: _Holder) -> None:
    with h.cond:
        h.cond.notify_all()


@pytest.mark.parametrize(
    ("body", "site", "primitive", "hold", "release"),
    [
        (_with_lock, "with", "threading.Lock.__enter__", "lock", "lock"),
        (_acquire_timeout, "acquire", "threading.Lock.acquire", "lock", "lock"),
        (_rlock, "rlock", "threading.RLock.__enter__", "rlock", "rlock"),
        (_cond_wait, "cond", "threading.Condition.wait", None, "notify"),
        (_event_wait, "event", "threading.Event.wait", None, "event"),
        (_queue_get, "queue", "queue.Queue.get", None, "queue"),
        (_simple_get, "simple", "queue.SimpleQueue.get", None, "simple"),
    ],
)
def test_blocked_call_names_the_primitive_the_line_and_the_module(
    body, site, primitive, hold, release
):
    """Each real primitive a thread can block in is recognised, with its caller's line."""
    h = _Holder()
    if hold == "lock":
        h.lock.acquire()
    holder_done = threading.Event()
    rlock_holder = None
    if hold == "rlock":  # an RLock is owned by a thread: hold it on another one

        def hold_rlock() -> None:
            with h.rlock:
                holder_done.wait()

        rlock_holder = threading.Thread(target=hold_rlock, daemon=True)
        rlock_holder.start()
        _until(lambda: "owner=0" not in repr(h.rlock) and "locked" in repr(h.rlock), "rlock")

    def do_release() -> None:
        if release == "lock":
            h.lock.release()
        elif release == "rlock":
            holder_done.set()
        elif release == "notify":
            _notify(h)
        elif release == "event":
            h.event.set()
        elif release == "queue":
            h.queue.put(1)
        elif release == "simple":
            h.simple.put(1)

    with _blocked(lambda: body(h), do_release) as call:
        assert call.primitive == primitive
        assert call.location == f"{HERE}:{_line(f'# stall-site: {site}')}"
        assert call.function == body.__name__
        assert call.module == __name__
        assert call.certain
    if rlock_holder is not None:
        rlock_holder.join(30)


def _wait_for_a_future(future: concurrent.futures.Future[int]) -> None:
    future.result()  # stall-site: future


def test_a_wait_through_another_standard_module_names_that_module():
    """``Future.result()`` waits on a real Condition inside ``concurrent.futures._base``:
    the module to patch is that one, not the caller's (which has no primitive)."""
    future: concurrent.futures.Future[int] = concurrent.futures.Future()
    with _blocked(lambda: _wait_for_a_future(future), lambda: future.set_result(1)) as call:
        assert call.primitive == "threading.Condition.wait"
        assert call.location == f"{HERE}:{_line('# stall-site: future')}"
        assert call.function == "_wait_for_a_future"
        assert call.module == "concurrent.futures._base"


def test_a_call_through_an_unresolvable_receiver_is_judged_by_its_shape():
    """``with make_lock():`` cannot be resolved statically: reported, marked uncertain."""
    lock = threading.Lock()
    lock.acquire()

    def make_lock() -> threading.Lock:
        return lock

    def body() -> None:
        with make_lock():  # stall-site: shape
            pass

    with _blocked(body, lock.release) as call:
        assert not call.certain
        assert "with-statement" in call.primitive
        assert call.location == f"{HERE}:{_line('# stall-site: shape')}"


def test_blocking_io_and_running_code_are_not_primitives():
    """A thread waiting on a pipe (I/O, not a primitive) or computing is never diagnosed."""
    r, w = os.pipe()
    entered = threading.Event()

    def wait_for_pipe() -> None:
        entered.set()
        select.select([r], [], [])

    thread = threading.Thread(target=wait_for_pipe, daemon=True)
    thread.start()
    entered.wait(30)
    try:
        # Whatever the instant of the probe, the answer is None.
        for _ in range(50):
            assert blocked_call(_frame_of(thread)) is None
    finally:
        os.write(w, b"x")
        thread.join(30)
        os.close(r)
        os.close(w)
    stop = threading.Event()
    counter = [0]

    def spin() -> None:
        while not stop.is_set():
            counter[0] += 1

    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    try:
        _until(lambda: counter[0] > 0, "the spinner to run")
        for _ in range(50):
            frame = _frame_of(spinner)
            # the loop's only call is is_set(), a non-blocking method
            assert blocked_call(frame) is None
    finally:
        stop.set()
        spinner.join(30)


def test_the_harness_own_primitives_are_excluded():
    """A receiver listed as internal (a parked thread's baton) is never a stall."""
    baton = threading.Lock()
    baton.acquire()

    def parked() -> None:
        baton.acquire()  # stall-site: baton

    thread = threading.Thread(target=parked, daemon=True)
    thread.start()
    try:
        _until(lambda: blocked_call(_frame_of(thread)), "the thread to block")
        assert blocked_call(_frame_of(thread), internal=[baton]) is None
    finally:
        baton.release()
        thread.join(30)


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@contextmanager
def _one_blocked_thread() -> Iterator[threading.Thread]:
    lock = threading.Lock()
    lock.acquire()

    def body() -> None:
        with lock:
            pass

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    try:
        _until(lambda: blocked_call(_frame_of(thread)), "the thread to block")
        yield thread
    finally:
        lock.release()
        thread.join(30)


def _only(thread: threading.Thread, extra: dict[int, FrameType] | None = None):
    def frames() -> dict[int, FrameType]:
        assert thread.ident is not None
        found = {thread.ident: sys._current_frames()[thread.ident]}
        found.update(extra or {})
        return found

    return frames


def test_detector_needs_both_the_time_and_the_samples():
    """Unchanged evidence is diagnosed once it spans diagnose_after and min_samples."""
    clock = _Clock()
    with _one_blocked_thread() as thread:
        detector = StallDetector(
            2.0, min_samples=3, clock=clock, frames=_only(thread), cpu_time=lambda _: 0.0
        )
        assert detector.observe(thread.ident) is None  # first sample
        clock.now = 5.0
        assert detector.observe(thread.ident) is None  # time enough, two samples only
        call = detector.observe(thread.ident)
        assert call is not None
        assert call.primitive == "threading.Lock.__enter__"
        detector.reset()
        assert detector.observe(thread.ident) is None
        clock.now = 5.5
        assert detector.observe(thread.ident) is None
        assert detector.observe(thread.ident) is None  # three samples, only 0.5 s
        clock.now = 7.0
        assert detector.observe(thread.ident) is not None


def test_detector_is_not_fooled_by_cpu_use_or_a_moving_thread():
    """CPU time spent or another thread moving restarts the evidence: no diagnosis."""
    clock = _Clock()
    cpu = [0.0]
    with _one_blocked_thread() as thread:
        busy = StallDetector(
            1.0, min_samples=2, clock=clock, frames=_only(thread), cpu_time=lambda _: cpu[0]
        )
        for _ in range(20):
            clock.now += 1.0
            cpu[0] += 0.5  # the thread is computing, not blocked
            assert busy.observe(thread.ident) is None
        other_frames = [sys._getframe(), sys._getframe().f_back]
        moving = [0]

        def frames() -> dict[int, FrameType]:
            moving[0] += 1
            return _only(thread, {-1: other_frames[moving[0] % 2]})()

        watched = StallDetector(1.0, min_samples=2, clock=clock, frames=frames)
        for _ in range(20):
            clock.now += 1.0
            assert watched.observe(thread.ident) is None
        assert watched.observe(None) is None


def test_stall_message_names_thread_location_and_module():
    """The message says who, where, in what, and which module to patch."""
    call = BlockedCall("threading.Lock.acquire", "/p/mymgr.py:57", "Mgr._locked", "mymgr")
    text = stall_message(call, "1:Thread-2 (add)", 2.0, 14)
    assert "thread 1:Thread-2 (add)" in text
    assert "threading.Lock.acquire" in text
    assert "/p/mymgr.py:57 (in Mgr._locked)" in text
    assert "'mymgr'" in text
    assert "patch_modules()" in text
    assert "after step 14" in text


# -- end to end under explore ----------------------------------------------------------

REAL = threading.Lock()  # this module is never patched: REAL is an uncontrolled lock


def _holder() -> None:
    with REAL:
        lockstep.checkpoint("inside the real lock")


def _waiter() -> None:
    with REAL:  # stall-site: explore
        pass


def _two_threads() -> None:
    a = lockstep.spawn(_holder)
    b = lockstep.spawn(_waiter)
    a.join()
    b.join()


def test_explore_diagnoses_the_stall_without_waiting_for_the_timeout():
    """The stall is named (thread, line, module) by evidence, not by the 600 s timeout;
    it is not shrunk, the stuck thread is released, and the exploration stops there.

    On the thread backend: the holder of the real lock has an OS thread of its own to
    unwind on (the greenlet backend's behaviour is in test_ls_backends.py)."""
    result = lockstep.explore(
        _two_threads,
        strategy=lockstep.RandomStrategy(seed=0),
        budget=200,
        stall_timeout=600.0,  # only the diagnosis can end the stalled execution in time
        stall_diagnosis=0.2,
        backend="thread",
    )
    failure = result.failure
    assert failure is not None
    assert failure.kind == "stall"
    assert f"{HERE}:{_line('# stall-site: explore')}" in failure.message
    assert "threading.Lock.__enter__" in failure.message
    assert f"'{__name__}'" in failure.message
    assert failure.thread_name is not None
    assert failure.thread_name in failure.message
    assert "abandoned" not in failure.message  # the holder unwound, releasing the waiter
    assert result.shrink_executions == 0
    assert not REAL.locked()


def test_slow_but_progressing_code_is_not_a_stall():
    """Real I/O waits and computing between switch points are slow, not stalled."""
    r, w = os.pipe()

    def slow() -> None:
        select.select([r], [], [], 0.05)  # real waiting in I/O: not a primitive
        total = sum(range(2_000_000))
        lockstep.checkpoint(f"computed {total}")

    def scenario() -> None:
        lockstep.spawn(slow).join()

    try:
        result = lockstep.explore(scenario, budget=2, stall_timeout=600.0, stall_diagnosis=0.01)
    finally:
        os.close(r)
        os.close(w)
    assert result.failure is None


def test_slow_progress_survives_a_short_diagnosis_window():
    """With the window shorter than the work, progress still keeps the diagnosis away."""

    def compute() -> None:
        for i in range(5):
            sum(range(200_000 + i))
            lockstep.checkpoint(f"chunk {i}")

    def scenario() -> None:
        lockstep.spawn(compute).join()

    result = lockstep.explore(scenario, budget=2, stall_timeout=600.0, stall_diagnosis=0.001)
    assert result.failure is None


def test_stall_diagnosis_is_validated():
    """stall_diagnosis takes a positive number of seconds or None."""
    for bad in (0, -1, float("nan"), float("inf"), True, "2"):
        with pytest.raises(lockstep.InvalidArgument, match="stall_diagnosis"):
            lockstep.explore(_two_threads, budget=1, stall_diagnosis=bad)
    assert _stall.DEFAULT_STALL_DIAGNOSIS == 2.0


def test_a_thread_nothing_releases_is_abandoned_not_waited_for():
    """Blocked on a lock held outside the run: reported, abandoned (not waited for
    stall_timeout), and it unwinds by itself once the lock is released."""
    outside = threading.Lock()
    outside.acquire()

    def stuck() -> None:
        outside.acquire()  # stall-site: outside

    def scenario() -> None:
        lockstep.spawn(stuck).join()

    try:
        result = lockstep.explore(scenario, budget=1, stall_timeout=600.0, stall_diagnosis=0.2)
    finally:
        outside.release()
    failure = result.failure
    assert failure is not None
    assert failure.kind == "stall"
    assert f"{HERE}:{_line('# stall-site: outside')}" in failure.message
    assert "threading.Lock.acquire" in failure.message
    assert "abandoned" in failure.message
    # the autouse fixture checks that the abandoned worker unwinds once released

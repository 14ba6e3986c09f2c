"""The watchdog: a logical thread that stops reaching switch points is a stall.

Lockstep cannot schedule around code it does not control: a logical thread blocked on
a real lock of an unpatched module, or spinning without a switch point, never gives
control back. The controller (the thread that called explore/replay) waits for the
execution with a timeout and watches the step counter. While no step is taken:

* a :class:`~lockstep._stall.StallDetector` samples the running thread's frames and,
  once the evidence says it is blocked in a real (uncontrolled) primitive that only a
  parked thread could release, reports it after ``stall_diagnosis`` seconds (about 2),
  naming the thread, the line and the module to patch (see ``lockstep._stall``);
* anything else (a thread spinning without switch points, busy in C code) is reported
  after ``stall_timeout`` seconds of wall time (30 by default), the fallback that slow
  code on a loaded machine never reaches by accident.

Either way a "stall" failure is recorded, ``run.stalled`` names the stuck thread and
the watchdog returns, so the backend can unwind the others, release or abandon the
stuck one, and the process stays usable.

It runs on the controller whatever the backend, and counts only time spent inside an
execution (never a strategy's bookkeeping between executions, nor teardown), so a stall
is reported after the same time on every backend. ``wait_watching`` serves both
shapes: the thread backend waits for one execution at a time, the greenlet backend for
a whole session of executions (``current()`` names the one in progress).
"""

from __future__ import annotations

import _thread
import os
import queue as _real_queue
import sys
import threading as _real_threading
import time as _real_time
from collections.abc import Callable
from typing import TYPE_CHECKING

from lockstep._stall import StallDetector, stall_message

if TYPE_CHECKING:
    from lockstep._runtime import LogicalThread, Run

__all__ = ["stuck_location", "wait_for_controller", "wait_watching"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_STDLIB_SYNC_FILES = frozenset(
    os.path.abspath(module.__file__)
    for module in (_real_threading, _real_queue)
    if isinstance(module.__file__, str)
)
_THREAD_BACKEND_HINT = (
    "; if it waits for another logical thread through per-OS-thread state (a real "
    "RLock, threading.local, a C extension's thread state), run it on the thread "
    "backend: backend='thread' (lockstep check --backend thread, "
    "@pytest.mark.lockstep(backend='thread'))"
)


def wait_for_controller(run: Run) -> None:
    """Block until ``run`` gives control back, or record a stall and return."""
    wait_watching(run._done, lambda: run)


def wait_watching(done: _thread.LockType, current: Callable[[], Run | None]) -> Run | None:
    """Wait until ``done`` is released; report a stall of the execution in progress.

    ``current()`` is the execution in progress (None, or one whose control came back,
    between executions: not watched). Returns None once ``done`` was released, or the
    run that stalled, its failure recorded and ``run.stalled`` set.
    """
    # Built on the first idle poll only: most executions end before that.
    detector: StallDetector | None = None
    watched: tuple[int, int] | None = None
    idle_since = _real_time.monotonic()
    while True:
        run = current()
        poll = 1.0 if run is None else _poll_interval(run)
        if done.acquire(timeout=poll):
            return None
        now = _real_time.monotonic()
        run = current()
        if run is None or run.over:
            watched = None
            if detector is not None:
                detector.reset()
            continue
        if watched != (id(run), run.step):
            watched, idle_since = (id(run), run.step), now
            if detector is not None:
                detector.reset()
            continue
        running = run.last if run.last is not None else run.threads[0]
        if run.stall_diagnosis:
            if detector is None:
                detector = StallDetector(run.stall_diagnosis)
            call = detector.observe(
                run.backend.os_thread_ident(running), internal=run.internal_primitives()
            )
            if call is not None:
                run.stalled = running
                message = stall_message(
                    call, f"{running.index}:{running.name}", detector.diagnose_after, run.step
                )
                run.fail("stall", message + _hint(run), thread=running)
                return run
        if now - idle_since >= run.stall_timeout:
            run.stalled = running
            where = stuck_location(run, running)
            at = f" at {where}" if where else ""
            run.fail(
                "stall",
                f"stalled: no switch point was reached for {run.stall_timeout:g} s of wall "
                f"time after step {run.step} (thread {running.index}:{running.name}{at} is "
                "blocked in uncontrolled code, e.g. a real threading primitive of an "
                "unpatched module, or loops without switch points); patch the module that "
                "owns it" + _hint(run),
                thread=running,
            )
            return run


def _poll_interval(run: Run) -> float:
    poll = min(1.0, run.stall_timeout)
    if run.stall_diagnosis:
        poll = min(poll, StallDetector.poll_interval_for(run.stall_diagnosis))
    return poll


def _hint(run: Run) -> str:
    return _THREAD_BACKEND_HINT if run.backend.name == "greenlet" else ""


def stuck_location(run: Run, lt: LogicalThread) -> str | None:
    """file:line where ``lt`` (the running thread) is, outside lockstep and threading."""
    ident = run.backend.os_thread_ident(lt)
    frame = None if ident is None else sys._current_frames().get(ident)
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not filename.startswith(_PACKAGE_DIR) and filename not in _STDLIB_SYNC_FILES:
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return None

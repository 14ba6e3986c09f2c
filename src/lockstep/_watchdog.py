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

It runs on the controller whatever the backend, so a stall is reported after the same
time on every backend.
"""

from __future__ import annotations

import time as _real_time
from typing import TYPE_CHECKING

from lockstep._stall import StallDetector, stall_message

if TYPE_CHECKING:
    from lockstep._runtime import Run

__all__ = ["wait_for_controller"]


def wait_for_controller(run: Run) -> None:
    """Block until ``run`` gives control back, or record a stall and return."""
    # Built on the first idle poll only: most executions end before that.
    detector: StallDetector | None = None
    poll = min(1.0, run.stall_timeout)
    if run.stall_diagnosis:
        poll = min(poll, StallDetector.poll_interval_for(run.stall_diagnosis))
    last_step = -1
    idle_since = _real_time.monotonic()
    while not run._done.acquire(timeout=poll):
        now = _real_time.monotonic()
        if run.step != last_step:
            last_step, idle_since = run.step, now
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
                run.fail(
                    "stall",
                    stall_message(
                        call, f"{running.index}:{running.name}", detector.diagnose_after, run.step
                    ),
                    thread=running,
                )
                return
        if now - idle_since >= run.stall_timeout:
            run.stalled = running
            run.fail(
                "stall",
                f"stalled: no switch point was reached for {run.stall_timeout:g} s of wall "
                f"time after step {run.step} (thread {running.index}:{running.name} is "
                "blocked in uncontrolled code, e.g. a real threading primitive of an "
                "unpatched module, or loops without switch points); patch the module that "
                "owns it",
                thread=running,
            )
            return

"""The watchdog: a logical thread that stops reaching switch points is a stall.

Lockstep cannot schedule around code it does not control: a logical thread blocked on
a real lock of an unpatched module, or spinning without a switch point, never gives
control back. The controller (the thread that called explore/replay) waits for the
execution with a timeout and watches the step counter; when no step was taken for
``stall_timeout`` seconds of wall time it records a "deadlock" failure ("stalled") and
returns, so the backend can abandon what is stuck and the process stays usable.

It runs on the controller whatever the backend, so a stall is reported after the same
time on every backend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lockstep._runtime import Run

__all__ = ["wait_for_controller"]


def wait_for_controller(run: Run) -> None:
    """Block until ``run`` gives control back, or record a stall and return."""
    last_step = -1
    idle = 0.0
    poll = min(1.0, run.stall_timeout)
    while not run._done.acquire(timeout=poll):
        if run.step != last_step:
            last_step, idle = run.step, 0.0
            continue
        idle += poll
        if idle >= run.stall_timeout:
            running = run.last.name if run.last is not None else "?"
            run.fail(
                "deadlock",
                f"stalled: no switch point was reached for {run.stall_timeout:g} s of wall "
                f"time after step {run.step} (thread {running!r} is blocked in "
                "uncontrolled code, e.g. a real threading primitive of an unpatched module, "
                "or loops without switch points); patch the module that owns it",
            )
            return

"""The thread backend: every logical thread is an OS thread parked on a baton.

Each logical thread runs on its own daemon OS thread and owns a *baton*, a raw lock
from the real ``_thread`` module that is held while the thread is parked. A transfer
releases the chosen thread's baton and blocks on the current one's; the controller
waits on the run's "done" lock. A switch therefore costs two OS-level wake-ups and a
GIL hand-over (tens of microseconds).

What it is for: code that needs a real OS thread per logical thread (per-OS-thread
state of C extensions, unpatched code that identifies threads by the real
``threading.get_ident()``). Every observable of the controlled API is the same as on
the greenlet backend.

Teardown: the controller sets ``aborting`` and wakes every parked thread in turn, which
raises ``_Abort`` at its switch point and unwinds. A thread that does not come back
within a second (spinning without switch points, blocked in uncontrolled code) gets
``_Abort`` injected asynchronously (it takes effect at its next bytecode); if even that
fails it is counted in ``run.leaked`` (it is a daemon: it cannot keep the process
alive).
"""

from __future__ import annotations

import _thread
import contextlib
import ctypes
import sys
import threading as _real_threading
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from lockstep._runtime import Abort, make_line_tracer, set_current_logical_thread

if TYPE_CHECKING:
    from lockstep._runtime import LogicalThread, Run

__all__ = ["ThreadBackend", "inject_abort"]

_T = TypeVar("_T")


class ThreadBackend:
    """Logical threads on OS threads, handing over a baton (see the module docstring)."""

    name = "thread"

    def spawn(self, run: Run, lt: LogicalThread) -> None:
        """Start ``lt``'s OS thread, parked on its baton."""
        baton = _thread.allocate_lock()
        baton.acquire()
        lt.baton = baton
        os_thread = _real_threading.Thread(
            target=self._worker,
            args=(run, lt),
            name=f"lockstep-{lt.index}-{lt.name}",
            daemon=True,
        )
        lt.context = os_thread
        os_thread._ls_internal = True  # type: ignore[attr-defined]  # lockstep's own
        os_thread.start()

    def _worker(self, run: Run, lt: LogicalThread) -> None:
        set_current_logical_thread(lt)
        tracer = make_line_tracer(run.line_files) if run.line_files else None
        if tracer is not None:
            sys.settrace(tracer)
        try:
            lt.baton.acquire()
            if run.aborting:
                return
            following = run.thread_main(lt)
            if tracer is not None:
                sys.settrace(None)
            self._hand_to(run, following)
        except BaseException as exc:  # a bug in lockstep itself: surface it to the controller
            if run.internal_error is None and not isinstance(exc, Abort):
                run.internal_error = exc
            run.release_controller()
        finally:
            lt.finished = True
            lt.exited = True
            if tracer is not None:
                sys.settrace(None)
            set_current_logical_thread(None)

    @staticmethod
    def _hand_to(run: Run, target: LogicalThread | None) -> None:
        if target is None:
            run.release_controller()
        else:
            target.baton.release()

    def transfer(self, run: Run, current: LogicalThread, target: LogicalThread | None) -> None:
        """Release ``target``'s baton (or the controller), then wait for ours."""
        self._hand_to(run, target)
        current.baton.acquire()

    def run_session(self, body: Callable[[], _T]) -> _T:
        """Run ``body`` on the caller's thread: each execution is watched on its own."""
        return body()

    def execute(self, run: Run) -> None:
        """Hand the baton to the first thread, wait (watchdog), tear down."""
        try:
            self._hand_to(run, run.first_decision())
            run.wait_done()
        finally:
            self._teardown(run)

    def os_thread_ident(self, lt: LogicalThread) -> int | None:
        """The ident of ``lt``'s OS thread."""
        os_thread = lt.context
        return None if os_thread is None else os_thread.ident

    def close(self) -> None:
        """Nothing is kept between executions."""

    @staticmethod
    def _teardown(run: Run) -> None:
        """Unwind every logical thread, one at a time; never wait forever.

        A thread the watchdog found stuck (``run.stalled``) gets ``_Abort`` injected
        first; the parked threads then unwind, releasing the real locks they hold
        through ``with``/``finally``, which usually lets it wake and unwind too. It is
        waited for briefly and abandoned otherwise, never for ``stall_timeout`` again.
        """
        run.aborting = True
        stuck = run.stalled
        stuck_thread = None if stuck is None else stuck.context
        if stuck_thread is not None and stuck_thread.ident is not None:
            inject_abort(stuck_thread.ident)
        for t in run.threads:
            if t is stuck:
                continue
            os_thread = t.context
            if os_thread is None:
                continue
            if not t.exited:
                with contextlib.suppress(RuntimeError):
                    t.baton.release()
            os_thread.join(min(run.stall_timeout, 1.0))
            if os_thread.is_alive() and os_thread.ident is not None:
                inject_abort(os_thread.ident)
                os_thread.join(run.stall_timeout)
            if os_thread.is_alive():
                run.leaked += 1
        if stuck_thread is not None:
            stuck_thread.join(min(run.stall_timeout, 1.0))
            if stuck_thread.is_alive():
                run.leaked += 1


def inject_abort(ident: int) -> None:
    """Raise _Abort in the OS thread ``ident`` at its next bytecode (CPython API)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(Abort))

"""The greenlet backend: the logical threads of an execution are greenlets on one OS thread.

Why greenlets. A switch point can be reached anywhere inside unmodified synchronous
code (a ``with lock:`` five calls deep, a traced line), so a logical thread must be able
to suspend with its whole stack, C frames included. Generators and asyncio suspend only
at an explicit ``yield``/``await`` in code written for them, which the code under test
is not; OS threads can (that is the thread backend) but every switch costs two OS
wake-ups and a GIL hand-over. greenlet (the stack-switching library behind gevent and
SQLAlchemy's asyncio bridge, maintained for 15 years, wheels for every CPython) switches
a whole C stack in about a microsecond, preserves per-greenlet exception state,
contextvars context and recursion depth, and runs unmodified code.

Shape. Each backend instance owns a *carrier*: a daemon OS thread that runs a whole
*session* (an exploration: its executions, the strategy's bookkeeping, shrinking) while
the controller (the caller of explore/replay) waits on its own OS thread, where the
backend-independent watchdog watches the execution in progress. One hand-over between
OS threads per session, not per execution: a hand-over costs two wake-ups, and on a
loaded machine milliseconds of scheduling latency. In an execution, the carrier's main
greenlet (the *hub*) makes the first decision and switches to the chosen logical
thread; from then on logical threads switch directly to each other (``transfer``).
Control comes back to the hub when the execution is over (a transfer to None) or when a
logical thread ends (it hands the hub the thread to run next). The hub then unwinds
every logical thread still suspended by throwing ``_Abort`` into its greenlet, exactly
where the thread backend raises it.

Workers. A logical thread runs on a *worker*: a greenlet that runs one thread's body
after another, returning to the carrier's idle pool in between, with a fresh
contextvars context for each (as a new OS thread starts with). A new greenlet's first
switch costs about 7 us, mostly its own Python data stack, against 0.3 us to resume a
parked one; an execution of four threads paid that four times.

Stalls. A logical thread blocked in uncontrolled code (a real lock of an unpatched
module, a blocking C call) blocks the whole carrier. The controller's watchdog reports
it after the same ``stall_timeout`` as on the thread backend (it only counts time spent
inside an execution); the controller then injects ``_Abort`` into the carrier (it takes
effect at the next bytecode: enough for a thread spinning without switch points) and,
if the carrier does not leave that execution within ``stall_timeout`` more, abandons it
(a daemon thread, counted in ``run.leaked``; it runs no further execution and exits if
it ever unblocks) and reports the stall as it is (SessionAbandoned). The process stays
usable: the next session starts on a fresh carrier.

Tracing. ``sys.settrace`` state is per OS thread, shared by the greenlets of the
carrier. Line granularity installs the tracer once per execution on the carrier. A
switch made from inside the trace function would leave CPython's "currently tracing"
flag set for the thread switched to, so the tracer switches through
``sys.call_tracing`` (which clears it for the duration) and re-installs the tracer
right before each switch, which marks the outgoing frame as traced (greenlet carries
that mark to the greenlet switched to).

What it cannot do (choose the thread backend, ``backend="thread"``): run code that
depends on per-OS-thread state shared with other logical threads through something
lockstep does not control. All logical threads share one OS thread, so unpatched code
sees one real ``threading.get_ident()``/``current_thread()``, one real
``threading.local``, and re-enters a real ``RLock`` another logical thread holds; a
C extension's thread-local state (e.g. torch's grad mode) is shared.
"""

from __future__ import annotations

import _thread
import contextlib
import sys
import threading as _real_threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import greenlet

from lockstep._backend_protocol import SessionAbandoned
from lockstep._runtime import Abort, make_line_tracer, set_current_logical_thread
from lockstep._thread_backend import inject_abort
from lockstep._watchdog import wait_watching

if TYPE_CHECKING:
    from lockstep._runtime import LogicalThread, Run

__all__ = ["GreenletBackend"]

_T = TypeVar("_T")

#: How long close() waits for an idle carrier to exit.
_CLOSE_WAIT = 5.0


class _Job:
    """A session's body, run on the carrier, and its outcome."""

    __slots__ = ("body", "done", "error", "result")

    def __init__(self, body: Callable[[], Any]) -> None:
        self.body = body
        self.done = _thread.allocate_lock()
        self.done.acquire()
        self.result: Any = None
        self.error: BaseException | None = None


class _Carrier:
    """A daemon OS thread running sessions (series of executions), one at a time."""

    def __init__(self) -> None:
        self._job_ready = _thread.allocate_lock()
        self._job_ready.acquire()
        self._job: _Job | None = None
        #: Set by the controller when it gave up on this carrier (after a stall): it
        #: finishes what it is doing, if it ever can, runs no further execution, exits.
        self.retired = False
        #: The execution in progress (read by the controller's watchdog).
        self.current_run: Run | None = None
        self.hub: Any = None
        #: Workers between two logical threads, parked in the hub's switch (carrier only).
        self.idle: list[_Worker] = []
        #: Every worker made here (ended with the carrier, on its thread).
        self.workers: list[_Worker] = []
        self.thread = _real_threading.Thread(
            target=self._loop, name="lockstep-carrier", daemon=True
        )
        self.thread.start()

    @property
    def ident(self) -> int | None:
        """The carrier's OS thread ident."""
        return self.thread.ident

    def submit(self, job: _Job) -> None:
        """Run ``job`` on the carrier (it must be idle)."""
        self._job = job
        self._job_ready.release()

    def stop(self) -> None:
        """Let the carrier exit once idle (at once if it is)."""
        self.retired = True
        self._job = None
        with contextlib.suppress(RuntimeError):  # already told
            self._job_ready.release()

    def _loop(self) -> None:
        try:
            self.hub = greenlet.getcurrent()
            while True:
                self._job_ready.acquire()
                job, self._job = self._job, None
                if job is None:
                    return
                try:
                    job.result = job.body()
                except BaseException as exc:  # handed to the controller
                    job.error = exc
                finally:
                    self.current_run = None
                    job.done.release()
                if self.retired:
                    return
        except Abort:
            # An asynchronous abort that arrived after its logical thread was gone: the
            # controller has retired this carrier already.
            self.retired = True
        finally:
            # Ended here, on their own OS thread. Dropping the pool is not enough: a
            # parked worker is still referenced by the last logical thread it ran
            # (``lt.context``), which the caller's result may keep, so it would be freed
            # later, on another thread, after this one is gone; greenlet cannot unwind a
            # greenlet of a dead thread and leaks it with its stack, which holds that
            # run (every exploration leaked its runs that way: hundreds of thousands of
            # objects a test, which every later full collection walked).
            self.idle.clear()
            for worker in self.workers:
                if not worker.dead:
                    with contextlib.suppress(greenlet.GreenletExit):
                        worker.throw(greenlet.GreenletExit)
            self.workers.clear()

    def execute(self, run: Run) -> None:
        """Run ``run`` on this (the hub's) greenlet, then tear it down."""
        if self.retired:
            raise Abort  # an abandoned session must not go on
        self.current_run = run
        tracer = _tracer_for(run)
        try:
            try:
                if tracer is not None:
                    sys.settrace(tracer)
                following = run.first_decision()
                while following is not None:
                    if tracer is not None:
                        sys.settrace(tracer)  # the mark a parked worker lacks (Tracing)
                    following = following.context.switch()
                    set_current_logical_thread(None)
            except Abort:
                pass  # the controller aborted a stalled execution
            except BaseException as exc:  # a bug in lockstep itself
                if run.internal_error is None:
                    run.internal_error = exc
            finally:
                set_current_logical_thread(None)
                run.release_controller()
            self._teardown(run)
        except Abort:
            pass
        finally:
            if tracer is not None:
                sys.settrace(None)
            set_current_logical_thread(None)
            self.current_run = None
        if self.retired:
            raise Abort

    def _teardown(self, run: Run) -> None:
        """Unwind every suspended logical thread by raising _Abort at its switch point;
        give the workers of threads that never started back to the pool."""
        run.aborting = True
        for lt in run.threads:
            worker = lt.context
            if worker is None or worker.dead:
                continue
            if worker.job is not None and worker.job[1] is lt:  # assigned, never started
                worker.job = None
                self.idle.append(worker)
                continue
            if worker.lt is not lt:  # over: the worker ran it to its end
                continue
            with contextlib.suppress(Abort):
                worker.throw(Abort)
            set_current_logical_thread(None)

    def new_greenlet(self, run: Run, lt: LogicalThread) -> _Worker:
        """A worker (parked or new) that runs ``lt`` when next switched to."""
        idle = self.idle
        while idle:
            worker = idle.pop()
            if not worker.dead:  # (one an asynchronous abort ended as it parked)
                worker.gr_context = None  # a fresh, empty context, as in a new OS thread
                break
        else:
            worker = _Worker(self)
            self.workers.append(worker)
        worker.job = (run, lt)
        return worker


class _Worker(greenlet.greenlet):  # type: ignore[misc]  # greenlet ships no subclass stubs
    """A greenlet running logical threads one after another (see "Workers" above).

    ``job`` is the (run, thread) it runs when next switched to; ``lt`` the thread whose
    body it is running (None while parked).
    """

    def __init__(self, carrier: _Carrier) -> None:
        super().__init__(self._work, parent=carrier.hub)
        self.carrier = carrier
        self.job: tuple[Run, LogicalThread] | None = None
        self.lt: LogicalThread | None = None

    def _work(self) -> LogicalThread | None:
        carrier = self.carrier
        hub = carrier.hub
        idle = carrier.idle
        while True:
            following = self._run_job()
            if carrier.retired:
                return following  # the carrier runs nothing more: end here
            idle.append(self)
            hub.switch(following)  # the hub goes on with ``following``; parked here

    def _run_job(self) -> LogicalThread | None:
        """Run the assigned thread's body; the thread to run next (its frame, and with
        it the run, is gone before the worker parks)."""
        job = self.job
        assert job is not None, "a worker was switched to without a logical thread"
        self.job = None
        run, lt = job
        self.lt = lt
        try:
            return _thread_body(run, lt)
        finally:
            self.lt = None


def _thread_body(run: Run, lt: LogicalThread) -> LogicalThread | None:
    set_current_logical_thread(lt)
    try:
        return run.thread_main(lt)
    finally:
        lt.exited = True
        set_current_logical_thread(None)


def _tracer_for(run: Run) -> Any:
    if not run.line_files:
        return None
    return make_line_tracer(run.line_files, from_tracer=sys.call_tracing)


class GreenletBackend:
    """Logical threads as greenlets on a carrier OS thread (see the module docstring)."""

    name = "greenlet"

    def __init__(self) -> None:
        self._carrier: _Carrier | None = None

    def _on_carrier(self) -> _Carrier | None:
        carrier = self._carrier
        if carrier is not None and carrier.ident == _thread.get_ident():
            return carrier
        return None

    def run_session(self, body: Callable[[], _T]) -> _T:
        """Run ``body`` on the carrier while the controller watches (see module docstring)."""
        if self._on_carrier() is not None:
            return body()  # already inside this backend's session
        carrier = self._carrier
        if carrier is None or carrier.retired:
            carrier = self._carrier = _Carrier()
        job = _Job(body)
        carrier.submit(job)
        stalled: Run | None = None
        try:
            while True:
                newly = wait_watching(job.done, lambda: carrier.current_run)
                if newly is None:
                    break
                stalled = newly
                if not self._unwind(carrier, job, stalled):
                    stalled.leaked += 1
                    raise SessionAbandoned(stalled)
        except BaseException:
            self._retire(carrier)
            raise
        if stalled is not None:
            self._retire(carrier)  # it took an asynchronous abort: start afresh next time
        error = job.error
        if error is not None:
            if isinstance(error, Abort) and stalled is not None:
                raise SessionAbandoned(stalled) from None
            raise error
        result: _T = job.result
        return result

    @staticmethod
    def _unwind(carrier: _Carrier, job: _Job, run: Run) -> bool:
        """Abort the stalled ``run``; True once the carrier left it (False: stuck)."""
        run.aborting = True
        if carrier.ident is not None:
            inject_abort(carrier.ident)
        waited = 0.0
        limit = min(run.stall_timeout, 1.0)  # as the thread backend waits for its stuck thread
        while carrier.current_run is run and waited < limit:
            if job.done.acquire(timeout=0.05):
                job.done.release()  # the session ended: let the caller see it
                return True
            waited += 0.05
        return carrier.current_run is not run

    def _retire(self, carrier: _Carrier) -> None:
        carrier.stop()
        if self._carrier is carrier:
            self._carrier = None
        if carrier.current_run is not None:
            carrier.current_run.aborting = True
            if carrier.ident is not None:
                inject_abort(carrier.ident)

    def spawn(self, run: Run, lt: LogicalThread) -> None:
        """Create ``lt``'s greenlet on the carrier."""
        carrier = self._on_carrier()
        if carrier is not None:
            lt.context = carrier.new_greenlet(run, lt)

    def transfer(self, run: Run, current: LogicalThread, target: LogicalThread | None) -> None:
        """Switch to ``target``'s greenlet (None: the hub); return when switched back."""
        if run.line_files:
            sys.settrace(sys.gettrace())  # see "Tracing" in the module docstring
        try:
            if target is None:
                carrier = self._carrier
                assert carrier is not None
                carrier.hub.switch(None)
            else:
                target.context.switch()
        finally:
            set_current_logical_thread(current)

    def execute(self, run: Run) -> None:
        """Run ``run`` on the carrier (inside a session, or as a session of its own)."""
        carrier = self._on_carrier()
        if carrier is not None:
            for lt in run.threads:  # spawned before the carrier existed
                if lt.context is None:
                    lt.context = carrier.new_greenlet(run, lt)
            carrier.execute(run)
            return
        with contextlib.suppress(SessionAbandoned):  # its stall failure is recorded
            self.run_session(lambda: self.execute(run))

    def os_thread_ident(self, lt: LogicalThread) -> int | None:
        """Every logical thread runs on the carrier."""
        carrier = self._carrier
        return None if carrier is None else carrier.ident

    def close(self) -> None:
        """Stop the idle carrier (idempotent)."""
        carrier, self._carrier = self._carrier, None
        if carrier is not None:
            carrier.stop()
            carrier.thread.join(_CLOSE_WAIT)

"""The scheduler: logical threads, exactly one running at a time.

Design. Every logical thread of an execution gets an execution context from a
*backend* (:mod:`lockstep._backend`: an OS thread parked on a baton, or a greenlet on
a carrier thread). Exactly one logical thread holds the right to run. When it reaches a
switch point (an operation on a controlled primitive, ``checkpoint``, a traced line) it
publishes its *pending operation* (what it is about to do, and a predicate telling
whether that operation can proceed now) and calls :meth:`Run.switch`, which

1. checks the registered invariants (the world is stopped: nobody else runs),
2. computes the exact choice set: every live thread whose pending operation is enabled
   contributes ``Choice(t, "run")``; every blocked thread with a timed wait contributes
   ``Choice(t, "timeout")`` (a timeout is a scheduling choice, not a wall-clock event),
3. asks the strategy to pick one, records the step, and
4. asks the backend to transfer control (or keeps running when it picked itself).

The chosen operation's effect is applied by the chosen thread right after it wakes;
because nobody else runs in between, "enabled when chosen" still holds. No bytecode
offsets are involved, so schedules survive CPython upgrades, and the backend plays no
part in any decision: the same choices give the same trace on every backend.

Failures (exception in a thread, invariant violation, deadlock, step limit, a strategy
declaring divergence/nondeterminism) are recorded and control returns to the
*controller* (the thread that called ``explore``/``replay``), whose watchdog
(:mod:`lockstep._watchdog`) also reports a thread that stops reaching switch points.
The backend then tears the execution down: every parked thread is woken with a private
``BaseException`` (``_Abort``) raised at its switch point; a thread stuck in
uncontrolled code is abandoned (its OS thread is a daemon), so it can never hang the
process.

What it gives up: code that blocks on *uncontrolled* primitives (an unpatched module's
``threading.Lock``) cannot be scheduled; the watchdog turns the resulting stall into a
failure that says so.
"""

from __future__ import annotations

import _thread
import contextlib
import operator
import os
import sys
import threading as _real_threading
from collections.abc import Callable, Hashable, Iterator, Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import attrs

from lockstep._failure import BlockedThread, Failure, FailureKind
from lockstep._fastattrs import fast_constructor
from lockstep._schedule import Choice, RecordedFailure, Schedule
from lockstep._stall import DEFAULT_STALL_DIAGNOSIS
from lockstep._trace import LazySteps, OpDescriptor, PrimitiveId, StepRecord, Trace
from lockstep._watchdog import wait_for_controller
from lockstep.errors import InvalidArgumentType, LockstepError, NotInRunError, StrategyFailure
from lockstep.strategies._base import ExecutionOutcome, StepContext, Strategy, is_preemption

if TYPE_CHECKING:
    from lockstep._backend_protocol import Backend
    from lockstep._memory._report import DataRace
    from lockstep._memory._state import MemoryState

__all__ = [
    "Abort",
    "Blocker",
    "ExitHook",
    "ExitHooks",
    "LogicalThread",
    "Run",
    "ThreadFactory",
    "add_invariant",
    "checkpoint",
    "current_logical_thread",
    "in_run",
    "make_line_tracer",
    "primitive_id",
    "set_current_logical_thread",
    "user_location",
]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_tls = _real_threading.local()

#: Wall-clock seconds without any scheduling progress before an execution is declared
#: stalled (a thread blocked in uncontrolled code or looping without switch points).
DEFAULT_STALL_TIMEOUT = 30.0

Predicate = Callable[[], bool]
_NO_THREADS: frozenset[int] = frozenset()
# Built at every step: positional constructors that skip attrs' per-field setattr.
_new_op = fast_constructor(OpDescriptor)
_new_context = tuple.__new__  # StepContext is a NamedTuple
_new_record = fast_constructor(StepRecord)
_ROW_OP = operator.itemgetter(1)  # a step row's OpDescriptor
# The kinds of switch points at watched accesses (lockstep._memory): invariants are not
# checked while a thread is stopped at one (see Run._at_rest).
ACCESS_KINDS = frozenset({"read", "write"})


class _Abort(BaseException):
    """Raised inside a parked logical thread to unwind it when its execution is torn down."""


Abort = _Abort  # the name backends use


class Blocker(Protocol):
    """What a blocked logical thread waits on (``Run.switch``'s ``blocker``): a
    controlled primitive, or the Thread a join waits for. A deadlock's report asks it
    which threads hold it. The one thing the scheduler asks of the objects it
    schedules around; the name keeps lockstep's prefix because the stand-ins carry
    threading's exact API, and user subclasses may use any public name."""

    def _ls_holders(self, run: Run) -> list[str]:
        """The threads holding it in ``run`` ("index:name"), for a deadlock's report."""
        ...


class ExitHook(NamedTuple):
    """An interpreter-exit hook to run when an execution's main thread is done."""

    #: What the interpreter calls (``threading._register_atexit``'s record).
    call: Callable[[], object]
    #: The module globals the hook's function reads and may rebind (``_shutdown =
    #: True``): the Run gives them their values back when the execution ends.
    namespace: dict[str, Any] | None


#: The exit hooks of an execution (``run``), in the order the interpreter runs them,
#: given by whoever builds the Run (:func:`lockstep._patching.exit_hooks_for`: those of
#: the patched modules). Called only when the main thread's code is done while another
#: non-daemon thread lives.
ExitHooks = Callable[["Run"], Sequence[ExitHook]]

#: Builds the object user code sees for thread 0 ("main": ``threading.main_thread()``,
#: ``current_thread()`` there), bound to its logical thread; given by whoever builds
#: the Run (:meth:`lockstep._primitives.Thread._ls_for_run`). The other threads' objects
#: are the Thread objects that started them.
ThreadFactory = Callable[["LogicalThread"], _real_threading.Thread]


def set_current_logical_thread(lt: LogicalThread | None) -> None:
    """Record ``lt`` as the logical thread running on this OS thread (backends only)."""
    _tls.thread = lt


def current_logical_thread() -> LogicalThread | None:
    """The logical thread running on this OS thread, or None outside a run."""
    lt: LogicalThread | None = getattr(_tls, "thread", None)
    return lt


def in_run() -> bool:
    """True when called from a logical thread of an active lockstep execution."""
    return getattr(_tls, "thread", None) is not None


#: filename -> whether it belongs to the lockstep package (asked at every switch point).
_INTERNAL_FILES: dict[str, bool] = {}
#: (id(code), instruction offset) -> (code, "file:line"). Holding the code object keeps
#: its id from being reused while the entry exists.
_LOCATIONS: dict[tuple[int, int], tuple[object, str]] = {}
_MAX_LOCATIONS = 100_000

# Interned for the whole process: the same value is the same object in every
# execution, so what the strategies and the race detector cache per operation
# (DPOR's events, by the operation's identity) carries over from one execution to
# the next. Both are values (frozen); when a table fills up it starts afresh.
_IDS: dict[tuple[str, int], PrimitiveId] = {}
#: (kind, label, location) -> the OpDescriptor of a switch point (Run.switch).
_OPS: dict[tuple[str, str, str], OpDescriptor] = {}
_MAX_INTERNED = 100_000


def primitive_id(kind: str, number: int) -> PrimitiveId:
    """The (interned) ``PrimitiveId(kind, number)``."""
    key = (kind, number)
    found = _IDS.get(key)
    if found is None:
        if len(_IDS) >= _MAX_INTERNED:
            _IDS.clear()
        found = _IDS[key] = PrimitiveId(kind, number)
    return found


def user_location(skip: int = 2) -> str:
    """file:line of the first frame outside the lockstep package (cached per call site).

    ``skip``: how many frames above this one are certainly inside lockstep (not
    looking at them saves creating their frame objects).
    """
    try:
        frame: FrameType | None = sys._getframe(skip)
    except ValueError:  # the stack is not that deep
        return "?"
    internal_files = _INTERNAL_FILES
    while frame is not None:
        code = frame.f_code
        filename = code.co_filename
        internal = internal_files.get(filename)
        if internal is None:
            internal = internal_files[filename] = filename.startswith(_PACKAGE_DIR)
        if not internal:
            key = (id(code), frame.f_lasti)
            known = _LOCATIONS.get(key)
            if known is not None and known[0] is code:
                return known[1]
            if len(_LOCATIONS) >= _MAX_LOCATIONS:
                _LOCATIONS.clear()
            location = f"{filename}:{frame.f_lineno}"
            _LOCATIONS[key] = (code, location)
            return location
        frame = frame.f_back
    return "?"


def code_location(fn: object) -> str:
    """file:line where ``fn`` is defined ("?" if unknown); follows ``__wrapped__``."""
    for _ in range(10):
        wrapped = getattr(fn, "__wrapped__", None)
        if wrapped is None:
            break
        fn = wrapped
    code = getattr(fn, "__code__", None)
    if code is None:
        code = getattr(getattr(fn, "__func__", None), "__code__", None)
    if code is None:
        return "?"
    return f"{code.co_filename}:{code.co_firstlineno}"


class LogicalThread:
    """One logical thread of an execution (internal; users see lockstep.threading.Thread)."""

    __slots__ = (
        "baton",
        "blocker",
        "context",
        "daemon",
        "deadline",
        "enabled",
        "exited",
        "finished",
        "index",
        "locals",
        "location",
        "name",
        "pending",
        "resource",
        "run",
        "run_choice",
        "target",
        "thread_obj",
        "timeout_choice",
        "wake_kind",
    )

    def __init__(
        self,
        run: Run,
        index: int,
        name: str,
        target: Callable[[], object],
        *,
        daemon: bool,
        thread_obj: _real_threading.Thread | None,
    ) -> None:
        self.run = run
        self.index = index
        self.name = name
        self.target = target
        self.daemon = daemon
        self.thread_obj = thread_obj
        #: The backend's handles: a baton and an OS thread, or a greenlet.
        self.baton: Any = None
        self.context: Any = None
        self.pending: OpDescriptor | None = None
        self.enabled: Predicate | None = None
        self.deadline: float | None = None
        self.blocker: Blocker | None = None
        self.wake_kind = "run"
        self.finished = False
        self.exited = False
        self.location = "?"
        #: Its threading.local attributes (lockstep._local), by local object.
        self.locals: dict[int, dict[str, Any]] | None = None
        #: This thread's two possible choices (built once: the scheduler offers them often).
        self.resource = primitive_id("Thread", index)  # its start/end/join dependency key
        self.run_choice = Choice.of(index, "run")
        self.timeout_choice = Choice.of(index, "timeout")

    @property
    def ident(self) -> int:
        """A virtual, deterministic thread identifier."""
        return 0x10000 + self.index

    def __repr__(self) -> str:
        return f"<LogicalThread {self.index}:{self.name}>"


class _FailureInfo:
    __slots__ = ("deadlock", "exception", "invariant", "kind", "message", "race", "thread")

    def __init__(
        self,
        kind: FailureKind,
        message: str,
        *,
        exception: BaseException | None = None,
        thread: LogicalThread | None = None,
        invariant: str | None = None,
        deadlock: tuple[BlockedThread, ...] = (),
        race: DataRace | None = None,
    ) -> None:
        self.kind: FailureKind = kind
        self.message = message
        self.exception = exception
        self.thread = thread
        self.invariant = invariant
        self.deadlock = deadlock
        self.race = race


class Run:
    """One execution: its threads, virtual clock, step log and strategy (internal).

    Not thread-safe by design: only the running logical thread touches it (the
    controller only before the first decision and after control came back).

    What it needs of the layers above comes in through its constructor, from whoever
    builds the execution (:func:`lockstep._execution.run_execution`): the ``backend``
    that runs its threads, the ``exit_hooks`` of the patched modules and the
    ``thread_factory`` of main's Thread object. It imports none of them.

    The virtual clock (:attr:`clock`) is the Run's alone: it moves when a timeout is
    chosen (to the waiter's deadline) and when a sleep ends (:meth:`sleep`), never
    backwards, and nothing else writes it.
    """

    def __init__(
        self,
        strategy: Strategy,
        *,
        max_steps: int,
        schedule_template: Schedule,
        invariants: Sequence[Callable[[], object]] = (),
        line_files: frozenset[str] = frozenset(),
        stall_timeout: float = DEFAULT_STALL_TIMEOUT,
        stall_diagnosis: float | None = DEFAULT_STALL_DIAGNOSIS,
        backend: Backend,
        exit_hooks: ExitHooks,
        thread_factory: ThreadFactory,
        races: bool = True,
    ) -> None:
        self.strategy = strategy
        self.backend = backend
        self._exit_hooks = exit_hooks
        self._thread_factory = thread_factory
        self.max_steps = max_steps
        self.schedule_template = schedule_template
        self.invariants: list[Callable[[], object]] = list(invariants)
        #: Those of ``invariants`` that also run where the running thread alone can go
        #: on (``add_invariant(each_step=True)``).
        self.each_step: list[Callable[[], object]] = []
        self.line_files = line_files
        self.stall_timeout = stall_timeout
        self.stall_diagnosis = stall_diagnosis
        # The logical thread the watchdog found stuck (backends unwind it first).
        self.stalled: LogicalThread | None = None
        self.threads: list[LogicalThread] = []
        self._now = 0.0  # the virtual clock (the ``clock`` property): written here only
        self.step = 0
        #: One compact row per step; StepRecords are built from them on demand (steps()).
        self._rows: list[tuple[Any, ...]] = []
        self._steps_built: list[StepRecord] = []
        self.choices: list[Choice] = []
        self.failure_info: _FailureInfo | None = None
        self.internal_error: BaseException | None = None
        self.aborting = False
        #: Reads the race detector must see were not recorded: the execution ends at the
        #: next switch point and runs again from the start (``run_execution``).
        self.restart = False
        #: Control came back to the controller (teardown may still be running).
        self.over = False
        self.in_invariant = False
        # The indices of the threads that can run, while the invariants of a step run
        # (what _decide found: lowlevel.thread_states reuses it); None otherwise.
        self.enabled_now: list[int] | None = None
        self.leaked = 0
        self._done = _thread.allocate_lock()
        self._done.acquire()
        self._ids: dict[str, int] = {}
        self._thread_names = 0
        self._hashes = 0
        self.last: LogicalThread | None = None
        self._last_yielded = False  # the last step was a sleep or a timeout (a yield)
        self._names_cache: tuple[str, ...] = ()
        # Watched memory (lockstep._memory): None until the execution's first watch();
        # ``races``: whether its race detector reports data races.
        self.memory: MemoryState | None = None
        # Module namespaces whose exit hooks ran, with their globals before (_interpreter_exit).
        self._exit_globals: list[tuple[dict[str, Any], dict[str, Any]]] = []
        self.races = races

    @property
    def clock(self) -> float:
        """The execution's virtual time in seconds (0 at its start; read-only)."""
        return self._now

    # -- ids and names ---------------------------------------------------------------

    def new_id(self, kind: str) -> PrimitiveId:
        """The next per-run id of a primitive of ``kind`` (Lock#1, Lock#2, ...)."""
        number = self._ids.get(kind, 0) + 1
        self._ids[kind] = number
        return primitive_id(kind, number)

    def new_hash(self) -> int:
        """The hash of a lockstep object (a thread, a primitive) created in this run.

        Its creation number in the execution. The default hash comes from ``id()``, a
        memory address that differs from one execution to the next, so a set of threads
        or locks (``ThreadPoolExecutor._threads``) would iterate in a different order
        after the same choices: the scenario would look nondeterministic to DFS and DPOR.
        """
        self._hashes += 1
        return self._hashes

    def new_thread_name(self, target: object) -> str:
        """A deterministic default thread name, like CPython's "Thread-N (target)"."""
        self._thread_names += 1
        base = f"Thread-{self._thread_names}"
        target_name = getattr(target, "__name__", None)
        return f"{base} ({target_name})" if target_name else base

    @property
    def thread_names(self) -> tuple[str, ...]:
        """Names of the threads created so far, by index (kept by new_thread)."""
        return self._names_cache

    # -- thread lifecycle ------------------------------------------------------------

    def new_thread(
        self,
        name: str,
        target: Callable[[], object],
        *,
        daemon: bool,
        thread_obj: _real_threading.Thread | None,
        location: str | None = None,
    ) -> LogicalThread:
        """Create a logical thread (pending op "start") and its parked context.

        ``thread_obj`` is the object user code holds for it (the Thread that starts
        it, which binds itself to the returned logical thread; None for thread 0,
        whose object the Run's ``thread_factory`` builds)."""
        lt = LogicalThread(
            self, len(self.threads), name, target, daemon=daemon, thread_obj=thread_obj
        )
        lt.location = location or code_location(target)
        lt.pending = OpDescriptor("start", lt.resource, name, lt.location)
        self.threads.append(lt)
        self._names_cache = (*self._names_cache, name)
        if thread_obj is None:
            lt.thread_obj = self._thread_factory(lt)
        self.backend.spawn(self, lt)
        return lt

    def thread_main(self, lt: LogicalThread) -> LogicalThread | None:
        """The life of ``lt`` in its own context: its target, then its "end" step.

        Called by the backend when ``lt`` is first resumed; returns the logical thread
        to resume next (None: control goes back to the controller). Never raises
        ``_Abort``; a bug in lockstep itself is recorded in ``internal_error``.
        """
        try:
            if self.aborting:
                return None
            lt.pending = None
            try:
                lt.target()
                if lt.index == 0:
                    self._interpreter_exit(lt)
            except _Abort:
                return None
            except SystemExit:
                if lt.index == 0:
                    self._fail_exception(lt, sys.exc_info()[1])
                    return None
            except BaseException as exc:
                if not self.aborting:
                    self._fail_exception(lt, exc)
                return None
            try:
                self.switch(
                    lt,
                    "end",
                    lt.resource,
                    lt.name,
                    location=lt.location,
                )
            except _Abort:
                return None
            lt.finished = True
            return self._decide(lt)
        except BaseException as exc:  # a bug in lockstep itself: surface it to the controller
            if self.internal_error is None and not isinstance(exc, _Abort):
                self.internal_error = exc
            return None
        finally:
            lt.finished = True

    def _interpreter_exit(self, main: LogicalThread) -> None:
        """What the interpreter does when the main thread's code is done, before it waits
        for the other non-daemon threads: run the exit hooks the patched modules
        registered (``threading._register_atexit``). Only when such a thread is still
        alive: without them an idle ``ThreadPoolExecutor`` worker would wait forever
        and read as a deadlock. The globals a hook rebinds (``_shutdown = True``) get
        their values back when the execution ends (:meth:`restore_exit_globals`)."""
        if not any(t is not main and not t.finished and not t.daemon for t in self.threads):
            return
        for hook in self._exit_hooks(self):
            namespace = hook.namespace
            if namespace is not None:
                self._exit_globals.append((namespace, dict(namespace)))
            hook.call()

    def restore_exit_globals(self) -> None:
        """Give the module globals that exit hooks rebound their values back (the next
        execution, and the program after the exploration, see the module as before)."""
        for namespace, saved in reversed(self._exit_globals):
            for name in [name for name in namespace if name not in saved]:
                del namespace[name]
            for name, value in saved.items():
                if namespace.get(name, saved) is not value:
                    namespace[name] = value
        self._exit_globals.clear()

    def _fail_exception(self, lt: LogicalThread, exc: BaseException | None) -> None:
        self.fail(
            "exception",
            f"{type(exc).__name__} in thread {lt.index}:{lt.name}: {exc}",
            exception=exc,
            thread=lt,
        )
        lt.finished = True

    def release_controller(self) -> None:
        """Give control back to the controller: the execution is over (backends only)."""
        self.over = True
        # Already released when two failures race during teardown.
        with contextlib.suppress(RuntimeError):
            self._done.release()

    def internal_primitives(self) -> list[object]:
        """The harness's own real primitives (batons, the done lock): never a stall."""
        return [self._done, *(t.baton for t in self.threads if t.baton is not None)]

    def wait_done(self) -> None:
        """Controller side: wait until control comes back, or report a stall (watchdog)."""
        wait_for_controller(self)

    def first_decision(self) -> LogicalThread | None:
        """The thread to run first (None: nothing to run; an error is internal_error)."""
        try:
            return self._decide(None)
        except BaseException as exc:
            self.internal_error = exc
            return None

    # -- switching -------------------------------------------------------------------

    def switch(
        self,
        lt: LogicalThread,
        kind: str,
        resource: Hashable | None,
        label: str,
        *,
        enabled: Predicate | None = None,
        deadline: float | None = None,
        blocker: Blocker | None = None,
        location: str | None = None,
    ) -> bool:
        """A switch point of ``lt``: publish the pending op, let the strategy decide.

        Returns True when ``lt`` was chosen to run its operation, False when its timeout
        was chosen (only possible with a ``deadline``). Raises _Abort during teardown.
        """
        if self.aborting:
            raise _Abort
        # switch() is only called from inside lockstep, so the first frame that may be
        # the user's is its caller's caller (3 frames up from user_location).
        if location is None:
            location = user_location(3)
        ops = _OPS  # one OpDescriptor per (kind, label, location): they are values
        op = ops.get((kind, label, location))
        if op is None or op.resource is not resource:
            if len(ops) >= _MAX_INTERNED:
                ops.clear()
            op = ops[(kind, label, location)] = _new_op(kind, resource, label, location)
        lt.pending = op
        lt.enabled = enabled
        lt.deadline = deadline
        lt.blocker = blocker
        chosen = self._decide(lt)
        if chosen is not lt:
            self.backend.transfer(self, lt, chosen)
            if self.aborting:
                raise _Abort
        lt.pending = None
        lt.enabled = None
        lt.deadline = None
        lt.blocker = None
        return lt.wake_kind == "run"

    def sleep(self, lt: LogicalThread, secs: float) -> None:
        """``time.sleep(secs)`` of ``lt`` (``secs`` >= 0): a switch point ("sleep"), and the
        clock, when ``lt`` is next chosen, at least ``secs`` past where it was."""
        start = self._now
        self.switch(lt, "sleep", None, f"sleep({secs:g})", location=user_location(2))
        self._now = max(self._now, start + float(secs))

    def fail(
        self,
        kind: FailureKind,
        message: str,
        *,
        exception: BaseException | None = None,
        thread: LogicalThread | None = None,
        invariant: str | None = None,
        deadlock: tuple[BlockedThread, ...] = (),
        race: DataRace | None = None,
    ) -> None:
        """Record the execution's failure (the first one wins)."""
        if self.failure_info is None:
            self.failure_info = _FailureInfo(
                kind,
                message,
                exception=exception,
                thread=thread,
                invariant=invariant,
                deadlock=deadlock,
                race=race,
            )

    def _check_invariants(
        self, current: LogicalThread | None, invariants: list[Callable[[], object]]
    ) -> bool:
        self.in_invariant = True
        memory = self.memory  # its watched objects go quiet at an invariant's first read
        try:
            for invariant in invariants:
                try:
                    invariant()
                except _Abort:
                    raise
                except BaseException as exc:
                    name = getattr(invariant, "__qualname__", None) or repr(invariant)
                    detail = str(exc) or type(exc).__name__
                    self.fail(
                        "invariant",
                        f"invariant {name} violated after step {self.step - 1}: {detail}",
                        exception=exc,
                        thread=current,
                        invariant=name,
                    )
                    return False
        finally:
            if memory is not None:
                memory.wake_after_invariants()
            self.in_invariant = False
        return True

    def _at_rest(self) -> bool:
        """True when no live thread is stopped at a watched access (lockstep._memory):
        invariants describe the states between synchronisation operations, and an
        access switch point can sit in the middle of a critical section."""
        for t in self.threads:
            op = t.pending
            if op is not None and op.kind in ACCESS_KINDS and not t.finished:
                return False
        return True

    def _decide(self, current: LogicalThread | None) -> LogicalThread | None:
        """Pick the next thread (None: the execution is over or failed)."""
        if (
            self.failure_info is not None
            or self.aborting
            or self.internal_error is not None
            or self.restart
        ):
            return None
        # One pass over the threads (this runs at every step: keep it lean).
        choices: list[Choice] = []
        enabled: list[int] = []
        timeouts: list[int] = []
        pending: dict[int, OpDescriptor] = {}
        threads = self.threads
        for t in threads:
            if t.finished:
                continue
            op = t.pending
            if op is not None:
                pending[t.index] = op
            can_run = t.enabled
            if can_run is None or can_run():
                choices.append(t.run_choice)
                enabled.append(t.index)
            elif t.deadline is not None:
                choices.append(t.timeout_choice)
                timeouts.append(t.index)
        # Invariants run where another thread could run next (or the execution ends):
        # while the current thread is the only one that can go on, no other thread can
        # observe the state, so it is checked where that stretch ends instead (but for
        # the each_step ones: a bound on resources holds whoever looks).
        invariants = self.invariants  # each_step is a part of it: none when it is empty
        if invariants and current is not None:
            if len(choices) == 1 and choices[0] is current.run_choice:
                invariants = self.each_step
            if invariants and self._at_rest():
                self.enabled_now = enabled
                try:
                    if not self._check_invariants(current, invariants):
                        return None
                finally:
                    self.enabled_now = None
        # Some non-daemon thread is still alive (the main thread is one while it lives)?
        if threads[0].finished and all(t.finished or t.daemon for t in threads):
            return None  # every non-daemon thread finished: the execution is complete
        if not choices:
            at_exit = ""
            if self.threads[0].finished:
                at_exit = (
                    ": the main thread's code is done, and the interpreter would wait at "
                    "exit for ever for the non-daemon threads left (stop them before the "
                    "end, make them daemon threads, or patch the module whose exit hook "
                    "stops them)"
                )
            self.fail(
                "deadlock",
                f"deadlock after {self.step} steps: every live thread is blocked "
                f"and none has a pending timeout{at_exit}",
                deadlock=tuple(self._blocked_row(t) for t in self.threads if not t.finished),
            )
            return None
        if self.step >= self.max_steps:
            self.fail(
                "step_limit",
                f"step limit of {self.max_steps} reached (a livelock, a spin loop, or an "
                "execution longer than max_steps)",
                thread=current,
            )
            return None
        frozen_enabled = frozenset(enabled)
        frozen_timeouts = frozenset(timeouts) if timeouts else _NO_THREADS
        yielded = self._last_yielded and current is not None and current is self.last
        names = self._names_cache
        ctx = _new_context(
            StepContext,
            (
                self.step,
                None if current is None else current.index,
                frozen_enabled,
                frozen_timeouts,
                pending,
                names,
                self._now,
                yielded,
            ),
        )
        try:
            choice = self.strategy.choose(choices, ctx)
        except StrategyFailure as exc:
            kind: Any = exc.kind
            self.fail(kind, str(exc), exception=exc)
            return None
        except Exception as exc:
            # A bug in the strategy, not in the program under test: end the execution
            # and re-raise it from explore()/replay() instead of blaming a thread.
            self.internal_error = exc
            return None
        for offered in choices:  # identity first: strategies return the offered objects
            if offered is choice:
                break
        else:
            if choice not in choices:
                self.internal_error = LockstepError(
                    f"strategy {type(self.strategy).__name__} returned {choice!r}, "
                    f"which is not one of the choices {choices!r}"
                )
                return None
        chosen = self.threads[choice.thread]
        if choice.kind == "timeout":
            assert chosen.deadline is not None
            self._now = max(self._now, chosen.deadline)
        chosen.wake_kind = choice.kind
        op = chosen.pending
        assert op is not None
        self._rows.append(
            (
                chosen,
                op,
                choice,
                (
                    is_preemption(current.index, frozen_enabled, True, choice.thread)
                    if yielded and current is not None
                    else current is not None
                    and current.index in frozen_enabled
                    and choice.thread != current.index
                ),  # preemption: StepContext.is_preemption, inlined
                frozen_enabled,
                frozen_timeouts,
                pending,  # never changed after this step
                self._now,
            )
        )
        self.choices.append(choice)
        self.step += 1
        self.last = chosen
        self._last_yielded = choice.kind == "timeout" or op.kind == "sleep"
        return chosen

    @property
    def steps(self) -> Sequence[StepRecord]:
        """The step records so far, in order (built from the compact rows on first use,
        then extended as steps are added). Read-only: do not modify it."""
        built = self._steps_built
        rows = self._rows
        for index in range(len(built), len(rows)):
            chosen, op, choice, preemption, enabled, timeouts, pending, clock = rows[index]
            built.append(
                _new_record(
                    index,
                    chosen.index,
                    chosen.name,
                    op,
                    choice,
                    preemption,
                    enabled,
                    timeouts,
                    tuple(pending.items()),  # built in thread-index order
                    clock,
                )
            )
        return built

    def step_ops(self) -> Iterator[OpDescriptor]:
        """The operation of each step so far, in order (builds no step record)."""
        return map(_ROW_OP, self._rows)

    def _all_steps(self) -> tuple[StepRecord, ...]:
        return tuple(self.steps)

    def _blocked_row(self, t: LogicalThread) -> BlockedThread:
        op = t.pending
        blocker = t.blocker
        holders = () if blocker is None else tuple(blocker._ls_holders(self))
        return BlockedThread(
            thread=t.index,
            thread_name=t.name,
            operation=op.kind if op else "?",
            resource=op.label if op else "?",
            holders=holders,
            location=op.location if op else "?",
        )

    # -- controller side ---------------------------------------------------------------

    def execute(self, scenario: Callable[[], object]) -> None:
        """Run ``scenario`` as thread 0 "main" until it completes or fails; tear down."""
        if in_run():
            raise LockstepError("cannot start a lockstep execution from inside another one")
        self.new_thread("main", scenario, daemon=False, thread_obj=None)
        self.backend.execute(self)
        if self.internal_error is not None:
            raise self.internal_error

    # -- results -----------------------------------------------------------------------

    def schedule(self) -> Schedule:
        """The schedule of this execution (the template's provenance, these choices)."""
        return self.schedule_template.with_choices(self.choices)

    def trace(self) -> Trace:
        """The step trace of this execution."""
        return Trace(self._all_steps(), self.thread_names)

    def failure(self) -> Failure | None:
        """The Failure value of this execution, or None if it passed."""
        info = self.failure_info
        return None if info is None else self._failure_of(info)

    def failure_after(
        self, kind: FailureKind, message: str, *, exception: BaseException | None = None
    ) -> Failure:
        """A Failure of this finished execution for a verdict reached after it ended (a
        strategy's ``end_execution`` raising, a replay with choices left over): its
        schedule and trace, no thread. Records nothing: :meth:`failure` is unchanged.
        Every Failure of an execution is built here or by :meth:`failure`."""
        return self._failure_of(_FailureInfo(kind, message, exception=exception))

    def _failure_of(self, info: _FailureInfo) -> Failure:
        thread = info.thread
        message = info.message
        if info.kind == "stall" and self.leaked:
            message += (
                f" ({self.leaked} thread(s) could not be unwound and were abandoned: "
                "daemon threads, they cannot keep the process alive)"
            )
        schedule = self.schedule()
        failure = Failure(
            kind=info.kind,
            message=message,
            schedule=schedule,
            trace=self.trace(),
            exception=info.exception,
            thread=None if thread is None else thread.index,
            thread_name=None if thread is None else thread.name,
            invariant=info.invariant,
            deadlock=info.deadlock,
            race=info.race,
        )
        # The saved schedule says what failed, so a replay can tell this failure from another.
        recorded = schedule.with_failure(RecordedFailure(*failure.signature))
        return attrs.evolve(failure, schedule=recorded)

    def outcome(self) -> ExecutionOutcome:
        """What the strategy's end_execution receives."""
        return ExecutionOutcome(
            tuple(self.choices), LazySteps(len(self._rows), self._all_steps), self.failure()
        )


def _line_switch(lt: LogicalThread, location: str) -> None:
    lt.run.switch(lt, "line", None, location, location=location)


def make_line_tracer(
    files: frozenset[str],
    *,
    from_tracer: Callable[[Callable[..., object], tuple[Any, ...]], object] | None = None,
) -> Callable[[FrameType, str, Any], Any]:
    """A ``sys.settrace`` function making every line of ``files`` a switch point.

    ``from_tracer(fn, args)``, when given, is how the switch is called from inside the
    trace function (the greenlet backend passes ``sys.call_tracing``).
    """

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            lt = current_logical_thread()
            if lt is not None and not lt.run.in_invariant:
                location = f"{frame.f_code.co_filename}:{frame.f_lineno}"
                if from_tracer is None:
                    _line_switch(lt, location)
                else:
                    from_tracer(_line_switch, (lt, location))
        return local

    def global_(frame: FrameType, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename in files:
            return local
        return None

    return global_


def checkpoint(label: str, *, resource: Hashable | None = None) -> None:
    """A switch point inside a lockstep run; a no-op outside one.

    ``label`` names the point in traces. Checkpoints with the same ``resource`` are
    dependent (DPOR explores their reorderings); ``resource=None`` conflicts with
    nothing. Raises InvalidArgumentType for a non-str label or unhashable resource.
    Inside an invariant it does nothing.
    """
    if not isinstance(label, str):
        raise InvalidArgumentType(f"checkpoint label must be a str, got {label!r}")
    if resource is not None:
        try:
            hash(resource)
        except TypeError as exc:
            raise InvalidArgumentType(
                f"checkpoint resource must be hashable, got {resource!r}"
            ) from exc
    lt: LogicalThread | None = getattr(_tls, "thread", None)
    if lt is None or lt.run.in_invariant:
        return
    lt.run.switch(lt, "checkpoint", resource, label)


def add_invariant(fn: Callable[[], object], *, each_step: bool = False) -> None:
    """Register ``fn`` for the current execution; it runs at every switch point where
    another thread could run next, and where the execution ends, unless a thread is
    stopped at a watched access (those can sit inside a critical section).

    Where the running thread is the only one that can go on, no other thread can
    observe the state, so it is checked where that stretch ends instead: a violation
    the stretch repairs before another thread can run is not reported, one that lasts
    is reported at the stretch's end. ``each_step=True`` runs ``fn`` at those switch
    points too: for a bound on resources (models loaded, memory in use), which is
    broken whether or not another thread could see it.

    ``fn()`` raising (usually AssertionError) is an "invariant" failure. It runs with
    every thread stopped; lock operations inside it are no-ops and waits are errors.
    Raises NotInRunError outside a run, InvalidArgumentType if ``fn`` is not callable
    or ``each_step`` not a bool.
    """
    if not callable(fn):
        raise InvalidArgumentType(f"add_invariant expects a callable, got {fn!r}")
    if not isinstance(each_step, bool):
        raise InvalidArgumentType(f"add_invariant's each_step must be a bool, got {each_step!r}")
    lt = current_logical_thread()
    if lt is None:
        raise NotInRunError(
            "add_invariant() only works inside a lockstep execution (call it from the "
            "scenario); pass invariant= to explore() to check one in every execution"
        )
    lt.run.invariants.append(fn)
    if each_step:
        lt.run.each_step.append(fn)

"""Backends: the same choices give the same trace; what a thread sees is its own.

Every test here runs on both backends (the ``backend`` fixture of conftest.py). The
cross-backend tests record executions on the fixture's backend and replay them on the
other one, so each direction is checked once.
"""

from __future__ import annotations

import contextvars
import pathlib
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import pytest
import samples.racy_module as racy
from ls_helpers import GREENLET_UNAVAILABLE, BackendSeen, needs_greenlet
from samples.golden_scenarios import pipeline

import lockstep
from lockstep import PCTStrategy, RandomStrategy, Schedule, explore, replay, spawn
from lockstep._backend import (
    BACKEND_NAMES,
    ENV_VAR,
    BackendUnavailable,
    default_backend,
    make_backend,
    set_default_backend,
)
from lockstep.errors import InvalidArgument, InvalidArgumentType
from lockstep.strategies import Choice, ExecutionOutcome, StepContext

OTHER = {"greenlet": "thread", "thread": "greenlet"}


class Recorder:
    """Wraps a strategy and keeps every execution's choices, step records and failure."""

    def __init__(self, inner: lockstep.Strategy) -> None:
        self.inner = inner
        self.capabilities = inner.capabilities
        self.runs: list[tuple[tuple[Choice, ...], tuple[Any, ...], Any]] = []

    def begin_execution(self) -> None:
        self.inner.begin_execution()

    def choose(self, choices: Sequence[Choice], step: StepContext) -> Choice:
        return self.inner.choose(choices, step)

    def end_execution(self, outcome: ExecutionOutcome) -> bool:
        self.runs.append((outcome.choices, tuple(outcome.steps), outcome.failure))
        return self.inner.end_execution(outcome)


def _failure_key(failure: Any) -> tuple[str, str] | None:
    return None if failure is None else (failure.kind, failure.message)


def _explore_and_replay_elsewhere(
    scenario: Callable[[], object], backend: str, strategies: Sequence[lockstep.Strategy], **kw: Any
) -> int:
    """Explore on ``backend``; replay every execution on the other one; compare."""
    compared = 0
    for strategy in strategies:
        recorder = Recorder(strategy)
        explore(scenario, strategy=recorder, budget=25, shrink=False, **kw)
        for choices, steps, failure in recorder.runs:
            again = replay(
                scenario,
                Schedule(choices=choices, granularity=kw.get("granularity", "op")),
                backend=OTHER[backend],
                line_modules=kw.get("line_modules"),
            )
            assert again.trace.steps == steps  # every field of every step record
            assert _failure_key(again.failure) == _failure_key(failure)
            compared += 1
    return compared


@needs_greenlet
def test_every_primitive_gives_the_same_trace_on_the_other_backend(backend):
    """Executions of a scenario using every primitive (queue, event, RLock, semaphore,
    condition with timeouts, sleep, timed join) replay on the other backend with equal
    step records: thread, operation, location, enabled set, pending ops, clock."""
    strategies = [RandomStrategy(seed) for seed in range(3)] + [PCTStrategy(seed=7)]
    assert _explore_and_replay_elsewhere(pipeline, backend, strategies) >= 10


@needs_greenlet
def test_line_granularity_gives_the_same_trace_on_the_other_backend(backend):
    """Traced lines are switch points on both backends (greenlets switch from inside the
    trace function) and the same choices give the same line-level trace."""

    def scenario():
        counter = racy.Counter()
        threads = [spawn(counter.increment) for _ in range(2)]
        for t in threads:
            t.join()
        if counter.value != 2:  # not `assert`: pytest would add the object's address
            raise AssertionError(f"lost update: {counter.value}")

    recorder = Recorder(RandomStrategy(3))
    result = explore(
        scenario,
        strategy=recorder,
        budget=300,
        shrink=False,
        granularity="line",
        line_modules=[racy],
    )
    assert result.failure is not None  # the race needs a switch between two lines
    assert any(step.op.kind == "line" for step in result.failure.trace.steps)
    compared = _explore_and_replay_elsewhere(
        scenario, backend, [RandomStrategy(3)], granularity="line", line_modules=[racy]
    )
    assert compared >= 1


def test_identity_locals_and_context_are_per_logical_thread(backend):
    """get_ident/native_id/current_thread/name/main_thread are each thread's own;
    threading.local and contextvars do not leak between logical threads."""
    local = lockstep.threading.local()
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    seen: dict[Any, Any] = {}

    def worker(n: int) -> None:
        me = lockstep.threading.current_thread()
        seen[n] = {
            "ident": lockstep.threading.get_ident(),
            "native": lockstep.threading.get_native_id(),
            "thread": me,
            "name": me.name,
            "main": lockstep.threading.main_thread(),
            "context_at_start": var.get(),
            "local_at_start": getattr(local, "n", None),
        }
        var.set(f"w{n}")
        local.n = n
        lockstep.checkpoint("switch", resource="shared")
        seen[n]["after_switch"] = (
            local.n,
            var.get(),
            lockstep.threading.get_ident(),
            lockstep.threading.current_thread(),
        )

    def scenario():
        seen.clear()
        var.set("main")
        local.n = "main"
        threads = [spawn(worker, n, name=f"w{n}") for n in range(3)]
        for t in threads:
            t.join()
        seen["main"] = (var.get(), local.n, lockstep.threading.current_thread(), threads)

    for seed in range(4):
        result = explore(scenario, strategy=RandomStrategy(seed), budget=1, shrink=False)
        assert result.failure is None, result.failure
        context, local_n, main_thread, threads = seen["main"]
        assert (context, local_n) == ("main", "main")
        idents = [seen[n]["ident"] for n in range(3)]
        assert len(set(idents)) == 3
        assert lockstep.threading.get_ident() not in idents  # outside the run: the real one
        for n, thread in enumerate(threads):
            record = seen[n]
            assert record["thread"] is thread
            assert record["name"] == f"w{n}"
            assert record["ident"] == record["native"] == thread.ident == thread.native_id
            assert record["main"] is main_thread
            assert record["context_at_start"] == "unset"  # a new thread: a fresh context
            assert record["local_at_start"] is None
            assert record["after_switch"] == (n, f"w{n}", record["ident"], thread)


def test_exception_state_and_tracebacks_are_per_thread(backend):
    """A thread parked inside an ``except`` block keeps its own sys.exc_info(); a
    failing thread's traceback holds only its own frames."""
    handled: dict[str, Any] = {}

    def handler(name: str, exc_type: type[Exception]) -> None:
        try:
            raise exc_type(name)
        except exc_type:
            lockstep.checkpoint(f"in {name}'s handler", resource="r")
            handled[name] = sys.exc_info()[1]

    def scenario():
        a = spawn(handler, "a", KeyError)
        b = spawn(handler, "b", ValueError)
        a.join()
        b.join()

    for seed in range(6):
        handled.clear()
        assert explore(scenario, strategy=RandomStrategy(seed), budget=1).failure is None
        assert isinstance(handled["a"], KeyError)
        assert isinstance(handled["b"], ValueError)

    def quiet() -> None:
        lockstep.checkpoint("quiet", resource="r")

    def failing() -> None:
        lockstep.checkpoint("failing", resource="r")
        raise RuntimeError("boom")

    def scenario_fails():
        q = spawn(quiet)
        f = spawn(failing)
        q.join()
        f.join()

    failure = explore(scenario_fails, budget=5, shrink=False).failure
    assert failure is not None
    assert failure.kind == "exception"
    assert failure.thread_name is not None
    assert "failing" in failure.thread_name
    names = [frame.name for frame in traceback.extract_tb(failure.exception.__traceback__)]
    assert "failing" in names
    assert "quiet" not in names
    assert "scenario_fails" not in names


def test_stall_is_reported_with_thread_and_location_and_the_process_stays_usable(backend):
    """A thread blocked on a real lock is reported after stall_timeout, naming the
    thread and the line it is stuck on; the next exploration runs normally."""
    real = threading.Lock()
    real.acquire()

    def stuck() -> None:
        real.acquire()  # STUCK HERE

    def scenario():
        spawn(stuck, name="stuck-one").join()

    try:
        failure = explore(scenario, budget=3, stall_timeout=0.3, shrink=False).failure
    finally:
        real.release()
    assert failure is not None
    assert failure.kind == "stall"
    assert "stalled" in failure.message
    assert "1:stuck-one" in failure.message
    source = pathlib.Path(__file__).read_text().splitlines()
    line = next(i for i, text in enumerate(source, 1) if "# STUCK HERE" in text)
    assert f"test_ls_backends.py:{line}" in failure.message
    if backend == "greenlet":
        assert "backend='thread'" in failure.message
    # The process is still usable: the same backend runs the next exploration.
    again = explore(pipeline, strategy=RandomStrategy(0), budget=3)
    assert again.executions >= 1


def test_backend_argument_is_validated(backend, monkeypatch):
    """A bad backend name or type is refused before anything runs, naming the choices."""
    with pytest.raises(InvalidArgument, match=r"unknown backend 'fibres'.*'greenlet', 'thread'"):
        explore(pipeline, backend="fibres")
    with pytest.raises(InvalidArgumentType, match="backend must be one of"):
        replay(pipeline, Schedule(choices=()), backend=3)  # type: ignore[arg-type]
    monkeypatch.setenv(ENV_VAR, "fibres")
    with pytest.raises(InvalidArgument, match="LOCKSTEP_BACKEND='fibres' names no backend"):
        explore(pipeline, budget=1)


def test_default_backend_precedence(backend, monkeypatch):
    """set_default_backend beats LOCKSTEP_BACKEND, which beats the automatic choice."""
    assert default_backend() == backend  # the fixture sets the environment variable
    previous = set_default_backend(OTHER[backend])
    try:
        assert default_backend() == OTHER[backend]
    finally:
        set_default_backend(previous)
    monkeypatch.delenv(ENV_VAR)
    # the fast one where it can run (installed, and the GIL stays as it is), else thread
    assert default_backend() == ("greenlet" if GREENLET_UNAVAILABLE is None else "thread")


def test_missing_greenlet_names_the_thread_backend(backend, monkeypatch):
    """Without greenlet, asking for it says how to install it or which backend to use
    (test_ls_backend_fallback.py has the rest: the automatic choice and how it is said)."""
    import lockstep._backend as backends

    monkeypatch.setattr(backends, "_unavailable", [])
    monkeypatch.setitem(sys.modules, "greenlet", None)  # its import fails
    with pytest.raises(BackendUnavailable, match=r"pip install greenlet.*backend='thread'"):
        make_backend("greenlet")
    monkeypatch.delenv(ENV_VAR)
    assert default_backend() == "thread"


@needs_greenlet
def test_backend_names_are_the_two_implementations(backend):
    """Each name builds a backend of that name."""
    assert BACKEND_NAMES == ("greenlet", "thread")
    for name in BACKEND_NAMES:
        made = make_backend(name)
        try:
            assert made.name == name
        finally:
            made.close()


def test_unpatched_code_sees_one_os_thread_on_the_greenlet_backend(backend):
    """The documented limit: the real threading.get_ident() tells logical threads apart
    only on the thread backend (patched code gets lockstep's ident on both)."""
    real_idents: list[int] = []

    def scenario():
        both_alive = lockstep.threading.Barrier(2)

        def worker() -> None:
            both_alive.wait()  # (an ended OS thread's ident may be reused)
            real_idents.append(threading.get_ident())

        threads = [spawn(worker) for _ in range(2)]
        for t in threads:
            t.join()

    assert explore(scenario, budget=1).failure is None
    assert len(set(real_idents)) == (1 if backend == "greenlet" else 2)


@needs_greenlet
def test_cli_backend_option(backend, monkeypatch, tmp_path):
    """--backend on explore/replay/show/check picks the backend; a bad one exits 2."""
    import io

    from lockstep import _check as check
    from lockstep import _cli as cli
    from lockstep.suites import LoadedSuite

    def run_cli(*argv: str) -> tuple[int, str]:
        out = io.StringIO()
        return cli.main(list(argv), out=out), out.getvalue()

    chosen: list[str | None] = []
    real_explore, real_replay = cli.explore, cli.replay

    def spy_explore(*args: Any, **kwargs: Any) -> Any:
        chosen.append(args[1].backend)  # explore(scenario, settings, ...)
        return real_explore(*args, **kwargs)

    def spy_replay(*args: Any, **kwargs: Any) -> Any:
        chosen.append(args[2].backend)  # replay(scenario, schedule, settings, ...)
        return real_replay(*args, **kwargs)

    monkeypatch.setattr(cli, "explore", spy_explore)
    monkeypatch.setattr(cli, "replay", spy_replay)
    other = OTHER[backend]
    scenario = "samples.cli_scenarios:lost_update"
    code, text = run_cli(
        "explore", scenario, "--budget", "300", "--save-dir", str(tmp_path), "--backend", other
    )
    assert code == cli.EXIT_FAILURE
    saved = sorted(tmp_path.glob("*.json"))[0]
    code, text = run_cli("replay", str(saved), "--backend", other)
    assert code == cli.EXIT_FAILURE
    assert f"--backend {other}" in text  # the replay command says how it was replayed
    assert run_cli("show", str(saved), "--backend", other)[0] == cli.EXIT_OK
    assert chosen == [other, other, other]
    suite = BackendSeen()
    monkeypatch.setattr(check, "discover_suites", lambda: [LoadedSuite("s", "m:S", suite, None)])
    assert run_cli("check", "--backend", other)[0] == 0
    assert run_cli("check")[0] == 0
    assert suite.seen == [other, backend]  # and the variable is restored afterwards
    assert run_cli("explore", scenario, "--backend", "fibres")[0] == cli.EXIT_USAGE


PLUGIN_TEST_FILE = """
import threading

import pytest
import lockstep

SEEN = []


def _record():
    SEEN.append(threading.get_ident())
    lockstep.checkpoint("x")


def _scenario():
    gate = lockstep.threading.Barrier(2)

    def worker():
        gate.wait()
        _record()

    threads = [lockstep.spawn(worker) for _ in range(2)]
    for t in threads:
        t.join()


@pytest.mark.lockstep(budget=1, backend="thread")
def test_marked_thread():
    SEEN.clear()
    _scenario()
    assert len(set(SEEN)) == 2  # an OS thread per logical thread


@pytest.mark.lockstep(budget=1)
def test_unmarked():
    SEEN.clear()
    _scenario()
    assert len(set(SEEN)) == 1  # the greenlet backend: one OS thread
"""


@needs_greenlet
def test_plugin_marker_and_option_choose_the_backend(backend, pytester, monkeypatch):
    """The marker's backend wins; --lockstep-backend sets it for unmarked tests."""
    monkeypatch.delenv(ENV_VAR)
    pytester.makepyfile(test_backends=PLUGIN_TEST_FILE)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    result = pytester.runpytest("-p", "no:cacheprovider", "--lockstep-backend", "thread")
    result.assert_outcomes(passed=1, failed=1)  # test_unmarked now has two OS threads
    result = pytester.runpytest("-p", "no:cacheprovider", "--lockstep-backend", "fibres")
    assert result.ret != 0


def test_real_lock_held_across_a_switch_is_diagnosed_on_both_backends(backend):
    """A parked thread holds a real lock the running one waits for: a stall on both.
    The thread backend unwinds the holder on its own OS thread, which releases the
    waiter. On the greenlet backend (its documented limit) the holder is parked on the
    carrier the waiter blocks, so it cannot unwind: the carrier is abandoned (the
    message says so, and names the backend to use instead) and the process goes on."""
    real = threading.Lock()

    def holder() -> None:
        with real:
            lockstep.checkpoint("inside the real lock")

    def waiter() -> None:
        with real:  # the waiter blocks here
            pass

    def scenario() -> None:
        a = spawn(holder)
        b = spawn(waiter)
        a.join()
        b.join()

    result = explore(
        scenario, strategy=RandomStrategy(0), budget=200, stall_timeout=600.0, stall_diagnosis=0.2
    )
    failure = result.failure
    assert failure is not None
    assert failure.kind == "stall"
    assert result.shrink_executions == 0
    if backend == "thread":
        assert "abandoned" not in failure.message
        assert not real.locked()
    else:
        assert "abandoned" in failure.message
        assert "backend='thread'" in failure.message
        assert real.locked()  # held by the abandoned holder for good
    assert explore(pipeline, strategy=RandomStrategy(0), budget=3).executions >= 1
    if real.locked():
        real.release()  # lets the abandoned carrier finish unwinding and exit (no leak)


def _one_after_another(var: contextvars.ContextVar[str], seen: list[Any]) -> Callable[[], None]:
    """main starts a thread, joins it, starts the next: each thread leaves context, an
    exception being handled and its greenlet behind for the next one to find."""

    def worker(n: int) -> None:
        seen.append((n, var.get(), sys.exc_info()[1], _greenlet()))
        var.set(f"w{n}")
        try:
            raise KeyError(n)
        except KeyError:
            lockstep.checkpoint("inside an except block")

    def scenario() -> None:
        seen.append(("main", var.get(), sys.exc_info()[1], _greenlet()))
        var.set("main")
        for n in range(3):
            t = spawn(worker, n)
            t.join()

    return scenario


def _greenlet() -> object:
    """The running greenlet (the object, kept: an id could be reused once it is freed);
    None where the greenlet backend cannot run (greenlet is not imported there)."""
    if GREENLET_UNAVAILABLE is not None:
        return None
    import greenlet

    return greenlet.getcurrent()


def test_a_thread_starts_afresh_in_every_execution(backend):
    """Every logical thread, in every execution of a session, starts with an empty
    contextvars context and no exception being handled, whatever ran before it on the
    same OS thread or greenlet (the greenlet backend reuses parked workers)."""
    var: contextvars.ContextVar[str] = contextvars.ContextVar("fresh", default="unset")
    seen: list[Any] = []
    result = explore(_one_after_another(var, seen), strategy=RandomStrategy(0), budget=5)
    assert result.failure is None, result.failure
    assert result.executions == 5
    assert len(seen) == 5 * 4
    assert {(who, context, exc) for who, context, exc, _ in seen} == {
        (who, "unset", None) for who in ("main", 0, 1, 2)
    }


@needs_greenlet
def test_the_greenlet_backend_runs_threads_on_reused_workers():
    """A logical thread that ended leaves its worker greenlet to the next one (a new
    greenlet's first switch costs far more than resuming a parked one): five executions
    of main plus three threads, one at a time, use two greenlets in all."""
    var: contextvars.ContextVar[str] = contextvars.ContextVar("reuse", default="unset")
    seen: list[Any] = []
    result = explore(
        _one_after_another(var, seen), strategy=RandomStrategy(0), budget=5, backend="greenlet"
    )
    assert result.failure is None, result.failure
    assert len({glet for *_, glet in seen}) == 2


def test_executions_after_a_torn_down_one_run_every_thread_from_its_start(backend):
    """A thread's exception ends an execution with others suspended mid-body and one
    never started; the hub unwinds them and (greenlet backend) parks their workers.
    Shrinking then runs more executions in the same session on those workers: each
    thread still runs its body once, from the start, and the shrunk schedule replays
    to the same trace."""
    starts: list[list[str]] = []

    def scenario() -> None:
        starts.append([])
        names = starts[-1]
        flag: list[int] = []

        def late() -> None:
            names.append("late")

        def setter() -> None:
            names.append("setter")
            lockstep.checkpoint("before setting")
            flag.append(1)

        def checker() -> None:
            names.append("checker")
            lockstep.checkpoint("before looking")
            if not flag:
                raise RuntimeError("looked too early")

        threads = [spawn(late), spawn(setter), spawn(checker)]
        for t in threads:
            t.join()

    result = explore(scenario, strategy=RandomStrategy(3), budget=200)
    assert result.failure is not None
    assert result.failure.kind == "exception"
    assert result.shrink_executions > 0
    assert all(len(names) == len(set(names)) for names in starts)  # no body ran twice
    assert any("late" not in names for names in starts)  # torn down before it started
    again = replay(scenario, result.failure.schedule)
    assert again.failure is not None
    assert again.failure.kind == "exception"
    assert again.trace.steps == result.failure.trace.steps

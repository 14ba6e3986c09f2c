"""explore() and replay(): run a scenario under a strategy, many times or once.

A *scenario* is a zero-argument callable run as logical thread 0 ("main") in each
execution; it builds fresh state, spawns threads, may join them and assert. explore()
runs executions until the budget is spent, the strategy says its space is exhausted,
or an execution fails; a failure is shrunk (fewest preemptions, then fewest steps) and
returned with its schedule, trace and replay command.
"""

from __future__ import annotations

import operator
import os
import sys
import time as _real_time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Final, Unpack

import attrs

from lockstep._backend import open_backend
from lockstep._backend_protocol import SessionAbandoned
from lockstep._execution import (
    ModuleRef,
    Scenario,
    check_scenario,
    make_options,
    module_names,
    replay_command_for,
    run_execution,
    scenario_id_of,
)
from lockstep._failure import Failure
from lockstep._gc import fewer_collections
from lockstep._imports import import_roots
from lockstep._names import check_names
from lockstep._patching import patched, resolve_module
from lockstep._results import Coverage, ExecutionResult, ExploreResult, Verdict
from lockstep._runtime import ACCESS_KINDS, Run
from lockstep._schedule import Schedule
from lockstep._settings import (
    REPLAY_FIELDS,
    ReplayChanges,
    Settings,
    SettingsChanges,
    settings_with,
)
from lockstep._shrink import shrink_failure
from lockstep.errors import (
    InvalidArgument,
    InvalidArgumentType,
    LockstepError,
    StrategyFailure,
)
from lockstep.strategies._base import Strategy, check_strategy
from lockstep.strategies._random import RandomStrategy
from lockstep.strategies._replay import ReplayStrategy

__all__ = ["explore", "replay"]

# The clock of time_budget (a module attribute so tests can inject a deterministic one).
_now: Callable[[], float] = _real_time.monotonic

# A step-limit failure costs max_steps per candidate, divergence/nondeterminism are
# properties of the scenario rather than of one interleaving, and a stall (a thread
# stuck in uncontrolled code) would cost a stall per candidate: those are not shrunk.
_NOT_SHRUNK = frozenset({"step_limit", "divergence", "nondeterminism", "stall"})


def _patch_context(patch: Iterable[ModuleRef]) -> AbstractContextManager[Any]:
    modules = tuple(patch)
    if not modules:
        return nullcontext()
    return patched(*modules)


class _Progress:
    """A one-line progress display on stderr, only when attached to a terminal."""

    def __init__(self, enabled: bool | None, budget: int) -> None:
        if enabled is None:
            enabled = sys.stderr.isatty() and "PYTEST_CURRENT_TEST" not in os.environ
        self.enabled = enabled
        self.budget = budget
        self.start = _real_time.monotonic()
        self.last = self.start
        self.shown = False

    def update(self, executions: int) -> None:
        if not self.enabled:
            return
        now = _real_time.monotonic()
        if now - self.last < 0.5 or now - self.start < 1.0:
            return
        self.last = now
        rate = executions / max(now - self.start, 1e-9)
        sys.stderr.write(f"\rlockstep: {executions}/{self.budget} executions ({rate:.0f}/s)")
        sys.stderr.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\r" + " " * 60 + "\r")
            sys.stderr.flush()


def explore(
    scenario: Scenario,
    settings: Settings | None = None,
    *,
    strategy: Strategy | None = None,
    invariant: Callable[[], object] | Sequence[Callable[[], object]] | None = None,
    patch: Iterable[ModuleRef] = (),
    scenario_id: str | None = None,
    line_modules: Iterable[ModuleRef] = (),
    import_modules: Iterable[ModuleRef] = (),
    **changes: Unpack[SettingsChanges],
) -> ExploreResult:
    """Run ``scenario`` under ``strategy`` (default RandomStrategy(seed=0)) up to ``budget`` times.

    How it runs is ``settings`` (a :class:`lockstep.Settings`; None: the defaults), the
    field names below (``budget``, ``shrink``, ``stall_diagnosis``, ...) are its fields.
    Keyword ``changes`` are applied to it (``explore(s, budget=5)`` is
    ``explore(s, Settings(budget=5))``, kept so short calls stay short), validated and
    refused the same way (an unknown name says the nearest known one). The arguments
    that describe the code under test (``invariant``, ``patch``, ``line_modules``,
    ``import_modules``, ``scenario_id``) and the stateful ``strategy`` are not settings.

    Stops at the first failing execution (``keep_going``: searches on until the budget
    or the strategy ends, and ``result.failures`` holds the first failure of every
    distinct kind and label found, first one first, so one failure never hides
    another; it still stops at a failure that says lockstep could not run the code: a
    stall, step limit, nondeterminism, a lockstep error such as an uncontrolled thread,
    a race near uncontrolled synchronisation); with ``shrink`` (default) the first failure is
    minimised (at most ``shrink_budget`` extra executions) and carries its schedule,
    trace and replay command. ``invariant`` (a callable or several) runs at every switch
    point of every execution. ``patch`` modules have their threading/time/queue/heapq/datetime names
    swapped for the whole exploration; every schedule produced records their dotted
    names (``Schedule.patch``, and ``Schedule.line_modules``), so the replay command
    needs no flags. A thread blocked in an uncontrolled primitive (a real lock of an
    unpatched module) is diagnosed from evidence after ``stall_diagnosis`` seconds
    (None: off), anything else that stops reaching switch points after
    ``stall_timeout`` seconds; both end the execution with a "stall" failure naming the
    thread and what to patch. Every schedule also records the import roots of the
    scenario's, the patched and the ``import_modules`` modules that the environment
    does not provide by itself (``Schedule.import_paths``), so its replay command works
    from any directory. ``granularity="line"`` adds a switch point at
    every line of ``line_modules`` (such schedules follow the interpreter's line events
    and may not replay on another CPython version; "op" schedules do). Step-limit,
    divergence, nondeterminism and stall failures are not shrunk. ``backend`` names where the
    logical threads run (see ``docs/backends.md``; None: the default); it changes no
    schedule. ``races`` (default True): a data race on watched state
    (``lockstep.watch``) is a failure of kind "data-race", reported at the first
    execution where two accesses, one a write, are not ordered by synchronisation,
    whichever order they ran in; with False, watched accesses are still switch points
    and DPOR dependencies, so the search looks for what the race leads to instead
    (``docs/races.md``). ``time_budget`` (seconds of wall time, None: no limit) stops
    the search cleanly between two executions once it is spent; the result's
    ``verdict`` then says it was cut short (shrinking a failure is not limited by it).
    ``result.verdict`` states what was established (:class:`lockstep.ExploreResult`).
    Raises InvalidArgument / InvalidArgumentType for bad arguments (before running
    anything).
    """
    check_scenario(scenario)
    settings = settings_with(settings, changes)
    if strategy is None:
        strategy = RandomStrategy(seed=0)
    declared = check_strategy(strategy)
    if scenario_id is not None and (not isinstance(scenario_id, str) or ":" not in scenario_id):
        raise InvalidArgument(f"scenario_id must look like 'module:qualname', got {scenario_id!r}")
    patch_modules = tuple(patch)
    line_list = tuple(line_modules)
    patch_names = module_names(patch_modules)
    options = make_options(settings, invariant=invariant, line_modules=line_list)
    template = Schedule(
        choices=(),
        seed=declared.seed,
        strategy=declared.name or type(strategy).__name__,
        scenario_id=scenario_id if scenario_id is not None else scenario_id_of(scenario),
        granularity=settings.granularity,
        patch=patch_names,
        line_modules=module_names(line_list),
        races=settings.races,
        import_paths=_import_paths(scenario, (*patch_modules, *line_list, *import_modules)),
    )
    start = _real_time.perf_counter()
    tally = _Tally()
    budget, time_budget = settings.budget, settings.time_budget
    progress_display = _Progress(settings.progress, budget)
    deadline = None if time_budget is None else _now() + float(time_budget)

    def body() -> None:
        try:
            for _ in range(budget):
                if deadline is not None and tally.executions and _now() >= deadline:
                    tally.out_of_time = True
                    break
                strategy.begin_execution()
                run = run_execution(scenario, strategy, options, template, session)
                tally.count(run)
                outcome = run.outcome()
                try:
                    more = strategy.end_execution(outcome)
                except StrategyFailure as exc:
                    kind: Any = exc.kind
                    tally.failure = run.failure_after(kind, str(exc), exception=exc)
                    tally.failed_at = tally.executions
                    break
                if outcome.failure is not None:
                    if tally.failure is None:
                        tally.failure = outcome.failure
                        tally.failed_at = tally.executions
                    tally.distinct.setdefault(outcome.failure.signature, outcome.failure)
                    if not settings.keep_going or _harness_failure(outcome.failure):
                        break
                progress_display.update(tally.executions)
                if not more:
                    tally.exhausted = True
                    break
        finally:
            progress_display.close()
        failed = tally.failure
        if failed is not None and settings.shrink and failed.kind not in _NOT_SHRUNK:
            tally.failure, tally.shrink_runs = shrink_failure(
                scenario, failed, options, budget=settings.shrink_budget, backend=session
            )

    with (
        _patch_context(patch_modules),
        open_backend(options.backend) as session,
        fewer_collections(),
    ):
        try:
            session.run_session(body)
        except SessionAbandoned as abandoned:  # stuck in uncontrolled code: report it as is
            tally.count(abandoned.run)
            tally.failure = abandoned.run.failure()
            tally.failed_at = tally.executions
    failure = tally.failure
    executions, exhausted, out_of_time = tally.executions, tally.exhausted, tally.out_of_time
    if failure is not None and failure.replay_command is None:
        failure = failure.with_replay_command(replay_command_for(failure.schedule))
    others = [
        f for f in tally.distinct.values() if failure is None or f.signature != failure.signature
    ]
    failures = tuple(
        ([] if failure is None else [failure])
        + [f.with_replay_command(replay_command_for(f.schedule)) for f in others]
    )
    elapsed = _real_time.perf_counter() - start
    # Read again at the end: a bound may depend on what the search saw (PCT's on the
    # threads and steps, an iterative DPOR's on how deep it went).
    declared = strategy.capabilities
    bound = declared.probability_bound
    systematic = declared.systematic
    coverage: Coverage
    if failure is not None:
        coverage = "failed"
    elif exhausted and systematic:
        # A reducing search (DPOR) did not reorder the declared locations seen unordered.
        coverage = "partial" if tally.unordered and declared.reduces else "complete"
    elif out_of_time:
        coverage = "time-budget"
    elif systematic:
        coverage = "execution-budget"
    else:
        coverage = "sampled"
    preemption_bound = declared.preemption_bound if systematic else None
    verdict = Verdict(
        coverage,
        executions,
        template.strategy,
        template.seed,
        preemption_bound=preemption_bound,
        watched=tally.watched,
        races_checked=tally.watched and settings.races,
        benign=tuple(sorted(tally.declared)),
        failure_kind=None if failure is None else failure.kind,
        time_budget=None if time_budget is None else float(time_budget),
        unordered=tuple(sorted(tally.unordered)),
    )
    return ExploreResult(
        executions=tally.executions,
        exhausted=tally.exhausted,
        failure=failure,
        elapsed=elapsed,
        schedules_per_second=tally.executions / elapsed if elapsed > 0 else 0.0,
        steps=tally.steps,
        strategy=template.strategy,
        seed=template.seed,
        pct_bound=bound,
        max_threads=tally.max_threads,
        max_steps_seen=tally.max_steps_seen,
        shrink_executions=tally.shrink_runs,
        verdict=verdict,
        switch_points=tally.switch_points,
        failures=failures,
        failed_at=tally.failed_at if failure is not None else None,
    )


_LOCATION = operator.attrgetter("location")


def _count_switch_points(run: Run, counts: dict[str, int]) -> None:
    """Add the synchronisation steps of ``run`` to ``counts`` by the source file they
    were taken in (watched accesses are not counted: they say nothing about whether
    the code's locks are controlled).

    Counted per location first (a C loop over the operations, no step record built:
    this runs after every execution), then per file.
    """
    ops = (op for op in run.step_ops() if op.kind not in ACCESS_KINDS)
    for location, n in Counter(map(_LOCATION, ops)).items():
        filename = location.rpartition(":")[0] or location
        counts[filename] = counts.get(filename, 0) + n


def _import_paths(scenario: Scenario, modules: Iterable[ModuleRef]) -> tuple[str, ...]:
    names: list[ModuleRef] = []
    scenario_module = getattr(scenario, "__module__", None)
    if isinstance(scenario_module, str):
        names.append(scenario_module)
    names.extend(resolve_module(m) for m in modules)
    return import_roots(names)


class _Tally:
    """What an exploration has done so far (kept outside its body: see SessionAbandoned)."""

    def __init__(self) -> None:
        self.executions = 0
        self.steps = 0
        self.max_threads = 0
        self.max_steps_seen = 0
        self.exhausted = False
        self.out_of_time = False
        self.watched = False
        self.declared: dict[str, str] = {}
        self.unordered: dict[str, str] = {}
        self.failure: Failure | None = None
        # The 1-based index of the execution that found `failure` (reporting only).
        self.failed_at: int | None = None
        # The first failure of each signature, in the order found (keep_going).
        self.distinct: dict[tuple[str, str], Failure] = {}
        self.shrink_runs = 0
        self.switch_points: dict[str, int] = {}

    def count(self, run: Run) -> None:
        self.executions += 1
        if run.memory is not None:
            self.watched = True
            self.declared.update(run.memory.declared)
            self.unordered.update(run.memory.unordered)
        self.steps += run.step
        self.max_threads = max(self.max_threads, len(run.threads))
        self.max_steps_seen = max(self.max_steps_seen, run.step)
        _count_switch_points(run, self.switch_points)


_HARNESS_KINDS: Final = frozenset({"stall", "step_limit", "nondeterminism", "divergence"})


def _harness_failure(failure: Failure) -> bool:
    """Whether lockstep could not run the code as asked (a stall, an uncontrolled thread, a
    race near uncontrolled synchronisation, ...): every further execution would meet it
    too, so even a search that keeps going stops there."""
    if failure.kind in _HARNESS_KINDS or isinstance(failure.exception, LockstepError):
        return True
    return failure.race is not None and bool(failure.race.uncontrolled)


def replay(
    scenario: Scenario,
    schedule: Schedule,
    settings: Settings | None = None,
    *,
    invariant: Callable[[], object] | Sequence[Callable[[], object]] | None = None,
    patch: Iterable[ModuleRef] | None = None,
    line_modules: Iterable[ModuleRef] | None = None,
    **changes: Unpack[ReplayChanges],
) -> ExecutionResult:
    """Run ``scenario`` once, following ``schedule`` exactly.

    ``patch`` / ``line_modules`` default (None) to what the schedule records
    (``schedule.patch`` / ``schedule.line_modules``); given (``()`` included), they
    replace it, and the resulting schedule records what was used. A recorded choice
    that is not available, a schedule that ends before a step with more than one
    choice, or one that has choices left over yields a Failure of kind "divergence"
    whose message names the step ("step 7: expected thread 2, runnable were [0, 1]");
    steps with one choice past its end decide nothing and are taken. Any other failure
    is the program's own, reproduced. ``settings`` as for explore(): a replay uses their
    ``backend``, ``stall_timeout``, ``stall_diagnosis`` and ``max_steps`` (raised to one
    more than the schedule's choices); the schedule decides the granularity and whether
    races are reported. Keyword ``changes`` set those four fields, and ``races`` (None:
    the schedule's) overrides the schedule as ``patch`` does; any other keyword is an
    InvalidArgument naming the known ones. Raises InvalidArgument / InvalidArgumentType
    for bad arguments (a module that cannot be imported included) before running
    anything.
    """
    check_scenario(scenario)
    if not isinstance(schedule, Schedule):
        raise InvalidArgumentType(f"schedule must be a lockstep.Schedule, got {schedule!r}")
    patch_modules: tuple[ModuleRef, ...] = schedule.patch if patch is None else tuple(patch)
    line_list: tuple[ModuleRef, ...] = (
        schedule.line_modules if line_modules is None else tuple(line_modules)
    )
    check_names("replay()", changes, REPLAY_FIELDS, kind="keyword")
    given: dict[str, Any] = dict(changes)
    races = given.pop("races", None)
    if races is not None and not isinstance(races, bool):
        raise InvalidArgumentType(f"races must be True, False or None, got {races!r}")
    settings = settings_with(settings, {}).replace(**given)
    settings = settings.replace(
        max_steps=max(settings.max_steps, len(schedule.choices) + 1),
        granularity=schedule.granularity,
        races=schedule.races if races is None else races,
    )
    options = make_options(settings, invariant=invariant, line_modules=line_list)
    effective = schedule.with_modules(
        patch=module_names(patch_modules), line_modules=module_names(line_list)
    )
    effective = attrs.evolve(effective, races=settings.races)
    # What this replay's schedules record is what it does, not what the file expected.
    template = effective.with_choices(()).with_failure(None)
    strategy = ReplayStrategy(schedule)

    def body() -> Run:
        strategy.begin_execution()
        return run_execution(scenario, strategy, options, template, session)

    with _patch_context(patch_modules), open_backend(options.backend) as session:
        try:
            run = session.run_session(body)
        except SessionAbandoned as abandoned:  # stuck in uncontrolled code: report it as is
            run = abandoned.run
    failure = run.failure()
    if failure is None and strategy.consumed < len(schedule.choices):
        failure = run.failure_after(
            "divergence",
            f"step {run.step}: the execution ended but the schedule has "
            f"{len(schedule.choices) - strategy.consumed} more choice(s) "
            f"(next: thread {schedule.choices[strategy.consumed].thread})",
        )
    if failure is not None:
        failure = failure.with_replay_command(replay_command_for(effective))
    # A failing replay's schedule records what failed, as a failing exploration's does.
    schedule = run.schedule() if failure is None else failure.schedule
    return ExecutionResult(schedule, run.trace(), failure)

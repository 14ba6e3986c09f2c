"""The model-manager suite: what ``lockstep check`` runs (entry point ``lockstep.suites``).

`SUITE.run(options)` (the `lockstep.suites.Suite` protocol; `options` is a
`lockstep.suites.SuiteOptions`) runs every scenario of
`models_spec.scenarios.default_scenarios()` (the bug catalogue's named
scenarios, then seeded random ones):

* against the core: `CoreAdapter(0)` with every mode (the lenient replay of
  the scenario's corpus schedule, then PCT, DPOR bounded to 2 preemptions and random
  within the budget), `CoreAdapter(1..3)` with PCT at half the budget (cheap depth
  coverage: those stacks only add pass-through layers), and the bare
  `ModelManager` on the scenarios it supports;
* against every known-bug variant of the bug catalogue
  (`models_spec._harness.catalogue`): its bug's named scenario, by exact replay of
  its corpus schedule and by each search strategy its bug module declares
  in ``caught_by`` with 12x the budget (each stops at its first failure; a
  declared strategy that escapes is named in the summary; ``--strategy NAME``
  runs that strategy on every variant whatever it declares).  A variant whose
  recorded schedule is replayed keeps its searches' failures as found, not
  shrunk: the replay already shows the bug minimally, and the searches only
  say whether they catch it.  Without the corpus (`models_spec._harness.corpus`:
  package data) no "replay" or "follow" mode runs, and the closing lines
  say so (`corpus_warning`);
* with ``--target module:factory``: every scenario against that adapter
  (`models_spec.adapter.load_adapter`) with every search strategy; no
  variants.  ``--target module`` checks every adapter the module lists in
  ``ADAPTERS`` (`models_spec.adapter.target_specs`), one row each.

It prints a table (scenario x implementation -> verdict, invariant broken,
executions, time, the search strategies that caught it) and a summary.
Verdicts: PASS; CORE-FAIL (the core failed: a bug in the core or the
harness); FAIL (the ``--target`` failed); CAUGHT (a variant failed its own
scenario); ESCAPED (it did not); SKIP (a capability is missing).  The exit
status is 1 when anything is CORE-FAIL, FAIL or ESCAPED, 2 when the target's
implementation is not installed (`TargetUnavailable`: one line naming the
install command), 3 when the target cannot be loaded, else 0.  Every
failure's schedule (``Schedule.save``) and HTML timeline
(``lockstep.report.render_html``) are written to ``options.output_dir``
(default ``./lockstep-report``).

``options.jobs > 1`` runs the jobs (one per scenario x implementation) in
worker processes; every job is a pure function of its inputs (seeded
strategies, fresh state per execution), so the table is the same as with
``jobs=1`` apart from the time column.
"""

from __future__ import annotations

import multiprocessing
import re
import signal
import sys
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, TextIO

import attrs

import lockstep
from lockstep.errors import UncontrolledThread
from lockstep.report import abbreviate
from lockstep.suites import SuiteOptions
from models_spec._check.cells import Cell, ModeResult
from models_spec._check.check import (
    UNCONTROLLED_SYNC,
    CheckOutcome,
    explore_scenario,
    failure_label,
    follow_scenario,
    replay_scenario,
)
from models_spec._check.report import (
    TEXT_WIDTH,
    RunSummary,
    case_result,
    explain_failure,
    failure_detail,
    failure_line,
    failure_reports,
    fit_lines,
    safe_stem,
    wrap_text,
    write_artifacts,
)
from models_spec._check.unpatched import uncontrolled_cause, zero_switch_head
from models_spec._harness.catalogue import DEFAULT_PACKAGE, load
from models_spec._harness.corpus import load_corpus, missing_manifest
from models_spec._harness.scenario_index import default_scenarios, get_scenario
from models_spec._harness.validate import validate_adapter
from models_spec.adapter import (
    AdapterError,
    BareManagerAdapter,
    ManagerAdapter,
    TargetUnavailable,
    core_adapter_named,
    load_adapter,
    target_header,
    target_specs,
)
from models_spec.scenarios import Scenario
from models_spec.spec import DECLARABLE_SEMANTICS

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_OUTPUT_DIR",
    "SEARCH_STRATEGIES",
    "SUITE",
    "Cell",
    "Job",
    "ModeResult",
    "ModelManagerSuite",
    "adapter_for",
    "corpus_warning",
    "exit_status",
    "expected_cost",
    "factory_path",
    "longest_first",
    "plan_jobs",
    "render_table",
    "run_job",
    "table_rows",
]

DEFAULT_BUDGET: Final = 30
"""Executions per search strategy per core cell (variants get 12x, stopping at a failure)."""
VARIANT_BUDGET_FACTOR: Final = 12
SEARCH_STRATEGIES: Final = ("pct", "dpor", "random")
DEFAULT_OUTPUT_DIR: Final = Path("lockstep-report")
CORE_DEPTHS: Final = (0, 1, 2, 3)
EXIT_OK, EXIT_FAILURE, EXIT_UNAVAILABLE, EXIT_INPUT = 0, 1, 2, 2
EXIT_INTERRUPTED: Final = 130


@attrs.frozen
class Job:
    """One scenario x implementation to run, and how (picklable)."""

    index: int
    scenario: str
    implementation: str
    role: str  # "core", "variant" or "target"
    modes: tuple[str, ...]
    budget: int
    seed: int
    output_dir: str | None
    target: str | None = None
    catalogue: str = DEFAULT_PACKAGE  # the bug package variants and named scenarios come from
    settings: lockstep.Settings | None = None  # None: lockstep's defaults
    # Variants: the strategies their bug module declares will catch them (caught_by).
    expected: tuple[str, ...] = ()


def adapter_for(
    implementation: str, target: str | None = None, catalogue: str = DEFAULT_PACKAGE
) -> ManagerAdapter:
    """The adapter called `implementation`, or the one `target` ("module:factory") loads.

    A known-bug variant is looked up by name in the bug `catalogue` package.
    Raises `AdapterError` for a bad target and KeyError for an unknown name.
    """
    if target is not None:
        return load_adapter(target)
    core = core_adapter_named(implementation)
    if core is not None:
        return core
    if implementation == BareManagerAdapter().name:
        return BareManagerAdapter()
    variant = load(catalogue).variants.get(implementation)
    if variant is not None:
        return variant.adapter()
    raise KeyError(f"unknown implementation {implementation!r}")


def factory_path(factory: Callable[[], ManagerAdapter]) -> str:
    """``module:qualname`` of a module-level adapter factory (what a Job carries)."""
    return f"{factory.__module__}:{factory.__qualname__}"


FULL_POLICY_CELLS: Final = ("wait", "refuse")
"""The cache's ``on_full`` policies checked besides "proceed", at depth 0 with PCT."""


def _exercises_full_policy(scenario: Scenario) -> bool:
    """Whether a cache full of pinned or leased models is reachable (and the spec
    models the policy exactly: no memory pressure, whose rounds precede the wait)."""
    needs = scenario.all_needs
    return (
        "memory" not in needs
        and bool(needs & {"leases", "pins"})
        and bool(needs & {"capacity", "lru"})
    )


def _exercises_weights(scenario: Scenario) -> bool:
    """Whether the scenario evicts (capacity or LRU) on a cache the weighted cells can
    judge exactly: no memory pressure, no models adopted from the inner manager."""
    needs = scenario.all_needs
    return bool(needs & {"capacity", "lru"}) and not needs & {"memory", "adopt"}


def _strategies(options: SuiteOptions) -> tuple[str, ...]:
    return (options.strategy,) if options.strategy else SEARCH_STRATEGIES


def plan_jobs(
    options: SuiteOptions,
    *,
    target_name: str | None = None,
    targets: Sequence[tuple[str, str]] | None = None,
    scenarios: Sequence[str] | None = None,
    variants: Mapping[str, Callable[[], ManagerAdapter]] | None = None,
    core_depths: Sequence[int] = CORE_DEPTHS,
    catalogue: str = DEFAULT_PACKAGE,
) -> list[Job]:
    """Every job of one run, in table order.

    Planned from the bug `catalogue` (a package of bug modules, see
    `models_spec._harness.catalogue`): its named scenarios and its variants, each on
    its bug's scenario.  `scenarios` restricts the scenario ids (default: the
    catalogue's named ones, then the random ones), `variants` replaces the
    catalogue's variants by a mapping of bug id -> adapter factory (for
    tests; factories must be module-level so worker processes can import
    them), `core_depths` the core depths (the first one runs every mode, the
    others PCT only, at half the budget).
    `targets` lists (implementation name, "module:factory") pairs for
    ``options.target`` (default: the target itself, named `target_name`).
    """
    bugs = load(catalogue)
    if scenarios:
        selected = {sid: bugs.scenarios.get(sid) or get_scenario(sid) for sid in scenarios}
    elif catalogue == DEFAULT_PACKAGE:
        selected = dict(default_scenarios())
    else:
        selected = dict(bugs.scenarios)
    budget = options.budget or DEFAULT_BUDGET
    deeper_budget = max(1, budget // 2)
    seed = options.seed if options.seed is not None else 0
    out = str(options.output_dir or DEFAULT_OUTPUT_DIR)
    strategies = _strategies(options)
    jobs: list[Job] = []

    def add(  # noqa: PLR0917 - a local shorthand
        scenario: str,
        implementation: str,
        role: str,
        modes: Sequence[str],
        n: int,
        target: str | None = None,
        expected: tuple[str, ...] = (),
    ) -> None:
        jobs.append(
            Job(
                len(jobs),
                scenario,
                implementation,
                role,
                tuple(modes),
                n,
                seed,
                out,
                target,
                catalogue,
                expected=expected,
            )
        )

    if options.target is not None:
        pairs = targets or ((target_name or options.target, options.target),)
        for scenario_id in selected:
            for name, spec in pairs:
                jobs.append(
                    Job(
                        len(jobs),
                        scenario_id,
                        name,
                        "target",
                        strategies,
                        budget,
                        seed,
                        out,
                        spec,
                        catalogue,
                    )
                )
        return jobs
    corpus = load_corpus()
    with_corpus = {entry.scenario for entry in corpus.values()}
    bare = BareManagerAdapter()
    for scenario_id, scenario in selected.items():
        follow = ("follow",) if scenario_id in with_corpus else ()
        for position, depth in enumerate(core_depths):
            if position == 0:
                add(scenario_id, f"core-depth{depth}", "core", (*follow, *strategies), budget)
            else:  # deeper stacks only add pass-through layers: a lighter check
                add(scenario_id, f"core-depth{depth}", "core", strategies[:1], deeper_budget)
        if _exercises_full_policy(scenario):
            # The other full-cache policies (the default cells run "proceed"),
            # where a cache full of pinned or leased models is reachable.
            for policy in FULL_POLICY_CELLS:
                add(scenario_id, f"core-depth0-{policy}", "core", strategies[:1], budget)
        if _exercises_weights(scenario):
            # Weight-based capacity (WEIGHTED_CORE) besides the count bound.
            add(scenario_id, "core-depth0-weighted", "core", strategies[:1], budget)
        if scenario.supported_by(bare) and scenario.bugs:
            add(scenario_id, bare.name, "core", strategies, budget)
    variant_budget = budget * VARIANT_BUDGET_FACTOR
    if variants is not None:
        for bug, factory in variants.items():
            named = bugs.bug(bug).scenario
            if named.id in selected:
                name = factory().name
                add(named.id, name, "variant", strategies, variant_budget, factory_path(factory))
        return jobs
    for entry in bugs.variant_entries:
        if entry.scenario.id not in selected:
            continue
        replay = ("replay",) if entry.name in corpus else ()
        searches = _variant_searches(entry.caught_by, strategies, chosen=options.strategy)
        add(
            entry.scenario.id,
            entry.name,
            "variant",
            (*replay, *searches),
            variant_budget,
            expected=entry.caught_by,
        )
    return jobs


def _variant_searches(
    declared: Sequence[str], strategies: Sequence[str], *, chosen: str | None
) -> tuple[str, ...]:
    """The search modes of a variant's cell: the strategies its bug module declares in
    ``caught_by`` (each is then expected to catch it), in the run's order.

    A strategy the module does not declare is known not to catch the variant within
    the budget (a slow test checks every declared one does): running it would only
    spend the whole variant budget to print "escaped".  A strategy the user chose
    with ``--strategy`` always runs.
    """
    if chosen is not None:
        return tuple(strategies)
    return tuple(s for s in strategies if s in declared) or tuple(strategies)


def _artifact_stem(job: Job, mode: str) -> str:
    return safe_stem(job.scenario, job.implementation, mode)


def _record(job: Job, mode: str, outcome: CheckOutcome, scenario: Scenario) -> ModeResult:
    """The mode's row; a failure is saved (schedule + HTML) and explained."""
    failure = outcome.failure
    message = explanation = ""
    artifacts: tuple[str, ...] = ()
    if failure is not None:
        saved = None
        if job.output_dir is not None:
            saved = write_artifacts(
                Path(job.output_dir),
                _artifact_stem(job, mode),
                failure,
                title=f"{job.scenario} on {job.implementation} ({mode})",
                description=scenario.story(),
            )
            artifacts = saved.paths
        message = failure_line(failure)
        how = "replaying the recorded schedule" if mode in ("replay", "follow") else mode
        verb = "stalled under" if failure.kind == "stall" else "found by"
        explanation = explain_failure(
            failure,
            heading=f"{job.scenario} on {job.implementation}: {verb} {how} {_where(outcome)}",
            artifacts=saved,
            shrunk=outcome.shrunk or mode == "replay",
            scenario=scenario.story(),
        )
    also: list[tuple[str, str, str]] = []
    for other in outcome.others:
        path = ""
        if job.output_dir is not None:
            label = failure_label(other)
            saved_other = write_artifacts(
                Path(job.output_dir),
                safe_stem(job.scenario, job.implementation, f"{mode}-also-{label}"),
                other,
                title=f"{job.scenario} on {job.implementation} ({mode}, also)",
                description=scenario.story(),
            )
            artifacts += saved_other.paths
            path = str(saved_other.paths[0])
        also.append((failure_label(other), failure_line(other), path))
    return ModeResult(
        mode,
        outcome.kind,
        outcome.label,
        outcome.executions,
        outcome.elapsed,
        outcome.skipped,
        artifacts,
        tuple(outcome.i15_skipped),
        message,
        explanation,
        outcome.switch_points,
        outcome.verdict,
        tuple(also),
        "" if failure is None else failure_detail(failure),
    )


def _where(outcome: CheckOutcome) -> str:
    """ "at execution N" (N: the execution that found the failure), "of M" added when the
    search went on past it (``keep_going``); "in a search of M executions" when the
    failing execution is not known."""
    total = outcome.executions
    if outcome.failed_at is None:
        return f"at execution {total}" if total <= 1 else f"in a search of {total} executions"
    if outcome.failed_at == total:
        return f"at execution {total}"
    return f"at execution {outcome.failed_at} of {total}"


def _run_mode(job: Job, scenario: Scenario, adapter: ManagerAdapter, mode: str) -> CheckOutcome:
    if mode == "replay":  # the variant's own recorded schedule, exactly
        return replay_scenario(scenario, adapter, load_corpus()[job.implementation].schedule())
    if mode == "follow":  # the scenario's first recorded schedule, leniently
        entry = next(e for e in load_corpus().values() if e.scenario == scenario.id)
        return follow_scenario(scenario, adapter, entry.schedule())
    return explore_scenario(
        scenario,
        adapter,
        strategy=mode,
        budget=job.budget,
        seed=job.seed,
        shrink=_shrinks(job),
        settings=job.settings,
        keep_going=_keeps_going(job),
    )


def _keeps_going(job: Job) -> bool:
    """Whether the job's searches go on after a first failure, so that one failure never
    hides another: for a ``--target`` (and the core: which passes, so it costs nothing),
    not for a known-bug variant, whose cell only has to show its search catches it
    (searching its whole budget after the catch would multiply the default check's time
    and change no verdict)."""
    return job.role != "variant"


def _shrinks(job: Job) -> bool:
    """Whether the job's search failures are shrunk.

    A variant that replays its recorded schedule already shows its bug in a minimal
    interleaving (the corpus records shrunk schedules), so its searches only have to
    say whether they catch the variant: shrinking each of their failures cost as much
    as the searches themselves.  Every other failure is shrunk before it is shown.
    """
    return not (job.role == "variant" and "replay" in job.modes)


def _scenario_of(job: Job) -> Scenario:
    named = load(job.catalogue).scenarios.get(job.scenario)
    return named if named is not None else get_scenario(job.scenario)


def run_job(job: Job) -> Cell:
    """Run every mode of `job`; write artifacts of failures; return its table row.

    A stall (a thread stuck in code lockstep does not control) or an uncontrolled
    thread (a real OS thread started by code lockstep does not patch) ends the cell:
    every other mode would meet it the same way.
    """
    scenario = _scenario_of(job)
    adapter = adapter_for(job.implementation, job.target, job.catalogue)
    inert_control = getattr(adapter, "inert_control", None)
    if inert_control is not None:
        inert_control()  # start counting this cell's effects
    results: list[ModeResult] = []
    for mode in job.modes:
        results.append(_record(job, mode, _run_mode(job, scenario, adapter, mode), scenario))
        if _harness_label(results[-1]):
            break
    cell = _cell(job, results, lambda: zero_switch_head(adapter))
    if cell.verdict == "ERROR" and cell.label in _UNCONTROLLED_LABELS:
        cell = attrs.evolve(cell, cause=uncontrolled_cause(adapter))
    inert = "" if inert_control is None or cell.verdict == "SKIP" else str(inert_control())
    if inert:
        # A control that changed nothing compares nothing: its verdict would be the
        # plain implementation's under another name.
        explanation = wrap_text(f"{job.scenario} on {job.implementation}: {inert}")
        return attrs.evolve(
            cell, verdict="ERROR", label="inert control", message=inert, explanation=explanation
        )
    return cell


_UNCONTROLLED_LABELS: Final = frozenset(
    {"0 switch points", "stall", UNCONTROLLED_SYNC, "uncontrolled thread"}
)
"""The ERROR labels an uncontrolled primitive can cause (a cause the report names once)."""


def _harness_label(result: ModeResult) -> str:
    """Why lockstep could not run the code under test in this mode ("" when it could):
    a stall, a real OS thread started inside a run (``UncontrolledThread``), or a data
    race that real synchronisation lockstep does not control may order
    (``UNCONTROLLED_SYNC``: unproven either way)."""
    if result.kind == "stall":
        return "stall"
    if result.kind == "data-race" and result.label == UNCONTROLLED_SYNC:
        return UNCONTROLLED_SYNC
    if result.kind == "exception" and result.label == UncontrolledThread.__name__:
        return "uncontrolled thread"
    return ""


def _cell(
    job: Job, results: list[ModeResult], zero_switch: Callable[[], str] | None = None
) -> Cell:
    # A divergence only says a recorded schedule no longer fits (stale corpus):
    # it neither catches a variant nor fails the core. A stall, an uncontrolled
    # thread or a race near uncontrolled synchronisation is the harness failing to run
    # the code (an uncontrolled primitive, a real OS thread): an ERROR. (A known-bug
    # variant may break the code that way on purpose: for a variant it is a failure
    # like any other.)
    stalled = [r for r in results if _harness_label(r) and job.role != "variant"]
    failed = [r for r in results if r.kind and r.kind != "divergence" and r not in stalled]
    executions = sum(r.executions for r in results)
    elapsed = sum(r.elapsed for r in results)
    caught_by = tuple(r.mode for r in failed if r.mode in lockstep.strategies.STRATEGY_NAMES)
    label = failed[0].label if failed else ""
    message = failed[0].message if failed else ""
    explanation = "\n\n".join(r.explanation for r in failed[:1] if r.explanation)
    detail = failed[0].detail if failed else ""
    invariants = tuple(dict.fromkeys(x for r in failed for x in (r.label, *(a[0] for a in r.also))))
    if len(invariants) > 1:  # one failure never hides another: the others are named too
        seen = {failed[0].label}
        others = []
        for r in failed:
            for other in ((r.label, r.message, ""), *r.also):
                if other[0] not in seen:
                    seen.add(other[0])
                    where = f" (schedule: {other[2]})" if other[2] else ""
                    others.append(f"  also by {r.mode}: {other[1]}{where}")
        explanation = "\n".join(
            [explanation, "", "Other invariants this cell saw break:", *fit_lines(others)]
        )
    reached = [r.switch_points for r in results if r.switch_points is not None]
    if results and all(r.skipped for r in results):
        verdict = "SKIP"
        label = message = results[0].skipped or ""
    elif stalled:
        verdict, label = "ERROR", _harness_label(stalled[0])
        message = stalled[0].message
        explanation = stalled[0].explanation
        detail = stalled[0].detail
    elif reached and sum(reached) == 0 and all(r.kind == "data-race" for r in failed):
        # No controlled synchronisation: nothing was interleaved at the code's locks, and
        # a reported race is no evidence either (unseen locks order nothing).
        verdict, label = "ERROR", "0 switch points"
        head = zero_switch() if zero_switch is not None else "0 switch points"
        message = (
            f"{head}. {executions} execution(s) never reached a controlled primitive (or "
            "lockstep.checkpoint) inside the code under test, so none of its interleavings "
            "was explored; this cell proves nothing"
        )
        if failed:
            message += (
                " (the data race it reported is no evidence: locks lockstep does not "
                "control order nothing for its race detector)"
            )
        explanation = wrap_text(f"{job.scenario} on {job.implementation}: {message}")
    elif job.role == "variant":
        verdict = "CAUGHT" if failed else "ESCAPED"
    elif failed:
        verdict = "CORE-FAIL" if job.role == "core" else "FAIL"
    else:
        verdict = "PASS"
    return Cell(
        job.scenario,
        job.implementation,
        job.role,
        verdict,
        label,
        executions,
        elapsed,
        caught_by,
        tuple(results),
        message,
        explanation,
        job.index,
        job.expected,
        invariants if verdict in ("FAIL", "CORE-FAIL", "CAUGHT") else (),
        detail,
    )


def run_jobs(jobs: Sequence[Job], workers: int) -> list[Cell]:
    """Run `jobs` (in `workers` processes when > 1); results in job order."""
    return sorted(iter_cells(jobs, workers), key=lambda cell: cell.index)


def expected_cost(job: Job) -> int:
    """A job's cost in planned executions: its search modes times its budget (a
    variant's search usually stops early, but the ones that do not are the longest
    jobs of a run)."""
    searches = sum(1 for mode in job.modes if mode in lockstep.strategies.STRATEGY_NAMES)
    return searches * job.budget + (len(job.modes) - searches)


def longest_first(jobs: Sequence[Job]) -> list[Job]:
    """`jobs` by decreasing `expected_cost`, ties in table order.

    Workers take the next job as soon as they are free, so starting the long
    jobs first keeps one long job from running alone at the end (longest
    processing time first). Only the order of work changes: every job is a pure
    function of its inputs and the table is sorted by `Job.index`.
    """
    return sorted(jobs, key=lambda job: (-expected_cost(job), job.index))


def _ignore_interrupts() -> None:
    # Ctrl-C goes to the whole process group: the parent decides what happens
    # (it terminates the pool); workers must not die with tracebacks of their own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def iter_cells(jobs: Sequence[Job], workers: int) -> Generator[Cell, None, None]:
    """Run `jobs`, yielding each cell as soon as it is finished (any order).

    With `workers` > 1 the jobs run in that many spawned processes; closing the
    iterator early (an interrupt) terminates them.
    """
    if workers <= 1 or len(jobs) <= 1:
        for job in jobs:
            yield run_job(job)
        return
    context = multiprocessing.get_context("spawn")  # no fork of a threaded parent
    # Spawned workers start from this process's sys.path; put the roots of the
    # packages actually imported here first, so a same-named directory on the
    # path (e.g. a test package called "lockstep") cannot shadow them there.
    saved = list(sys.path)
    sys.path[:0] = _package_roots()
    pool = context.Pool(min(workers, len(jobs)), initializer=_ignore_interrupts)
    try:
        yield from pool.imap_unordered(run_job, longest_first(jobs), chunksize=1)
        pool.close()
    finally:
        pool.terminate()
        pool.join()
        sys.path[:] = saved


def _package_roots() -> list[str]:
    import models_spec  # noqa: PLC0415 - the package this module belongs to

    modules: list[Any] = [lockstep, models_spec]
    roots = [str(Path(module.__file__).resolve().parent.parent) for module in modules]
    return list(dict.fromkeys(roots))


_NAME_WIDTH: Final = 36
"""The implementation column's width in the table; a longer name gets a line of its own."""
_LABEL_WIDTH: Final = 12
"""The invariant column's width; a longer label (a skip's reason) goes on a line below."""


def render_table(cells: Sequence[Cell], *, with_time: bool = True) -> str:
    """The verdict table as aligned text, at most 100 columns (without the time column for
    comparisons).

    One block per scenario: the scenario's id on a line of its own, then one row per
    implementation (indented): verdict, invariant, executions, time, and for a known-bug
    variant the search strategies that caught it (a column only where the run has
    variants). A name or label too long for its column
    gets a line of its own (the name above its row, the label below it).
    """
    header = ["scenario / implementation", "verdict", "invariant", "execs"]
    if with_time:
        header.append("time")
    # Which searches caught a known-bug variant: a column only where the run has variants.
    variants = any(cell.role == "variant" for cell in cells)
    if variants:
        header.append("search caught")
    rows: list[list[str]] = []
    for cell in cells:
        label = ", ".join(cell.invariants) if len(cell.invariants) > 1 else cell.label or "-"
        row = [cell.implementation, cell.verdict, label, str(cell.executions)]
        if with_time:
            row.append(f"{cell.elapsed:.2f}s")
        if variants:
            row.append((", ".join(cell.caught_by) or "none") if cell.role == "variant" else "")
        rows.append(row)
    widths = [len(h) for h in header]
    for row in rows:
        for i, value in enumerate(row):
            cap = {0: _NAME_WIDTH, 2: _LABEL_WIDTH}.get(i)
            if cap is None or len(value) <= cap:
                widths[i] = max(widths[i], len(value) + (2 if i == 0 else 0))
    lines = ["  ".join(c.ljust(w) for c, w in zip(header, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    scenario = None
    for cell, row in zip(cells, rows, strict=True):
        if cell.scenario != scenario:
            scenario = cell.scenario
            lines.append(abbreviate(scenario, TEXT_WIDTH))
        name, label = row[0], row[2]
        if len(name) > widths[0] - 2:
            lines.append(abbreviate(f"  {name}", TEXT_WIDTH))
            row[0] = ""
        else:
            row[0] = f"  {name}"
        if len(label) > widths[2]:
            row[2] = "(below)"
        cells_text = [c.ljust(w) for c, w in zip(row, widths, strict=True)]
        lines.append("  ".join(cells_text).rstrip())
        if len(label) > widths[2]:
            lines.append(abbreviate(f"      {label}", TEXT_WIDTH))
    return "\n".join(lines)


def table_rows(text: str) -> list[tuple[str, ...]]:
    """The rows of a table `render_table` printed in ``text``: (scenario, implementation,
    verdict, invariant, executions[, time], search caught or ""), in order (for tests and
    scripts that read the printed table)."""
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.startswith("scenario / "))
    except StopIteration:
        return []
    rows: list[list[str]] = []
    scenario = name = ""
    for line in lines[start + 2 :]:
        if not line.strip():
            break
        if not line.startswith(" "):
            scenario = line.strip()
        elif line.startswith("      ") and rows and rows[-1][3] == "(below)":
            rows[-1][3] = line.strip()
        else:
            cells = re.split(r"\s{2,}", line.strip())
            if len(cells) == 1 and line.startswith("  ") and not line.startswith("   "):
                name = cells[0]
                continue
            if line.startswith("   "):  # a row whose name is on the line above
                cells = [name, *cells]
            rows.append([scenario, *cells])
    width = max((len(row) for row in rows), default=0)
    return [tuple(row + [""] * (width - len(row))) for row in rows]


def _missed(cell: Cell, result: ModeResult) -> bool:
    """Whether a strategy the variant's bug module declares (caught_by) escaped it."""
    return (
        result.mode in cell.expected
        and result.skipped is None
        and result.mode not in cell.caught_by
    )


def _mode_word(result: ModeResult) -> str:
    if result.kind == "divergence":
        return "STALE corpus schedule (re-record: python3 -m models_spec.record_corpus)"
    return result.label or "escaped"


def _summary(cells: Sequence[Cell]) -> list[str]:
    lines: list[str] = []
    variants = [c for c in cells if c.role == "variant"]
    if variants:
        lines.append("Known-bug variants (search = caught without the recorded schedule):")
        for cell in variants:
            by_mode = ", ".join(f"{r.mode}: {_mode_word(r)}" for r in cell.modes)
            lines.append(f"  {cell.implementation}: {cell.verdict} [{by_mode}]")
        searched = sum(1 for c in variants if c.caught_by)
        lines.append(
            f"  {searched}/{len(variants)} variants caught by at least one search strategy"
        )
        missed = [
            f"{c.implementation} ({', '.join(r.mode for r in c.modes if _missed(c, r))})"
            for c in variants
            if any(_missed(c, r) for r in c.modes)
        ]
        if missed:
            lines.append(
                "  escaped a strategy its bug module declares in caught_by (weaker search or "
                "a changed bug; run its slow expectation test): " + "; ".join(missed)
            )
    counts: dict[str, int] = {}
    for cell in cells:
        counts[cell.verdict] = counts.get(cell.verdict, 0) + 1
    lines.append("Verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    lines.extend(_search_coverage(cells))
    lines.extend(_i15_summary(cells))
    return lines


def _search_coverage(cells: Sequence[Cell]) -> list[str]:
    """What the searches of the passing core/target cells established (lockstep's verdict
    wording: complete up to a bound, cut short, or sampled; over watched state or not).
    Nothing when no such cell passed: a search of a cell that is an ERROR (0 switch
    points: its locks were never interleaved) establishes nothing."""
    groups: dict[str, dict[str, int]] = {}
    for cell in cells:
        if cell.role == "variant" or cell.verdict != "PASS":
            continue
        for result in cell.modes:
            verdict = result.verdict
            if verdict is None or verdict.coverage == "failed":
                continue
            wording = _coverage_words(verdict)
            by_mode = groups.setdefault(result.mode, {})
            by_mode[wording] = by_mode.get(wording, 0) + 1
    if not groups:
        return []
    lines = ["What the searches established (passing core/target runs):"]
    for mode, wordings in sorted(groups.items()):
        parts = [f"{n} run{'s' if n != 1 else ''} {w}" for w, n in sorted(wordings.items())]
        lines.append(f"  {mode}: " + "; ".join(parts))
    return lines


def _coverage_words(verdict: lockstep.Verdict) -> str:
    scope = (
        "over synchronisation and watched state"
        if verdict.watched
        else ("over synchronisation only (nothing watched)")
    )
    races = ", no data race" if verdict.races_checked else ""
    if verdict.coverage == "complete":
        bound = (
            ""
            if verdict.preemption_bound is None
            else f" with at most {verdict.preemption_bound} preemptions"
        )
        return f"explored every interleaving{bound} {scope}{races}"
    if verdict.coverage == "partial":
        return (
            f"explored every interleaving {scope}{races} except the orders of declared "
            f"racy locations written without the lock their locked readers hold "
            f"({', '.join(verdict.unordered)}: no completeness claim for them)"
        )
    if verdict.coverage in ("execution-budget", "time-budget"):
        what = "execution" if verdict.coverage == "execution-budget" else "time"
        return f"stopped by the {what} budget {scope} (no completeness claim)"
    return f"sampled {scope} (no completeness claim)"


def _i15_summary(cells: Sequence[Cell]) -> list[str]:
    """Where linearizability (I15) was not judged, and why: reported, never passed."""
    totals: dict[str, int] = {}
    for cell in cells:
        for result in cell.modes:
            for reason, n in result.i15_skipped:
                totals[reason] = totals.get(reason, 0) + n
    if not totals:
        return ["I15 (linearizability) judged in every execution"]
    return [
        f"I15 not judged in {n} execution(s) because {reason}"
        for reason, n in sorted(totals.items())
    ]


def corpus_warning(options: SuiteOptions) -> str:
    """The line a run prints when it needs the recorded corpus and has none ("" otherwise).

    Without the corpus's ``MANIFEST.json`` (`models_spec._harness.corpus`) `plan_jobs` plans no
    "replay" mode for the variants and no "follow" mode for the core: the check still
    runs, with fewer executions, and must say so rather than pass as if it were whole.
    A ``--target`` run replays no corpus.
    """
    manifest = missing_manifest() if options.target is None else None
    if manifest is None:
        return ""
    return (
        f"WARNING: the recorded schedule corpus is missing ({manifest} does not exist): "
        "the known-bug variants' 'replay' and the core's 'follow' modes were skipped, so "
        "this check ran fewer executions than a complete one. Install the package with "
        "its data (models_spec/schedules/*.json), or record the corpus in a source "
        "checkout: python3 -m models_spec.record_corpus"
    )


def _declared_semantics(targets: Sequence[tuple[str, str]]) -> tuple[str, ...]:
    """One line per declared semantic difference of the target's adapters (the report
    lists what the spec judged each one by); `AdapterError` for an unknown name."""
    lines: list[str] = []
    for name, spec in targets:
        declared = sorted(getattr(load_adapter(spec), "semantics", ()) or ())
        unknown = [d for d in declared if d not in DECLARABLE_SEMANTICS]
        if unknown:
            raise AdapterError(
                f"{spec}: unknown declared semantics {unknown}; declarable: "
                f"{sorted(DECLARABLE_SEMANTICS)}"
            )
        lines.extend(f"{name} declares {d}: {DECLARABLE_SEMANTICS[d]}" for d in declared)
    return tuple(lines)


def exit_status(cells: Sequence[Cell]) -> int:
    """1 when any cell is CORE-FAIL, FAIL, ESCAPED or ERROR, else 0."""
    return EXIT_FAILURE if any(c.bad for c in cells) else EXIT_OK


@attrs.define
class ModelManagerSuite:
    """The suite object registered as ``modelmanager`` (see the module docstring).

    The fields narrow a run (for tests and quick local checks); the
    registered `SUITE` uses the defaults: every scenario, every variant,
    core depths 0-3, output on stdout.
    """

    stream: TextIO | None = None
    scenarios: tuple[str, ...] | None = None
    variants: Mapping[str, Callable[[], ManagerAdapter]] | None = None
    core_depths: tuple[int, ...] = CORE_DEPTHS
    catalogue: str = DEFAULT_PACKAGE

    name: str = "modelmanager"

    def run(self, options: SuiteOptions) -> int:
        """Plan, validate, run, report; return 0, 1, 2 (cannot run: one line why) or 130.

        Finished cells go to ``options.reporter`` as they come; with
        ``options.shard`` only that shard of the planned cells runs. An interrupt
        (Ctrl-C) stops the run: the finished cells are still printed and reported.
        """
        out = self.stream if self.stream is not None else sys.stdout
        targets: tuple[tuple[str, str], ...] = ()
        header: tuple[str, ...] = ()
        if options.target is not None:
            try:
                targets = tuple(
                    (load_adapter(spec).name, spec) for spec in target_specs(options.target)
                )
                for _, spec in targets:
                    validate_adapter(load_adapter(spec), spec)
                header = target_header(options.target) + _declared_semantics(targets)
            except TargetUnavailable as error:
                print(f"lockstep check: {abbreviate(str(error), 500)}", file=sys.stderr)
                return EXIT_UNAVAILABLE
            except AdapterError as error:
                print(f"lockstep check: --target: {abbreviate(str(error), 500)}", file=sys.stderr)
                return EXIT_INPUT
        if options.strategy is not None and options.strategy not in (
            lockstep.strategies.STRATEGY_NAMES
        ):
            print(f"lockstep check: unknown strategy {options.strategy!r}", file=sys.stderr)
            return EXIT_INPUT
        jobs = plan_jobs(
            options,
            targets=targets or None,
            scenarios=self.scenarios,
            variants=self.variants,
            core_depths=self.core_depths,
            catalogue=self.catalogue,
        )
        planned = len(jobs)
        warning = corpus_warning(options)  # read as the jobs were planned
        if options.shard is not None:
            jobs = options.shard.select(jobs)
        if options.settings is not None:
            jobs = [attrs.evolve(job, settings=options.settings) for job in jobs]
        for line in fit_lines(header):  # what the target runs against, before anything else
            print(line, file=out)
        out.flush()
        options.reporter.start(self.name, len(jobs))
        start = time.perf_counter()
        cells: list[Cell] = []
        interrupted = False
        running = iter_cells(jobs, max(1, options.jobs))
        try:
            for cell in running:
                cells.append(cell)
                options.reporter.case(self.name, case_result(cell, self.name))
        except KeyboardInterrupt:
            interrupted = True
        finally:
            running.close()
        cells.sort(key=lambda cell: cell.index)
        run = RunSummary(
            cells=tuple(cells),
            planned=planned,
            selected=len(jobs),
            shard=None if options.shard is None else str(options.shard),
            elapsed=time.perf_counter() - start,
            workers=max(1, options.jobs),
            output_dir=Path(options.output_dir or DEFAULT_OUTPUT_DIR),
            interrupted=interrupted,
            warnings=(warning,) if warning else (),
        )
        if not options.quiet:
            print(render_table(cells), file=out)
            print(file=out)
        for line in failure_reports(cells, verbose=options.verbose):
            print(line, file=out)
        if not options.quiet:
            for line in fit_lines(_summary(cells)):
                print(line, file=out)
        for line in fit_lines(run.closing_lines()):
            print(line, file=out)
        out.flush()
        return EXIT_INTERRUPTED if interrupted else exit_status(cells)


SUITE: Final = ModelManagerSuite()
"""The entry point object (``lockstep.suites``: ``modelmanager``)."""


def _main(argv: Sequence[str] | None = None) -> int:
    import argparse  # noqa: PLC0415 - only for running the suite without the CLI

    parser = argparse.ArgumentParser(prog="python3 -m models_spec._check.suite")
    parser.add_argument("--budget", type=int)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--strategy")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--output-dir", type=Path)
    parser.add_argument("--target")
    args = parser.parse_args(argv)
    options = SuiteOptions(
        budget=args.budget,
        seed=args.seed,
        strategy=args.strategy,
        jobs=args.jobs,
        output_dir=args.output_dir,
        target=args.target,
    )
    return SUITE.run(options)


if __name__ == "__main__":
    raise SystemExit(_main())

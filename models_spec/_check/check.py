"""Run one scenario against one adapter under lockstep: explore, replay, follow.

The building blocks of the suite, the corpus test and the pytest entry
point.  Every function returns a frozen `CheckOutcome` (never raises for a
failing implementation: a failure is data).

* `explore_scenario(scenario, adapter, strategy=..., budget=..., seed=...)`:
  search with a named lockstep strategy ("random", "pct", "dpor", "dfs").
* `replay_scenario(scenario, adapter, schedule)`: follow a recorded
  schedule exactly (a divergence is a failure of kind "divergence").
* `follow_scenario(scenario, adapter, schedule)`: follow it leniently
  (lockstep's `GuidedStrategy`: a choice the implementation does not offer
  is skipped, the rest runs non-preemptively), for replaying a variant's
  schedule on an implementation whose choice points differ, e.g. the core.

Every outcome counts the switch points its executions reached *inside the
code under test* (`CheckOutcome.switch_points`: steps located outside
lockstep and outside this package's harness modules, `harness_files`): zero
means the implementation was never interleaved (its locks are real ones of
a module the adapter's ``patch_modules()`` does not name), which the suite
reports as an error, never as a pass.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Iterator, Mapping
from functools import cache
from types import ModuleType
from typing import Any, Final

import attrs

import lockstep
from lockstep.strategies import GuidedStrategy
from models_spec.adapter import ManagerAdapter, loaded_from
from models_spec.replayable import implementation_token, replay_name
from models_spec.scenarios import Scenario, i15_skips

__all__ = [
    "DEFAULT_MAX_STEPS",
    "DPOR_PREEMPTION_BOUND",
    "UNCONTROLLED_SYNC",
    "CheckOutcome",
    "code_switch_points",
    "explore_scenario",
    "failure_label",
    "follow_scenario",
    "harness_files",
    "replay_scenario",
    "scenario_id_for",
]

DEFAULT_MAX_STEPS = 3_000

DPOR_PREEMPTION_BOUND = 2
"""DPOR here is bounded to 2 preemptions (a heuristic, like loom's): unbounded, its
depth-first order spends a budget of hundreds of executions far from the
interleavings the named bugs need (B1-B3 escape 3000 executions; with the
bound they are found in about 300)."""


@cache
def harness_files() -> frozenset[str]:
    """The files of the harness: the modules directly in the ``models_spec`` package
    and in its internal ``_harness`` and ``_check`` packages.

    Steps located there (fake models' checkpoints, the driver's threads) are the
    harness interleaving itself; everything else (the implementation, a known-bug
    variant in ``models_spec/bugs``, a target in ``models_spec/targets``) is code
    under test.
    """
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    directories = [package, *(os.path.join(package, sub) for sub in ("_harness", "_check"))]
    return frozenset(
        os.path.join(directory, name)
        for directory in directories
        for name in os.listdir(directory)
        if name.endswith(".py")
    )


_ACCESS_KINDS = frozenset({"read", "write"})  # steps at watched accesses (lockstep.watch)


def code_switch_points(counts: Mapping[str, int]) -> int:
    """Steps of ``counts`` (file -> steps, `lockstep.ExploreResult.switch_points`) in code
    under test: outside lockstep (never attributed to it) and outside `harness_files`."""
    harness = harness_files()
    return sum(n for f, n in counts.items() if os.path.abspath(f) not in harness)


def _trace_counts(trace: lockstep.report.Trace) -> dict[str, int]:
    counts: dict[str, int] = {}
    for step in trace.steps:
        if step.kind in _ACCESS_KINDS:
            continue  # a watched access: not synchronisation (as ExploreResult.switch_points)
        filename = step.location.rpartition(":")[0] or step.location
        counts[filename] = counts.get(filename, 0) + 1
    return counts


def _import_modules(adapter: ManagerAdapter) -> list[ModuleType]:
    """Modules whose import roots a schedule must record: the target's and the adapter's."""
    found: list[ModuleType] = []
    target = loaded_from(adapter)
    for name in (target.partition(":")[0] if target else None, type(adapter).__module__):
        module = sys.modules.get(name) if name else None
        if module is not None and module not in found:
            found.append(module)
    return found


def scenario_id_for(scenario: Scenario, adapter: ManagerAdapter) -> str:
    """The id recorded in schedules, resolvable by ``lockstep replay``.

    ``models_spec.replayable:<scenario id>@<adapter name>``, or
    ``...@target=<module with '/' for '.'>:<factory>`` for an adapter that
    `load_adapter` loaded (see `models_spec.replayable`).
    """
    return f"models_spec.replayable:{replay_name(scenario.id, implementation_token(adapter))}"


UNCONTROLLED_SYNC: Final = "uncontrolled sync"


def failure_label(failure: lockstep.Failure | None) -> str:
    """What broke: the invariant id, else the exception type, else the failure kind
    (``UNCONTROLLED_SYNC`` for a data race that real, uncontrolled synchronisation
    in reach of it may order: lockstep cannot tell whether it is one)."""
    if failure is None:
        return ""
    if failure.race is not None and failure.race.uncontrolled:
        return UNCONTROLLED_SYNC
    if failure.kind == "invariant" and failure.invariant:
        return str(failure.invariant)
    if failure.exception is not None and failure.kind == "exception":
        return type(failure.exception).__name__
    return str(failure.kind)


@attrs.frozen
class CheckOutcome:
    """The result of running one scenario against one adapter one way.

    `failure` is the (shrunk) lockstep Failure or None; `executions` run;
    `elapsed` wall seconds; `mode` what ran ("random", "pct", "dpor",
    "replay", "follow"); `skipped` a reason when the adapter lacks a
    needed capability; `i15_skipped` the sorted (reason, executions) pairs
    of executions in which I15 was not judged (`scenarios.i15_skips`);
    `verdict` what a search established (`lockstep.Verdict`; None for a replay);
    `switch_points` the steps its executions took inside the code under test
    (see the module docstring; None when nothing ran); `shrunk` whether `failure`
    was minimised (False for a failure kept as the search found it); `others` the
    first failure of every other distinct kind and label a search that kept going
    after `failure` found (``keep_going``), in the order found; `failed_at` the 1-based
    index of the execution that found `failure` (None when unknown: a replay, no
    failure), which a search that kept going ran past.
    """

    scenario: str
    implementation: str
    mode: str
    failure: lockstep.Failure | None = attrs.field(eq=False)
    executions: int = 0
    elapsed: float = attrs.field(default=0.0, eq=False)
    exhausted: bool = False
    skipped: str | None = None
    i15_skipped: tuple[tuple[str, int], ...] = attrs.field(default=(), eq=False)
    verdict: lockstep.Verdict | None = attrs.field(default=None, eq=False)
    switch_points: int | None = attrs.field(default=None, eq=False)
    shrunk: bool = attrs.field(default=False, eq=False)
    others: tuple[lockstep.Failure, ...] = attrs.field(default=(), eq=False)
    failed_at: int | None = attrs.field(default=None, eq=False)

    @property
    def i15_report(self) -> tuple[str, ...]:
        """One line per reason: "I15 skipped in N executions because <reason>"."""
        return tuple(
            f"I15 skipped in {n} execution{'s' if n != 1 else ''} because {reason}"
            for reason, n in self.i15_skipped
        )

    @property
    def failed(self) -> bool:
        """True when the run found a failure."""
        return self.failure is not None

    @property
    def label(self) -> str:
        """The broken invariant id (or exception type / failure kind); "" when it passed."""
        return failure_label(self.failure)

    @property
    def kind(self) -> str:
        """The failure kind ("" when it passed)."""
        return "" if self.failure is None else self.failure.kind


@contextlib.contextmanager
def _quiet_core_logs() -> Iterator[None]:
    """Keep the core's warnings about expected outcomes (e.g. an admission over
    capacity while only leased models remain) off stderr during a run.

    With no logging configured, Python prints warnings through its last-resort
    handler; a null handler on the core's logger stops that without hiding
    anything from handlers a user did configure (records still propagate).
    The suite reports what breaks through invariants, not logs.
    """
    logger = logging.getLogger("modelmanager")
    handler = logging.NullHandler()
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


def _skip(scenario: Scenario, adapter: ManagerAdapter, mode: str) -> CheckOutcome | None:
    if scenario.supported_by(adapter):
        return None
    missing = sorted(scenario.all_needs - frozenset(adapter.capabilities))
    return CheckOutcome(
        scenario.id, adapter.name, mode, None, skipped=f"capability missing: {', '.join(missing)}"
    )


def _skips_since(before: dict[str, int]) -> tuple[tuple[str, int], ...]:
    after = i15_skips()
    return tuple(
        sorted((r, n - before.get(r, 0)) for r, n in after.items() if n > before.get(r, 0))
    )


def explore_scenario(
    scenario: Scenario,
    adapter: ManagerAdapter,
    *,
    strategy: str = "pct",
    budget: int = 200,
    seed: int = 0,
    shrink: bool = True,
    max_steps: int = DEFAULT_MAX_STEPS,
    settings: lockstep.Settings | None = None,
    races: bool = True,
    keep_going: bool = False,
) -> CheckOutcome:
    """Explore `scenario` on `adapter` with the named strategy, up to `budget` executions.

    ``keep_going``: search on after the first failure until the budget ends, and
    report the first failure of every other distinct invariant too (`others`).

    ``settings``: the lockstep.Settings to start from (None: lockstep's defaults; the
    keywords here set their budget, shrinking, step limit, races and keep_going).
    ``races`` False: data races on the watched
    state are not reported (the search still switches at watched accesses), so the
    invariant a race leads to is what fails.
    """
    skipped = _skip(scenario, adapter, strategy)
    if skipped is not None:
        return skipped
    options: dict[str, Any] = {}
    if strategy in ("random", "pct"):
        options["seed"] = seed
    elif strategy == "dpor":
        options["preemption_bound"] = DPOR_PREEMPTION_BOUND
    chosen = lockstep.strategies.make_strategy(strategy, **options)
    before = i15_skips()
    with _quiet_core_logs():
        result = lockstep.explore(
            scenario.build(adapter),
            settings,
            strategy=chosen,
            patch=adapter.patch_modules(),
            scenario_id=scenario_id_for(scenario, adapter),
            import_modules=_import_modules(adapter),
            budget=budget,
            max_steps=max_steps,
            shrink=shrink,
            progress=False,
            races=races,
            keep_going=keep_going,
        )
    return CheckOutcome(
        scenario.id,
        adapter.name,
        strategy,
        result.failure,
        result.executions,
        result.elapsed,
        result.exhausted,
        i15_skipped=_skips_since(before),
        verdict=result.verdict,
        switch_points=code_switch_points(result.switch_points),
        shrunk=result.failure is not None and result.shrink_executions > 0,
        others=result.failures[1:],
        failed_at=result.failed_at,
    )


def replay_scenario(
    scenario: Scenario, adapter: ManagerAdapter, schedule: lockstep.Schedule
) -> CheckOutcome:
    """Replay `schedule` exactly; a choice that is not offered is a "divergence" failure."""
    skipped = _skip(scenario, adapter, "replay")
    if skipped is not None:
        return skipped
    start = time.perf_counter()
    before = i15_skips()
    with _quiet_core_logs():
        result = lockstep.replay(scenario.build(adapter), schedule, patch=adapter.patch_modules())
    return CheckOutcome(
        scenario.id,
        adapter.name,
        "replay",
        result.failure,
        1,
        time.perf_counter() - start,
        i15_skipped=_skips_since(before),
        switch_points=code_switch_points(_trace_counts(result.trace)),
    )


def follow_scenario(
    scenario: Scenario, adapter: ManagerAdapter, schedule: lockstep.Schedule
) -> CheckOutcome:
    """Follow `schedule` leniently (skip unavailable choices, then run non-preemptively)."""
    skipped = _skip(scenario, adapter, "follow")
    if skipped is not None:
        return skipped
    before = i15_skips()
    with _quiet_core_logs():
        result = lockstep.explore(
            scenario.build(adapter),
            strategy=GuidedStrategy(schedule.choices, name="follow"),
            budget=1,
            patch=adapter.patch_modules(),
            max_steps=max(DEFAULT_MAX_STEPS, 2 * len(schedule.choices)),
            scenario_id=scenario_id_for(scenario, adapter),
            shrink=False,
            progress=False,
            import_modules=_import_modules(adapter),
        )
    return CheckOutcome(
        scenario.id,
        adapter.name,
        "follow",
        result.failure,
        result.executions,
        result.elapsed,
        i15_skipped=_skips_since(before),
        switch_points=code_switch_points(result.switch_points),
    )

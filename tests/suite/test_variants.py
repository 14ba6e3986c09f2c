"""Every known-bug variant of the catalogue is caught by its bug's scenario, as declared.

The expectations come from the bug modules (`models_spec._harness.catalogue`): the
invariants a variant breaks (`breaks`) and the search strategies expected to
catch it (`caught_by`).  Nothing here lists bugs.
"""

from __future__ import annotations

import pytest

from lockstep.suites import SuiteOptions
from models_spec._check.check import explore_scenario
from models_spec._check.suite import (
    DEFAULT_BUDGET,
    VARIANT_BUDGET_FACTOR,
    Job,
    ModeResult,
    _cell,
    _summary,
    plan_jobs,
    run_job,
)
from models_spec._harness.catalogue import VariantEntry, load
from models_spec._harness.corpus import load_corpus

CATALOGUE = load()
CORPUS = load_corpus()
VARIANTS = list(CATALOGUE.variants)


def test_one_named_scenario_per_bug_and_unique_variant_names() -> None:
    """Bug ids are B1..Bn without gaps; each bug has its scenario and named variants."""
    assert CATALOGUE.ids == tuple(f"B{n}" for n in range(1, len(CATALOGUE.bugs) + 1))
    assert [s.bugs for s in CATALOGUE.scenarios.values()] == [(b,) for b in CATALOGUE.ids]
    for entry in CATALOGUE.variant_entries:
        assert entry.name.startswith(f"variant-{entry.bug.id}-")
        assert entry.adapter().name == entry.name
        assert entry.adapter().bug == entry.bug.id


@pytest.mark.parametrize("name", VARIANTS)
def test_variant_caught_by_its_named_scenario(name: str) -> None:
    """The suite's variant job (corpus replay + PCT) reports CAUGHT with a declared invariant."""
    entry = CATALOGUE.variant(name)
    job = Job(0, entry.scenario.id, name, "variant", ("replay", "pct"), 40, 0, None)
    cell = run_job(job)
    assert cell.verdict == "CAUGHT"
    replay = cell.modes[0]
    assert replay.mode == "replay"
    assert replay.label == CORPUS[name].label
    assert replay.label in entry.breaks
    search = cell.modes[1]  # 40 executions: may miss, but what it finds is a declared break
    assert not search.kind or search.label in entry.breaks, search


def _expectations() -> list[tuple[VariantEntry, str]]:
    return [(e, s) for e in CATALOGUE.variant_entries for s in e.caught_by]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("entry", "strategy"), _expectations(), ids=[f"{e.name}-{s}" for e, s in _expectations()]
)
def test_expected_strategies_catch_the_variant(entry: VariantEntry, strategy: str) -> None:
    """Each strategy a bug module lists in `caught_by` catches its variant within the
    suite's default variant budget, through one of the declared invariants."""
    outcome = explore_scenario(
        entry.scenario,
        entry.adapter(),
        strategy=strategy,
        budget=DEFAULT_BUDGET * VARIANT_BUDGET_FACTOR,
        shrink=False,
    )
    assert outcome.failure is not None, f"{entry.name} escaped {strategy}"
    assert outcome.label in entry.breaks, str(outcome.failure)


def test_plan_runs_each_variant_only_on_its_own_scenario() -> None:
    """The default plan has one variant job per catalogue variant, on its bug's scenario,
    with replay and the strategies its bug module declares (in the run's order)."""
    jobs = [j for j in plan_jobs(SuiteOptions()) if j.role == "variant"]
    entries = CATALOGUE.variant_entries
    assert [(j.implementation, j.scenario) for j in jobs] == [
        (e.name, e.scenario.id) for e in entries
    ]
    for job, entry in zip(jobs, entries, strict=True):
        declared = tuple(s for s in ("pct", "dpor", "random") if s in entry.caught_by)
        assert job.modes == ("replay", *declared)
        assert job.expected == entry.caught_by
    assert any(len(j.modes) < 4 for j in jobs)  # some variant declares fewer strategies


def test_a_chosen_strategy_runs_on_every_variant() -> None:
    """``--strategy dpor`` runs DPOR on every variant, also where it is not declared."""
    jobs = [j for j in plan_jobs(SuiteOptions(strategy="dpor")) if j.role == "variant"]
    assert jobs
    assert all(j.modes[-1:] == ("dpor",) for j in jobs)


def test_summary_names_a_declared_strategy_that_escaped() -> None:
    """A variant whose declared strategy found nothing is named in the summary."""
    entry = next(e for e in CATALOGUE.variant_entries if "random" in e.caught_by)
    job = Job(
        0,
        entry.scenario.id,
        entry.name,
        "variant",
        ("pct", "random"),
        1,
        0,
        None,
        expected=("pct", "random"),
    )
    escaped = ModeResult("random", "", "", 1, 0.0)
    caught = ModeResult("pct", "invariant", "I4", 1, 0.0)
    cell = _cell(job, [caught, escaped])
    assert cell.verdict == "CAUGHT"
    lines = "\n".join(_summary([cell]))
    assert "declares in caught_by" in lines
    assert f"{entry.name} (random)" in lines
    clean = _cell(job, [caught, ModeResult("random", "invariant", "I4", 1, 0.0)])
    assert "declares in caught_by" not in "\n".join(_summary([clean]))

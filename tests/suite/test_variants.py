"""Every known-bug variant is caught by its named scenario, with the invariant named."""

from __future__ import annotations

import pytest

from lockstep.suites import SuiteOptions
from models_spec.corpus import load_corpus
from models_spec.scenarios import NAMED
from models_spec.suite import Job, factory_path, plan_jobs, run_job
from models_spec.variants import VARIANTS

CORPUS = load_corpus()

# The invariant each variant must break in its own scenario (the corpus replay).
EXPECTED = {
    "B1": {"I2", "I3", "I9"},  # two constructors: overlapping (I2) or one leaked (I9)
    "B2": {"I2", "I9"},
    "B3": {"I2", "I9"},
    "B4": {"I3", "I4"},
    "B5": {"I5"},
    "B6": {"I5"},
    "B7": {"I4"},
    "B8": {"I4"},
    "B9": {"I6"},
    "B10": {"I3"},
    "B11": {"I8"},
    "B12": {"I9"},
    "B13": {"I4"},
    "B14": {"I11"},
    "B15": {"I14"},
    "B16": {"I16"},
    "B17": {"I13"},
}


def test_one_variant_and_one_named_scenario_per_bug() -> None:
    """VARIANTS and the named scenarios both cover B1-B17, one each."""
    bugs = [f"B{n}" for n in range(1, 18)]
    assert list(VARIANTS) == bugs
    assert [s.bugs for s in NAMED.values()] == [(bug,) for bug in bugs]
    names = [factory().name for factory in VARIANTS.values()]
    assert len(set(names)) == len(names)
    assert all(f"-{bug}-" in name for bug, name in zip(bugs, names, strict=True))


@pytest.mark.parametrize("bug", list(VARIANTS))
def test_variant_caught_by_its_named_scenario(bug: str) -> None:
    """The suite's variant job (corpus replay + PCT) reports CAUGHT with the right invariant."""
    scenario = next(s for s in NAMED.values() if bug in s.bugs)
    job = Job(
        0,
        scenario.id,
        VARIANTS[bug]().name,
        "variant",
        ("replay", "pct"),
        40,
        0,
        None,
        factory_path(VARIANTS[bug]),
    )
    cell = run_job(job)
    assert cell.verdict == "CAUGHT"
    replay = cell.modes[0]
    assert replay.mode == "replay"
    assert replay.label == CORPUS[bug].label
    assert replay.label in EXPECTED[bug]


def test_plan_runs_each_variant_only_on_its_own_scenario() -> None:
    """The default plan has one variant job per bug, with replay and every strategy."""
    jobs = [j for j in plan_jobs(SuiteOptions()) if j.role == "variant"]
    assert [j.scenario for j in jobs] == [
        next(s.id for s in NAMED.values() if bug in s.bugs) for bug in VARIANTS
    ]
    assert all(j.modes == ("replay", "pct", "dpor", "random") for j in jobs)

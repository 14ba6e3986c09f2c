"""Upstream's deliberate differences (eviction in rounds of 3, clear() stopping at its
first failure) are declared, so the spec judges them as upstream's rules: B14's real race
(I11: more registered and in flight than max_size) is the cell's first failure, and a
cell names every invariant it saw break, so one failure never hides another."""

from __future__ import annotations

from pathlib import Path

from lockstep.suites import SuiteOptions
from models_spec._check.suite import Cell, plan_jobs, run_job
from tests.upstream._upstream import require_upstream

require_upstream()

B14 = "B14-admission-overshoot"


def _cell(tmp_path: Path, spec: str, scenario: str) -> Cell:
    options = SuiteOptions(output_dir=tmp_path, target=spec)
    (job,) = plan_jobs(options, targets=[(spec, spec)], scenarios=(scenario,))
    return run_job(job)


def test_with_the_semantics_declared_b14_fails_i11_first(tmp_path: Path) -> None:
    """The default run's B14 cell on the stack: I11 first, no I15 (the rounds of 3 are
    upstream's rule, judged as such)."""
    cell = _cell(tmp_path, "models_spec.targets.roboflow_inference:stack", B14)
    assert cell.verdict == "FAIL"
    assert cell.invariants[0] == "I11", cell.invariants
    assert "I15" not in cell.invariants


def test_undeclared_the_rounds_fail_i15_and_the_cell_still_names_i11(tmp_path: Path) -> None:
    """Without the declaration I15 is broken first (the rounds), and the race is not
    hidden behind it: the cell lists I11 too."""
    cell = _cell(tmp_path, "tests.upstream._undeclared:stack", B14)
    assert cell.verdict == "FAIL"
    assert cell.invariants[0] == "I15", cell.invariants
    assert "I11" in cell.invariants
    assert "Other invariants this cell saw break:" in cell.explanation


def test_one_search_keeps_going_after_its_first_failure(tmp_path: Path) -> None:
    """DPOR alone on B14 breaks I4 first (a failed eviction drops an in-flight load from the
    LRU, B9) and stops there without keep-going; the cell searches on and names I11 too."""
    spec = "models_spec.targets.roboflow_inference:stack"
    options = SuiteOptions(output_dir=tmp_path, target=spec, strategy="dpor")
    (job,) = plan_jobs(options, targets=[(spec, spec)], scenarios=(B14,))
    cell = run_job(job)
    assert [m.mode for m in cell.modes] == ["dpor"]
    assert cell.invariants[:2] == ("I4", "I11"), cell.invariants
    assert "  also by dpor: I11 (capacity) broken" in cell.explanation

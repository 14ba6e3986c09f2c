"""A control must change what it claims to change: an adapter whose `inert_control()`
says it did not makes each of its cells ERROR with that message, never PASS."""

from __future__ import annotations

from pathlib import Path

from lockstep.suites import SuiteOptions
from models_spec._check.suite import plan_jobs, run_job

FAKES = "tests.suite.fake_adapters"


def _cell(tmp_path: Path, target: str) -> object:
    options = SuiteOptions(budget=3, output_dir=tmp_path, target=target)
    (job,) = plan_jobs(
        options, targets=[(target, target)], scenarios=("B1-remove-add-generation-split",)
    )
    return run_job(job)


def test_an_inert_control_is_an_error_saying_why(tmp_path: Path) -> None:
    """The same manager PASSes; as an inert control its cell is ERROR, the reason shown."""
    cell = _cell(tmp_path, f"{FAKES}:inert_control")
    assert (cell.verdict, cell.label) == ("ERROR", "inert control")  # type: ignore[attr-defined]
    assert cell.message == "control is inert: the fake overrides nothing"  # type: ignore[attr-defined]
    working = _cell(tmp_path, f"{FAKES}:working_control")
    assert working.verdict == "PASS"  # type: ignore[attr-defined]

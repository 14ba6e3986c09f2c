"""`lockstep check --target` catches synchronisation and error-path bugs that no
known-bug variant of the core has (``sync_bug_targets``), and passes the same kind
of manager written correctly: bugs written by hand, not taken from the catalogue."""

from __future__ import annotations

import io
import re

import pytest

from lockstep.suites import SuiteOptions
from models_spec._check.report import failure_reports
from models_spec._check.suite import ModelManagerSuite, plan_jobs, run_jobs, table_rows

from .sync_bug_targets import ADAPTERS, CONTROL, REFUSED


def _verdicts(target: str, implementation: str) -> tuple[int, dict[str, str], str]:
    out = io.StringIO()
    status = ModelManagerSuite(stream=out).run(SuiteOptions(target=target, jobs=1, budget=30))
    text = out.getvalue()
    verdicts = {}
    for cells in table_rows(text):
        if cells[1] == implementation:
            verdicts[cells[0]] = cells[2]
    return status, verdicts, text


@pytest.mark.parametrize(("target", "implementation"), sorted(ADAPTERS.items()))
def test_a_hand_written_bug_fails_its_check(target: str, implementation: str) -> None:
    status, verdicts, text = _verdicts(target, implementation)
    assert status == 1, text
    assert "FAIL" in verdicts.values(), text
    assert "ERROR" not in verdicts.values(), text


def test_the_correct_condition_manager_passes() -> None:
    status, verdicts, text = _verdicts(*CONTROL)
    assert status == 0, text
    assert set(verdicts.values()) == {"PASS", "SKIP"}, text


@pytest.mark.parametrize(("target", "refused"), sorted(REFUSED.items()))
def test_a_manager_breaking_the_contract_sequentially_is_refused_up_front(
    target: str, refused: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """A clear() that swallows failed unloads is named by the validation, exit 2, before
    any search (one line, with the contract's anchor)."""
    status, _, text = _verdicts(target, refused[0])
    assert status == 2, text
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "failed validation before any search: " in err, err
    assert f"(see docs/contract.md#{refused[1]})" in err, err


def test_the_failure_says_what_the_spec_expected() -> None:
    """The double unload breaks I15 at clear(): the report says in words that the spec
    expected clear() to raise (its first unload fails, as scripted) and it did not.
    (The validation refuses this manager up front: its search is run here directly.)"""
    target = next(t for t, (name, _) in REFUSED.items() if name == "double-unload")
    options = SuiteOptions(target=target, jobs=1, budget=30)
    jobs = plan_jobs(options, targets=(("double-unload", target),), scenarios=["basic-1"])
    text = "\n".join(failure_reports(run_jobs(jobs, 1)))
    flat = " ".join(text.split())
    assert "thread main's clear() returned normally, which no one-at-a-time order" in flat, text
    assert "would have raised an ExceptionGroup of ScriptedUnloadError there" in flat, text


def test_the_heading_names_the_execution_that_failed() -> None:
    """A target's search goes on to its budget after a failure (one failure never hides
    another); the heading names the execution that found it, not the budget."""
    target = next(t for t, name in ADAPTERS.items() if name == "if-not-while")
    options = SuiteOptions(target=target, jobs=1, budget=30)
    jobs = plan_jobs(options, targets=(("if-not-while", target),), scenarios=["basic-1"])
    (cell,) = run_jobs(jobs, 1)
    heading = cell.explanation.splitlines()[0]
    found = re.fullmatch(
        r"basic-1 on if-not-while: found by \w+ at execution (\d+) of (\d+)", heading
    )
    assert found is not None, heading
    assert int(found.group(1)) < int(found.group(2)), heading

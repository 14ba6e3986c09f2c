"""The basic scenarios judge the failure paths of a manager with no capability at all.

A manager with only add/remove/clear/[]/in/keys/len (``SerialManagerAdapter``'s
capabilities) used to get the four named scenarios that need nothing, none of
which scripts a failed unload or calls clear(): a remove that loses the model when
``clear_cache`` raises, or a clear that stops at the first failure, passed every
cell. ``basic-1`` and ``basic-2`` script failed unloads and end with a clear(). The
validation now refuses both managers before any search (their clear() is tried with
two failing unloads); their searches are still run here, directly, to keep the basic
scenarios able to catch what a validation cannot (an interleaving).
"""

from __future__ import annotations

import io

import pytest

from lockstep.suites import SuiteOptions
from models_spec._check.suite import ModelManagerSuite, plan_jobs, run_jobs, table_rows


def _rows(target: str, implementation: str) -> tuple[int, dict[str, list[str]], str]:
    """Exit status, the table's rows that ran (by scenario) and the whole text."""
    out = io.StringIO()
    status = ModelManagerSuite(stream=out).run(SuiteOptions(target=target, jobs=1, budget=20))
    text = out.getvalue()
    rows = {}
    for cells in map(list, table_rows(text)):
        if cells[1] == implementation and cells[2] != "SKIP":
            rows[cells[0]] = cells
    return status, rows, text


_BUGGY = [
    ("tests.suite.basic_target:PopBeforeUnloadAdapter", "pop-before-unload"),
    ("tests.suite.basic_target:ClearStopsEarlyAdapter", "clear-stops-early"),
]


@pytest.mark.parametrize(("target", "implementation"), _BUGGY)
def test_failure_path_bugs_of_a_basic_manager_are_caught(target: str, implementation: str) -> None:
    """Only the basic scenarios fail them, with I15 (a model left the registry although its
    removal raised; clear() raised one error and left models it never tried); every older
    scenario they can run passes. (The validation refuses both before any search, see
    below: the searches are run here directly.)"""
    jobs = plan_jobs(
        SuiteOptions(target=target, jobs=1, budget=20), targets=((implementation, target),)
    )
    cells = {cell.scenario: cell for cell in run_jobs(jobs, 1) if cell.verdict != "SKIP"}
    basic = {scenario: cell for scenario, cell in cells.items() if scenario.startswith("basic-")}
    assert sorted(basic) == ["basic-1", "basic-2"], cells
    for cell in basic.values():
        assert (cell.verdict, cell.label) == ("FAIL", "I15"), cell
    others = {scenario: cell for scenario, cell in cells.items() if scenario not in basic}
    assert others, cells
    for cell in others.values():
        assert cell.verdict == "PASS", cell


@pytest.mark.parametrize(("target", "implementation"), _BUGGY)
def test_the_validation_refuses_them_before_any_search(
    target: str, implementation: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Their clear() cannot keep its contract when two unloads fail (it raises one error,
    or loses the failed models): one line, exit 2, the contract's section."""
    status, rows, text = _rows(target, implementation)
    assert status == 2, text
    assert not rows, text
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "failed validation before any search" in err
    assert err.rstrip().endswith("(see docs/contract.md#clear)"), err


def test_the_correct_basic_manager_passes_the_basic_scenarios() -> None:
    status, rows, text = _rows("examples.own_manager:SerialManagerAdapter", "serial-manager")
    assert status == 0, text
    assert rows["basic-1"][2] == rows["basic-2"][2] == "PASS", text

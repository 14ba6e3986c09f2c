"""The basic scenarios judge the failure paths of a manager with no capability at all.

A manager with only add/remove/clear/[]/in/keys/len (``SerialManagerAdapter``'s
capabilities) used to get the four named scenarios that need nothing, none of
which scripts a failed unload or calls clear(): a remove that loses the model when
``clear_cache`` raises, or a clear that stops at the first failure, passed every
cell. ``basic-1`` and ``basic-2`` script failed unloads and end with a clear().
"""

from __future__ import annotations

import io

import pytest

from lockstep.suites import SuiteOptions
from models_spec._check.suite import ModelManagerSuite, table_rows


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


@pytest.mark.parametrize(
    ("target", "implementation"),
    [
        ("tests.suite.basic_target:PopBeforeUnloadAdapter", "pop-before-unload"),
        ("tests.suite.basic_target:ClearStopsEarlyAdapter", "clear-stops-early"),
    ],
)
def test_failure_path_bugs_of_a_basic_manager_are_caught(target: str, implementation: str) -> None:
    """Only the basic scenarios fail them, with I15 (a model left the registry although its
    removal raised; clear() raised one error and left models it never tried); every older
    scenario they can run passes."""
    status, rows, text = _rows(target, implementation)
    assert status == 1, text
    basic = {scenario: row for scenario, row in rows.items() if scenario.startswith("basic-")}
    assert sorted(basic) == ["basic-1", "basic-2"], text
    for row in basic.values():
        assert row[2:4] == ["FAIL", "I15"], row
    others = {scenario: row for scenario, row in rows.items() if scenario not in basic}
    assert others, text
    for row in others.values():
        assert row[2] == "PASS", row


def test_the_correct_basic_manager_passes_the_basic_scenarios() -> None:
    status, rows, text = _rows("examples.own_manager:SerialManagerAdapter", "serial-manager")
    assert status == 0, text
    assert rows["basic-1"][2] == rows["basic-2"][2] == "PASS", text

"""A target that starts a real OS thread is an ERROR naming the module to patch.

Such a cell proves nothing (the thread runs unscheduled and its accesses unseen), so it
is neither a FAIL of the user's manager nor a PASS: ERROR, and the cell stops at the
first mode that met it.
"""

from __future__ import annotations

import io

from lockstep.suites import SuiteOptions
from models_spec._check.suite import ModelManagerSuite, table_rows

IMPLEMENTATIONS = ("pool-manager",)


def _check(target: str) -> tuple[int, str]:
    out = io.StringIO()
    status = ModelManagerSuite(stream=out).run(SuiteOptions(target=target, jobs=1, budget=5))
    return status, out.getvalue()


def _rows(text: str) -> dict[str, list[str]]:
    """The table's rows that ran (not SKIP), by scenario."""
    rows = {}
    for cells in map(list, table_rows(text)):
        if cells[1] in IMPLEMENTATIONS and cells[2] != "SKIP":
            rows[cells[0]] = cells
    return rows


def test_a_real_thread_in_the_target_is_an_error_naming_the_module() -> None:
    status, text = _check("tests.suite.pool_target:PoolManagerAdapter")
    assert status == 1, text
    rows = _rows(text)
    assert "B1-remove-add-generation-split" in rows, text
    for row in rows.values():
        assert row[2:4] == ["ERROR", "uncontrolled thread"], row
        assert row[4] == "1"  # the cell stopped at the first mode that met it
    assert "probably 'concurrent.futures.thread'" in text


def test_a_pool_that_outlives_the_scenario_passes_when_its_modules_are_patched() -> None:
    """Its idle workers stop at the main thread's end, as the interpreter's exit hook
    stops them (they used to be reported as a deadlock in every cell)."""
    out = io.StringIO()
    target = "tests.suite.pool_target:LongPoolManagerAdapter"
    status = ModelManagerSuite(stream=out).run(SuiteOptions(target=target, jobs=1, budget=5))
    text = out.getvalue()
    assert status == 0, text
    rows = [list(r) for r in table_rows(text) if r[1] == "long-pool-manager"]
    ran = [row for row in rows if row[2] != "SKIP"]
    assert ran, text
    assert all(row[2] == "PASS" for row in ran), text

"""`lockstep check --target models_spec.targets.roboflow_inference` on the installed package:
exit 1, FAIL rows for the bug classes the real code has, controls PASS, and the same table as
docs/roboflow-inference.md shows."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from lockstep.suites import SuiteOptions
from models_spec._check.suite import ModelManagerSuite, table_rows
from models_spec.targets.roboflow_inference.record import DOC, TARGET
from tests.upstream._upstream import require_upstream

require_upstream()

EXPECTED_FAILS = {
    # (scenario, implementation): invariant, for the classes the issue names
    ("B1-remove-add-generation-split", "inference-manager"): "I16",  # remove + reload
    ("B2-constructor-failure-split", "inference-manager"): "I2",  # split on constructor failure
    ("B4-warm-fast-path-bypass", "inference-stack"): "I4",  # the unlocked warm path
    ("B5-failed-remove-desyncs-lru", "inference-stack"): "I5",
    ("B7-duplicate-lru-entries", "inference-stack"): "I4",  # duplicate LRU entries
    ("B9-failed-multi-eviction", "inference-stack"): "I6",  # failed-eviction LRU rollback
    ("B10-alias-is-the-key", "inference-stack"): "I3",
    ("B13-phantom-from-refresh", "inference-stack"): "I4",
    ("B14-admission-overshoot", "inference-stack"): "I11",  # admission overshoot, declared rounds
    ("B15-queue-lock-across-unload", "inference-stack"): "I14",
}


def _rows(text: str) -> list[tuple[str, ...]]:
    """(scenario, implementation, verdict, invariant, executions) of each table row."""
    rows = []
    # The table as printed (a block per scenario), or as recorded in the document before
    # the table fitted 100 columns (one line per row, the scenario first).
    parsed = table_rows(text) or [
        tuple(re.split(r"\s{2,}", line.strip())) for line in text.splitlines()
    ]
    for cells in parsed:
        if len(cells) >= 5 and (cells[0].startswith("B") or cells[0].startswith("random-")):
            time_free = [c for c in cells if not re.fullmatch(r"\d+\.\d+s", c)]
            rows.append(tuple(time_free[:5]))
    return rows


@pytest.fixture(scope="module")
def printed(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str]:
    """What the check prints (in-process, as `lockstep check` runs the suite)."""
    out = io.StringIO()
    status = ModelManagerSuite(stream=out).run(
        SuiteOptions(target=TARGET, output_dir=tmp_path_factory.mktemp("report"))
    )
    return status, out.getvalue()


@pytest.mark.slow
def test_the_check_fails_with_the_bug_classes_and_the_controls_pass(
    printed: tuple[int, str],
) -> None:
    """Exit 1; each named class FAILs with its invariant first; the control never fails."""
    status, text = printed
    assert status == 1
    rows = {(r[0], r[1]): (r[2], r[3].split(",")[0]) for r in _rows(text)}
    for key, invariant in EXPECTED_FAILS.items():
        assert rows[key] == ("FAIL", invariant), key
    control = {k: v for k, v in rows.items() if k[1] == "inference-manager-never-dispose"}
    assert {v[0] for v in control.values()} == {"PASS", "SKIP", "ERROR"}
    # ERROR only where the control's override never ran (it proves nothing there)
    assert all(v[1] == "inert control" for v in control.values() if v[0] == "ERROR")
    assert all(
        control[(s, "inference-manager-never-dispose")][0] == "PASS"
        for s, _ in [k for k in EXPECTED_FAILS if k[1] == "inference-manager"]
    )


@pytest.mark.slow
def test_the_documented_table_is_what_the_check_prints(printed: tuple[int, str]) -> None:
    """docs/roboflow-inference.md shows the same rows (time left out); re-record if not."""
    documented = Path(DOC).read_text(encoding="utf-8")
    section = documented.split(f"### What `lockstep check --target {TARGET}` prints", 1)[1]
    block = section.split("```text\n", 1)[1].split("```", 1)[0]
    assert _rows(block) == _rows(printed[1]), (
        "docs/roboflow-inference.md is out of date: "
        "python3 -m models_spec.targets.roboflow_inference.record"
    )

"""`lockstep check --target` catches synchronisation and error-path bugs that no
known-bug variant of the core has (``sync_bug_targets``), and passes the same kind
of manager written correctly: bugs written by hand, not taken from the catalogue."""

from __future__ import annotations

import io

import pytest

from lockstep.suites import SuiteOptions
from models_spec._check.suite import ModelManagerSuite, table_rows

from .sync_bug_targets import ADAPTERS, CONTROL


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


def test_the_failure_says_what_the_spec_expected() -> None:
    """The double unload breaks I15 at clear(): the report says in words that the spec
    expected clear() to raise (its first unload fails, as scripted) and it did not."""
    target = next(t for t, name in ADAPTERS.items() if name == "double-unload")
    _, _, text = _verdicts(target, "double-unload")
    flat = " ".join(text.split())
    assert "thread main's clear() returned normally, which no one-at-a-time order" in flat, text
    assert "would have raised an ExceptionGroup of ScriptedUnloadError there" in flat, text

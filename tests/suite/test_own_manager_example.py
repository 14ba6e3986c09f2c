"""The worked "check your own manager" example in examples/own_manager.py works as documented."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

from lockstep.suites import SuiteOptions
from models_spec._check.suite import ModelManagerSuite, table_rows
from models_spec._harness.catalogue import DEFAULT_PACKAGE, load
from models_spec.pytest_suite import conformance_tests

# The README's pytest recipe, verbatim: one test per scenario; those needing an
# LRU, pins, leases or capacity are skipped (SerialManager has none of them).
test_serial_manager_conforms = conformance_tests(
    "examples.own_manager:SerialManagerAdapter",
    scenarios=[
        "B1-remove-add-generation-split",
        "B2-constructor-failure-split",
        "B7-duplicate-lru-entries",
    ],
)


def _check(target: str, output_dir: Path) -> tuple[int, str]:
    out = io.StringIO()
    status = ModelManagerSuite(stream=out).run(SuiteOptions(target=target, output_dir=output_dir))
    return status, out.getvalue()


def test_correct_manager_passes_and_reports_skips(tmp_path: Path) -> None:
    """`lockstep check --target` on the correct manager: exit 0, no FAIL, skips named."""
    status, text = _check("examples.own_manager:SerialManagerAdapter", tmp_path)
    assert status == 0, text
    assert "FAIL" not in text
    assert "capability missing: lru" in text


def test_buggy_manager_fails_with_a_replayable_schedule(tmp_path: Path) -> None:
    """The unlocked check-then-act is caught (I2) and its saved schedule replays by file."""
    status, text = _check("examples.own_manager:UnlockedCheckManagerAdapter", tmp_path)
    assert status == 1, text
    row = next(r for r in table_rows(text) if r[0] == "B1-remove-add-generation-split")
    assert row[2] == "FAIL"
    assert "I2" in row[3].split(", ")
    # Under the heading, what the scenario asks of the manager: title, then each thread.
    lines = text.splitlines()
    at = next(
        i
        for i, line in enumerate(lines)
        if line.startswith("B1-remove-add-generation-split on unlocked-check-manager: found by")
    )
    scenario = load(DEFAULT_PACKAGE).scenarios["B1-remove-add-generation-split"]
    story = scenario.story().splitlines()
    title = f"  Scenario {scenario.id} \u2014 {scenario.title}"
    assert lines[at + 1] == title[: len(lines[at + 1])]
    described = lines[at + 1 : at + 1 + len(story) + 2]
    for name, ops in scenario.threads:
        assert f"    thread {name}: " + "; ".join(op.call for op in ops) in described, described
    alone = re.compile(r"\s*(lockstep replay )?/\S+")  # a path is never cut
    too_wide = [line for line in lines if len(line) > 100 and not alone.fullmatch(line)]
    assert not too_wide, too_wide
    saved = sorted(tmp_path.glob("B1-remove-add-generation-split__*.json"))
    assert saved, f"no schedule saved in {tmp_path}"
    replay = subprocess.run(
        [sys.executable, "-m", "lockstep", "replay", str(saved[0])],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert "I2 violated" in replay.stdout
    assert f"lockstep replay {saved[0]}" in replay.stdout

"""`lockstep compare BEFORE.json AFTER.json`: fixed, still failing, changed, new failure,
not judged, passing; totals; exit 1 only when something fails that did not before."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from lockstep import _cli as cli
from lockstep._compare import CHANGES, compare


def _case(scenario: str, outcome: str, verdict: str, *invariants: str) -> dict[str, Any]:
    case: dict[str, Any] = {
        "id": f"{scenario}[impl]",
        "outcome": outcome,
        "verdict": verdict,
        "scenario": scenario,
        "implementation": "impl",
        "invariant": invariants[0] if invariants else "",
    }
    if invariants:
        case["invariants"] = list(invariants)
    return case


def _write(path: Path, *cases: dict[str, Any]) -> Path:
    document = {
        "tool": "lockstep check",
        "exit_code": 1,
        "suites": {"modelmanager": {"exit_code": 1, "cases": list(cases)}},
    }
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


BEFORE = (
    _case("fixed", "failed", "FAIL", "I2"),
    _case("same", "failed", "FAIL", "I14"),
    _case("other", "failed", "FAIL", "I15"),
    _case("narrower", "failed", "FAIL", "I15", "I11"),
    _case("broke", "passed", "PASS"),
    _case("skipped", "skipped", "SKIP"),
    _case("errored", "failed", "FAIL", "I4"),
    _case("ok", "passed", "PASS"),
)
AFTER = (
    _case("fixed", "passed", "PASS"),
    _case("same", "failed", "FAIL", "I14"),
    _case("other", "failed", "FAIL", "I11"),
    _case("narrower", "failed", "FAIL", "I15"),
    _case("broke", "failed", "FAIL", "I4"),
    _case("skipped", "skipped", "SKIP"),
    _case("errored", "error", "ERROR"),
    _case("ok", "passed", "PASS"),
)


def run_cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return cli.main(list(argv), out=out), out.getvalue()


def test_each_case_gets_its_change_and_the_totals_add_up(tmp_path: Path) -> None:
    """One row per case with its change; the totals count every kind."""
    before = _write(tmp_path / "before.json", *BEFORE)
    after = _write(tmp_path / "after.json", *AFTER)
    code, text = run_cli("compare", str(before), str(after), "--labels", "1.8.3", "pr")
    rows = {line.split()[0]: line for line in text.splitlines()[1:] if line.strip()}
    assert rows["fixed"].endswith("fixed")
    assert rows["same"].endswith("still failing")
    assert rows["other"].endswith("changed, now also I11")
    assert rows["narrower"].endswith("still failing")  # I15 first on both; I11 gone
    assert rows["broke"].endswith("new failure")
    assert rows["skipped"].endswith("not judged")
    assert rows["errored"].endswith("not judged")
    assert rows["ok"].endswith("passing")
    assert text.splitlines()[0].split() == ["scenario", "implementation", "1.8.3", "pr", "change"]
    assert "new failure 1, changed 1, still failing 2, fixed 1, not judged 2, passing 1" in text
    assert code == 1
    assert "2 case(s) fail in ways they did not before (broke on impl, other on impl)" in text


def test_nothing_new_exits_0(tmp_path: Path) -> None:
    """Fixes, unchanged failures and narrower failures are no reason to fail."""
    before = _write(tmp_path / "before.json", *BEFORE[:4])
    after = _write(tmp_path / "after.json", AFTER[0], AFTER[1], BEFORE[2], AFTER[3])
    lines, code = compare(before, after)
    assert code == 0, lines
    assert set(CHANGES) == {
        "new failure",
        "changed",
        "still failing",
        "fixed",
        "not judged",
        "passing",
    }


def test_a_case_on_one_side_only_is_not_judged(tmp_path: Path) -> None:
    """Absent on one side: nothing can be said about a change."""
    before = _write(tmp_path / "before.json", BEFORE[0])
    after = _write(tmp_path / "after.json", AFTER[4])
    lines, code = compare(before, after)
    assert code == 0
    assert [line.split()[-1] for line in lines[1:3]] == ["judged", "judged"]
    assert "absent" in lines[1]
    assert "absent" in lines[2]


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("not json", "is not JSON"),
        ('{"tool": "pytest"}', "is not a `lockstep check --json` file"),
    ],
)
def test_a_file_that_is_not_a_check_json_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, says: str
) -> None:
    """A usage error: one line naming the file, exit 2."""
    bad = tmp_path / "bad.json"
    bad.write_text(content, encoding="utf-8")
    good = _write(tmp_path / "good.json", *AFTER)
    code, _ = run_cli("compare", str(bad), str(good))
    assert code == cli.EXIT_USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert says in err[0]
    assert run_cli("compare", str(tmp_path / "missing.json"), str(good))[0] == cli.EXIT_USAGE

"""`lockstep check --target` from a user's project, as a CI step people can trust.

Every test here runs the real command in a fresh process from a fresh project
directory (``user_project.MYMGR`` written as ``mymgr.py``), the way a new user
would: nothing but the current directory makes ``mymgr`` importable.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from models_spec._check.suite import table_rows

from .user_project import write_project

RUNNER = "import sys; from lockstep._cli import main; sys.exit(main(sys.argv[1:]))"
FAST = ["--budget", "3", "--jobs", "1", "--stall-diagnosis", "0.5"]


def lockstep(*argv: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run ``lockstep ARGV`` like the console script: the cwd is *not* put on sys.path
    by Python (``-P``), only by lockstep itself."""
    return subprocess.run(
        [sys.executable, "-P", "-c", RUNNER, *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    directory = tmp_path / "project"
    write_project(directory)
    return directory


@pytest.fixture(scope="module")
def unpatched_check(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """One ``lockstep check`` of ``mymgr:Unpatched`` (with ``--json``) and its JSON table,
    shared by the tests that read it: each stalled cell waits out the stall diagnosis,
    so one run costs about half a minute."""
    directory = tmp_path_factory.mktemp("unpatched") / "project"
    write_project(directory)
    table = directory / "t.json"
    proc = lockstep(
        "check", "--target", "mymgr:Unpatched", *FAST, "--json", str(table), cwd=directory
    )
    return proc, json.loads(table.read_text()) if table.exists() else {}


def _rows(stdout: str, implementation: str) -> dict[str, str]:
    """scenario -> verdict, from the printed table."""
    return {parts[0]: parts[2] for parts in table_rows(stdout) if parts[1] == implementation}


def test_target_is_imported_from_the_current_directory(project: Path) -> None:
    """`--target mymgr:Adapter` run from the project's directory finds mymgr (no
    PYTHONPATH, no `python -m`); the correct manager passes where it can run."""
    proc = lockstep("check", "--target", "mymgr:Adapter", *FAST, cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    verdicts = _rows(proc.stdout, "my-manager")
    assert verdicts["B1-remove-add-generation-split"] == "PASS"
    assert set(verdicts.values()) == {"PASS", "SKIP"}


@pytest.mark.parametrize(
    ("target", "says"),
    [
        ("nosuchmodule:Adapter", "cannot import module 'nosuchmodule'"),
        ("mymgr:NoSuchAdapter", "module 'mymgr' has no attribute 'NoSuchAdapter'"),
        ("brokenmod:Adapter", "No module named 'dependency_that_is_missing'"),
        ("mymgr", "ADAPTERS"),
    ],
)
def test_a_wrong_target_is_one_line_and_exit_2(project: Path, target: str, says: str) -> None:
    """A misspelt module or attribute, or a module whose own import fails: one line
    naming the module/attribute and the cause, exit 2 (usage), nothing run."""
    (project / "brokenmod.py").write_text("import dependency_that_is_missing\n")
    proc = lockstep("check", "--target", target, *FAST, cwd=project)
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert says in lines[0]
    assert "Traceback" not in proc.stderr
    assert "PASS" not in proc.stdout


@pytest.mark.parametrize(
    ("adapter", "says", "section"),
    [
        ("BadSnapshot", "snapshot(stack) must return a models_spec.adapter.Snapshot", "adapter"),
        ("NoClear", "called the model's clear_cache 0 times", "model"),
        (
            "AlwaysDeletes",
            "delete_from_disk=False) called clear_cache(delete_from_disk=True) (expected "
            "clear_cache(delete_from_disk=False))",
            "model",
        ),
        ("BadModules", "patch_modules() must return a list of modules", "adapter"),
        (
            "TwoArgumentAdd",
            "your `add_model` takes (model_id, api_key); the scenarios call "
            "add_model(model_id, api_key, model_id_alias) (see docs/contract.md#add_model)",
            "contract",
        ),
    ],
)
def test_the_adapter_and_model_protocol_are_validated_before_any_search(
    project: Path, adapter: str, says: str, section: str
) -> None:
    """One sequential add/remove through the adapter runs first, every call in the shape
    the scenarios make it; a missing piece or a signature that cannot take a shape is
    one line naming the section that describes it, exit 2, no cell runs."""
    proc = lockstep("check", "--target", f"mymgr:{adapter}", *FAST, cwd=project)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert says in proc.stderr
    if section == "adapter":
        assert "(see docs/contract.md#the-adapter)" in proc.stderr
    elif section == "model":
        assert "README.md, section 'The model protocol'" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "failed validation before any search" in proc.stderr
    assert "scenario" not in proc.stdout  # no table: nothing was explored


def test_no_silent_green_an_unpatched_manager_is_an_error(
    unpatched_check: tuple[subprocess.CompletedProcess[str], dict[str, Any]],
) -> None:
    """An adapter whose patch_modules() misses the manager's module never passes:
    every runnable cell is an ERROR (0 switch points, or a stall named within the
    diagnosis window), and the check exits 1. The report names what was patched, the
    real lock and the module to add, once: the other cells point at that report."""
    proc, _ = unpatched_check
    assert proc.returncode == 1, proc.stdout + proc.stderr
    verdicts = _rows(proc.stdout, "my-unpatched-manager")
    assert "PASS" not in verdicts.values()
    assert set(verdicts.values()) == {"ERROR", "SKIP"}
    flat = " ".join(proc.stdout.split())
    # What was patched, where the real lock lives, and the module to add.
    assert "0 switch points: patch_modules() patches nothing (it returns no module)" in flat
    assert "stack._lock, a real threading.Lock that mymgr.Manager holds" in flat
    assert "add module mymgr to patch_modules()" in flat
    # One cause, explained once: every other ERROR is one line pointing at it.
    errors = sum(1 for v in verdicts.values() if v == "ERROR")
    assert len(re.findall(r"^--- ERROR \d+/\d+ -", proc.stdout, re.MULTILINE)) == 1
    assert flat.count(", same cause as 1/") == errors - 1
    # Nothing passed: no search established anything.
    assert "What the searches established" not in proc.stdout
    if "stall" in proc.stdout and "stall, same cause" not in flat:  # reported in full
        assert "threading.Lock.acquire" in proc.stdout
        assert "probably 'mymgr'" in proc.stdout


def _labelled(out: str, label: str) -> str:
    """What follows ``label`` in a report: on its line, or alone on the next one when the
    line would be over 100 columns (a long path)."""
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith(label))
    value = lines[at].split(label, 1)[1].strip()
    return value or lines[at + 1].strip()


def test_a_failure_explains_itself_and_replays_from_anywhere(project: Path, tmp_path: Path) -> None:
    """A FAIL prints the invariant and message, the shrunk swimlanes within 100
    columns, the schedule and HTML paths, and a `lockstep replay` command that
    reproduces the failure when run from another directory."""
    proc = lockstep("check", "--target", "mymgr:Racy", *FAST, cwd=project)
    assert proc.returncode == 1
    out = proc.stdout
    assert "FAIL" in _rows(out, "my-racy-manager").values()
    # The racy manager's state is watched: its first failure is an invariant broken
    # or the data race that leads there, each named with both sides.
    broken = re.search(r"(I\d+) \([a-z -]+\) broken at step \d+: ", out)
    race = re.search(r"data-race: (data race on \S+):", out)
    assert broken is not None or race is not None, out
    expected = f"invariant {broken.group(1)} violated" if broken else race.group(1)  # type: ignore[union-attr]
    assert "Failing interleaving, shrunk" in out
    lanes = out[out.index("  step |") : out.index("(! = preemption")]
    assert max(len(line) for line in lanes.splitlines()) <= 100
    schedule = Path(_labelled(out, "schedule:").split()[-1])
    html = Path(_labelled(out, "timeline:").split()[-1])
    assert schedule.is_file()
    assert html.is_file()
    assert schedule.is_absolute()
    assert _labelled(out, "reproduce:") == f"lockstep replay {schedule}"
    elsewhere = tmp_path / "somewhere-else"
    elsewhere.mkdir()
    replayed = lockstep("replay", str(schedule), cwd=elsewhere)
    assert replayed.returncode == 1, replayed.stderr
    assert expected in replayed.stdout


def test_reports_of_earlier_runs_never_mix_in(project: Path) -> None:
    """Each run writes into a directory of its own; the counts are this run's only."""
    first = lockstep("check", "--target", "mymgr:Racy", *FAST, cwd=project)
    second = lockstep("check", "--target", "mymgr:Adapter", *FAST, cwd=project)
    assert first.returncode == 1
    assert second.returncode == 0
    runs = sorted((project / "lockstep-report").iterdir())
    assert len(runs) == 1  # the passing run wrote nothing (and created nothing)
    assert "failing schedule" not in second.stdout
    assert "0 failing" not in second.stdout
    assert "to look at" not in second.stdout


def test_junit_xml_and_json_describe_every_cell(project: Path, tmp_path: Path) -> None:
    """--junit-xml: one testcase per cell, a failure carrying its message and replay
    command; --json: the table with every cell's verdict and files."""
    junit, table = tmp_path / "ci" / "junit.xml", tmp_path / "ci" / "check.json"
    junit.parent.mkdir()  # a CI file's directory must exist (only --output-dir is created)
    proc = lockstep(
        "check",
        "--target",
        "mymgr:Racy",
        *FAST,
        "--junit-xml",
        str(junit),
        "--json",
        str(table),
        "--quiet",
        cwd=project,
    )
    assert proc.returncode == 1
    root = ET.parse(junit).getroot()
    cases = root.findall("./testsuite/testcase")
    data = json.loads(table.read_text())
    cells = data["suites"]["modelmanager"]["cases"]
    rows = _rows(proc.stdout, "my-racy-manager")  # --quiet: no table, so count otherwise
    assert not rows
    assert len(cases) == len(cells) >= 20  # one per scenario of the catalogue
    assert root.get("tests") == str(len(cells))
    failures = [c for c in cases if c.find("failure") is not None]
    assert failures
    failure = failures[0].find("failure")
    assert failure is not None
    # An invariant broken, or the data race leading there (the racy state is watched).
    assert re.match(
        r"I\d+ \([a-z -]+\) broken at step \d+: |data-race: data race on ",
        failure.get("message") or "",
    )
    assert "lockstep replay /" in (failure.text or "")
    skipped = [c for c in cases if c.find("skipped") is not None]
    assert len(skipped) == sum(1 for cell in cells if cell["verdict"] == "SKIP")
    failed = [cell for cell in cells if cell["verdict"] == "FAIL"]
    assert all(cell["replay"].startswith("lockstep replay /") for cell in failed)
    assert all(Path(path).is_file() for cell in failed for path in cell["artifacts"])
    assert data["exit_code"] == 1
    assert data["interrupted"] is False
    # --quiet: no table, no progress; the failures and the summary remain
    assert "scenario  " not in proc.stdout
    assert "lockstep check:" not in proc.stderr
    assert re.search(
        r"I\d+ \([a-z -]+\) broken at step \d+: |data-race: data race on ", proc.stdout
    )


def test_the_same_run_split_in_two_shards_is_the_whole_run(project: Path, tmp_path: Path) -> None:
    """--shard 1/2 and 2/2 run disjoint sets of cells whose union is the unsharded run,
    with the same verdicts."""

    def cells(*extra: str) -> dict[str, str]:
        out = tmp_path / f"run{'-'.join(extra).replace('/', 'of')}.json"
        proc = lockstep(
            "check", "--target", "mymgr:Racy", *FAST, "--json", str(out), *extra, cwd=project
        )
        assert proc.returncode in (0, 1), proc.stderr
        data = json.loads(out.read_text())
        return {c["id"]: c["verdict"] for c in data["suites"]["modelmanager"]["cases"]}

    whole = cells()
    first = cells("--shard", "1/2")
    second = cells("--shard", "2/2")
    assert first
    assert second
    assert not set(first) & set(second)
    assert {**first, **second} == whole


def test_bad_output_paths_are_refused_before_the_run(project: Path, tmp_path: Path) -> None:
    """--output-dir that is a file (or under one), or a --junit-xml that is a directory:
    one line, exit 2, before anything runs."""
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory")
    for argv, says in [
        (["--output-dir", str(a_file)], "exists and is not a directory"),
        (["--output-dir", str(a_file / "sub")], "is not a writable directory"),
        (["--junit-xml", str(tmp_path)], "is a directory"),
    ]:
        proc = lockstep("check", "--target", "mymgr:Adapter", *FAST, *argv, cwd=project)
        assert proc.returncode == 2, proc.stderr
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert len(lines) == 1
        assert says in lines[0]
        assert proc.stdout == ""


class _Recorder:
    def __init__(self) -> None:
        self.started: list[tuple[str, int]] = []
        self.cases: list[str] = []

    def start(self, suite: str, total: int) -> None:
        self.started.append((suite, total))

    def case(self, suite: str, result: object) -> None:
        self.cases.append(result.id)  # type: ignore[attr-defined]


def test_an_interrupt_keeps_the_partial_table_and_returns_130(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Ctrl-C in the middle of the suite: the finished cells are printed, reported
    and counted as a partial run; the suite returns 130."""
    import io

    import models_spec._check.suite as suite_module
    from lockstep.suites import SuiteOptions

    real = suite_module.run_job
    calls: list[object] = []

    def interrupted_on_the_third(job: object) -> object:
        calls.append(job)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(job)  # type: ignore[arg-type]

    monkeypatch.setattr(suite_module, "run_job", interrupted_on_the_third)
    stream, recorder = io.StringIO(), _Recorder()
    suite = suite_module.ModelManagerSuite(
        stream=stream,
        scenarios=("B7-duplicate-lru-entries", "B14-admission-overshoot"),
        core_depths=(0, 1),
    )
    options = SuiteOptions(budget=2, jobs=1, output_dir=tmp_path, reporter=recorder)
    assert suite.run(options) == 130
    text = stream.getvalue()
    ((name, total),) = recorder.started
    assert name == "modelmanager"
    assert total > 3
    assert len(recorder.cases) == 2
    assert f"INTERRUPTED after 2 of {total} cell(s)" in text
    assert len(table_rows(text)) == 2  # two rows


def test_a_stall_ends_its_cell_without_trying_the_other_strategies(
    unpatched_check: tuple[subprocess.CompletedProcess[str], dict[str, Any]],
) -> None:
    """A stall is an ERROR naming the thread, the line and the module to patch; the
    cell's remaining strategies are not run (each would stall again)."""
    proc, report = unpatched_check
    assert proc.returncode == 1, proc.stdout + proc.stderr
    cells = report["suites"]["modelmanager"]["cases"]
    stalled = [c for c in cells if c["invariant"] == "stall"]
    assert stalled, "the unpatched real lock stalls at least one scenario"
    for cell in stalled:
        assert cell["verdict"] == "ERROR"
        assert cell["modes"][-1]["kind"] == "stall"
        kinds = [mode["kind"] for mode in cell["modes"]]
        assert kinds.count("stall") == 1  # stopped at the stall: no later strategy ran
        assert "mymgr.py:" in cell["message"]
        assert "probably 'mymgr'" in cell["message"]


def test_a_stack_without_getitem_is_named_before_any_search(project: Path) -> None:
    """The scenarios read models back (`stack[id]`): a manager without __getitem__ is
    a validation error naming it, not an I8 failure deep inside an interleaving."""
    source = (project / "mymgr.py").read_text()
    without = source.replace(
        "    def __getitem__(self, model_id):", "    def _getitem(self, model_id):"
    )
    assert without != source
    (project / "mymgr.py").write_text(without)
    proc = lockstep("check", "--target", "mymgr:Adapter", *FAST, cwd=project)
    assert proc.returncode == 2
    assert "has no __getitem__" in proc.stderr
    assert "(see docs/contract.md#getitem)" in proc.stderr


def test_a_race_near_a_real_lock_is_an_error_not_a_false_fail(project: Path) -> None:
    """A read lock made at import time is a real lock: lockstep cannot see it order the
    reads and writes, so the race it reports is unproven. The cell is an ERROR that
    names the lock and says what to patch, never a FAIL blaming correct code; the same
    manager with the lock made while patched passes."""
    proc = lockstep("check", "--target", "mymgr:ImportTimeLock", *FAST, cwd=project)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    verdicts = _rows(proc.stdout, "my-import-time-lock-manager")
    assert "FAIL" not in verdicts.values()
    assert "ERROR" in verdicts.values()
    assert "uncontrolled sync" in proc.stdout
    assert "a real threading.Lock `self._read_lock` (held)" in proc.stdout
    # The harness's own real locks (the driver's, the fakes') are never named.
    assert "_I15_SKIPS_LOCK" not in proc.stdout
    assert "._lock`" not in proc.stdout
    assert "Patch the module that creates it" in proc.stdout
    control = lockstep("check", "--target", "mymgr:ReadLocked", *FAST, cwd=project)
    assert control.returncode == 0, control.stdout + control.stderr
    assert set(_rows(control.stdout, "my-read-locked-manager").values()) == {"PASS", "SKIP"}

"""The pytest plugin: the lockstep marker, saved failures, --lockstep-replay."""

from __future__ import annotations

import pytest
from ls_helpers import LOST_UPDATE_TEST

TEST_FILE = (
    LOST_UPDATE_TEST
    + """

@pytest.mark.lockstep(budget=50, strategy="dfs")
def test_correct(tmp_path):
    lock = lockstep.threading.Lock()
    box = [0]

    def inc():
        with lock:
            box[0] += 1

    threads = [lockstep.spawn(inc), lockstep.spawn(inc)]
    for t in threads:
        t.join()
    assert box[0] == 2
    assert tmp_path.exists()
"""
)


@pytest.fixture
def project(pytester):
    pytester.makepyfile(test_sample=TEST_FILE)
    return pytester


def test_marker_explores_saves_and_prints_the_replay_command(project):
    """A failing exploration fails the test, saves its schedule and says how to replay."""
    result = project.runpytest("--strict-markers", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    saved = list((project.path / "lockstep-failures").glob("*.json"))
    assert len(saved) == 1
    text = result.stdout.str()
    assert "lost update: 1" in text
    assert "--lockstep-replay" in text
    assert saved[0].name in text
    assert "start main @test_sample.py:" in text  # the test itself, not the plugin


def test_each_explored_test_prints_its_verdict(project):
    """A "lockstep" section states what each search established, never a bare
    "exhausted": DFS over synchronisation only, with its bound; the failure."""
    result = project.runpytest("--strict-markers", "-p", "no:cacheprovider")
    text = result.stdout.str()
    assert "= lockstep =" in text
    assert (
        "test_sample.py::test_correct: explored every interleaving with at most 2 "
        "preemptions over synchronisation only" in text
    )
    assert "test_sample.py::test_lost_update: failed: exception found in execution" in text
    assert "exhausted" not in text


def test_replay_option_reproduces_the_failure(project):
    """--lockstep-replay FILE runs the saved schedule and fails the same way."""
    project.runpytest("-p", "no:cacheprovider")
    saved = next((project.path / "lockstep-failures").glob("*.json"))
    result = project.runpytest(
        "-p",
        "no:cacheprovider",
        "test_sample.py::test_lost_update",
        "--lockstep-replay",
        str(saved),
    )
    result.assert_outcomes(failed=1)
    assert "lost update: 1" in result.stdout.str()


def test_replay_applies_only_to_the_recorded_test(project):
    """With the whole file selected, only the recorded test replays; the other explores."""
    project.runpytest("-p", "no:cacheprovider")
    saved = next((project.path / "lockstep-failures").glob("*.json"))
    result = project.runpytest("-p", "no:cacheprovider", "--lockstep-replay", str(saved))
    result.assert_outcomes(passed=1, failed=1)


def test_unknown_strategy_option_is_a_clear_failure(project):
    """A bad --lockstep-strategy fails the marked tests with lockstep's message."""
    result = project.runpytest("-p", "no:cacheprovider", "--lockstep-strategy", "bogus")
    result.assert_outcomes(failed=2)
    assert "unknown strategy 'bogus'" in result.stdout.str()


def test_options_override_the_marker(project):
    """--lockstep-budget 1 with a fixed seed can miss the bug; the marker budget finds it."""
    result = project.runpytest(
        "-p",
        "no:cacheprovider",
        "--lockstep-strategy",
        "dfs",
        "--lockstep-budget",
        "1",
        "--lockstep-save-dir",
        str(project.path / "elsewhere"),
    )
    result.assert_outcomes(passed=2)
    assert not (project.path / "elsewhere").exists()


def test_bad_marker_arguments_are_reported(pytester):
    """Unknown marker keywords fail the test with a clear message."""
    pytester.makepyfile(
        test_bad="""
import pytest

@pytest.mark.lockstep(budgett=3)
def test_x():
    pass
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    assert "unknown keyword(s) ['budgett']" in result.stdout.str()


PATCHED_FILE = """
import time

import pytest
import lockstep


class Counter:
    def __init__(self):
        self.value = 0

    def increment(self):
        current = self.value
        time.sleep(0)  # a switch point only where this module is patched
        self.value = current + 1


def race():
    counter = Counter()
    threads = [lockstep.spawn(counter.increment) for _ in range(2)]
    for t in threads:
        t.join()
    assert counter.value == 2, f"patched lost update: {counter.value}"


@pytest.mark.lockstep(budget=300, patch=["test_patched"])
def test_patched():
    race()


@pytest.mark.lockstep(budget=20)
def test_unpatched():
    race()
"""


def test_replay_patches_what_the_schedule_records(pytester):
    """A saved schedule records the marker's patch; --lockstep-replay patches it even
    for a test whose marker names no patch (the marker's list, when given, wins)."""
    import json

    pytester.makepyfile(test_patched=PATCHED_FILE)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)  # test_unpatched: no switch point, no race
    saved = next((pytester.path / "lockstep-failures").glob("*test_patched-*.json"))
    data = json.loads(saved.read_text())
    assert data["patch"] == ["test_patched"]

    replayed = pytester.runpytest(
        "-p", "no:cacheprovider", "test_patched.py::test_patched", "--lockstep-replay", str(saved)
    )
    replayed.assert_outcomes(failed=1)
    assert "patched lost update: 1" in replayed.stdout.str()

    data["scenario_id"] = "pytest:test_patched.py::test_unpatched"
    moved = pytester.path / "moved.json"
    moved.write_text(json.dumps(data))
    replayed = pytester.runpytest(
        "-p", "no:cacheprovider", "test_patched.py::test_unpatched", "--lockstep-replay", str(moved)
    )
    replayed.assert_outcomes(failed=1)
    text = replayed.stdout.str()
    assert "patched lost update: 1" in text
    assert "divergence" not in text


def test_budget_zero_is_a_usage_error(project):
    """--lockstep-budget 0 is refused before anything runs (it used to be ignored)."""
    result = project.runpytest("-p", "no:cacheprovider", "--lockstep-budget", "0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--lockstep-budget must be at least 1" in result.stderr.str()


def test_a_replay_file_of_another_test_is_a_clear_error(project):
    """A schedule recorded for a test that is not selected (or not by pytest at all)
    stops the run with a usage error naming the right command."""
    import lockstep

    project.runpytest("-p", "no:cacheprovider")
    saved = next((project.path / "lockstep-failures").glob("*.json"))
    result = project.runpytest(
        "-p", "no:cacheprovider", "test_sample.py::test_correct", "--lockstep-replay", str(saved)
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = result.stdout.str() + result.stderr.str()
    assert "was recorded for the test 'test_sample.py::test_lost_update'" in text
    assert "not among the selected tests" in text
    result.assert_outcomes()  # nothing ran
    foreign = lockstep.Schedule(choices=(), scenario_id="mymod:scenario")
    path = foreign.save(project.path / "foreign.json")
    result = project.runpytest("-p", "no:cacheprovider", "--lockstep-replay", str(path))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = result.stdout.str() + result.stderr.str()
    assert "not by a pytest test: replay it with `lockstep replay" in text


def test_the_printed_replay_command_works_from_another_directory(project, tmp_path_factory):
    """The failure names the schedule and HTML files and a pytest command that
    reproduces it when pasted from any directory."""
    import shlex
    import subprocess
    import sys

    result = project.runpytest("-p", "no:cacheprovider")
    text = result.stdout.str()
    html = next(line for line in text.splitlines() if "HTML timeline:" in line).split()[-1]
    assert html.endswith(".html")
    from pathlib import Path

    assert "lost update" in Path(html).read_text(encoding="utf-8")
    command = next(line for line in text.splitlines() if "--lockstep-replay" in line).strip()
    argv = shlex.split(command)
    assert argv[0] == "pytest"
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    replayed = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *argv[1:]],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    assert "lost update: 1" in replayed.stdout
    assert "1 failed" in replayed.stdout

"""A replay says which of four things happened: reproduced, different failure, diverged,
passed; each with its own exit code, from the CLI, the Python API and the pytest plugin."""

from __future__ import annotations

import io
import json
import pathlib

import pytest
from ls_helpers import LOST_UPDATE_TEST
from samples import cli_scenarios

import lockstep
from lockstep import RecordedFailure, Schedule
from lockstep import _cli as cli
from lockstep.errors import InvalidArgumentType, ScheduleFormatError


def run_cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = cli.main(list(argv), out=out)
    return code, out.getvalue()


@pytest.fixture(scope="module")
def failing(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """lost_update's failing schedule, saved by `lockstep explore`."""
    directory = tmp_path_factory.mktemp("saved")
    code, _ = run_cli(
        "explore",
        "samples.cli_scenarios:lost_update",
        "--budget",
        "300",
        "--save-dir",
        str(directory),
    )
    assert code == cli.EXIT_FAILURE
    (path,) = directory.glob("*.json")
    return path


def test_a_saved_failure_records_its_kind_and_label(failing: pathlib.Path) -> None:
    """The file says what failed (an AssertionError raised in a thread)."""
    data = json.loads(failing.read_text(encoding="utf-8"))
    assert data["failure"] == {"kind": "exception", "label": "AssertionError"}
    assert Schedule.load(failing).failure == RecordedFailure("exception", "AssertionError")


def test_the_failure_field_is_optional_and_validated() -> None:
    """Files without it load with None; a malformed one is refused, naming the field."""
    schedule = Schedule(choices=(), scenario_id="m:f")
    assert "failure" not in schedule.to_dict()
    assert Schedule.from_dict(schedule.to_dict()).failure is None
    data = dict(schedule.to_dict(), failure={"kind": "invariant"})
    with pytest.raises(ScheduleFormatError, match="failure must be null or"):
        Schedule.from_dict(data)
    recorded = schedule.with_failure(RecordedFailure("invariant", "I4"))
    assert Schedule.from_json(recorded.to_json()) == recorded
    assert Schedule.from_string(recorded.to_string()).failure == RecordedFailure("invariant", "I4")


@pytest.mark.parametrize(
    ("scenario", "code", "outcome"),
    [
        (None, cli.EXIT_FAILURE, "reproduced: the recorded exception AssertionError"),
        (
            "samples.cli_scenarios:lost_update_other_error",
            cli.EXIT_DIFFERENT_FAILURE,
            "different failure: exception LookupError, recorded exception AssertionError",
        ),
        (
            "samples.cli_scenarios:lost_update_fixed",
            cli.EXIT_OK,
            "passed: every recorded step taken, no failure",
        ),
        ("samples.cli_scenarios:correct", cli.EXIT_DIVERGED, "diverged at step"),
    ],
)
def test_each_outcome_has_its_exit_code_and_says_so(
    failing: pathlib.Path, scenario: str | None, code: int, outcome: str
) -> None:
    """The same schedule on the buggy code, another failure, a fix, and changed code."""
    extra = [] if scenario is None else ["--scenario", scenario]
    got, text = run_cli("replay", str(failing), *extra)
    assert got == code, text
    assert f"replay outcome: {outcome}" in text


def test_the_exit_codes_are_distinct_and_documented() -> None:
    """Four outcomes, four codes, none of them the usage error; --help lists them."""
    codes = lockstep._outcome.REPLAY_EXIT_CODES
    assert sorted(codes.values()) == [0, 1, 3, 4]
    assert cli.EXIT_USAGE not in codes.values()
    text = cli.build_parser().format_help()
    for line in ("3    replay: a different failure", "4    replay: diverged"):
        assert line in text


def test_the_python_api_classifies_a_replay(failing: pathlib.Path) -> None:
    """classify_replay(schedule, replay(...)): the outcome, its code and its headline."""
    schedule = Schedule.load(failing)
    outcome = lockstep.classify_replay(schedule, lockstep.replay(cli_scenarios.correct, schedule))
    assert (outcome.name, outcome.exit_code) == ("diverged", 4)
    assert "the bug may be fixed; re-record" in outcome.headline
    reproduced = lockstep.classify_replay(
        schedule, lockstep.replay(cli_scenarios.lost_update, schedule)
    )
    assert (reproduced.name, reproduced.exit_code) == ("reproduced", 1)
    with pytest.raises(InvalidArgumentType):
        lockstep.classify_replay(schedule, None)  # type: ignore[arg-type]


def test_a_schedule_without_a_recorded_failure_reproduces_on_any_failure(
    failing: pathlib.Path,
) -> None:
    """Files written before the field existed: any failure but a divergence reproduces."""
    legacy = Schedule.load(failing).with_failure(None)
    result = lockstep.replay(cli_scenarios.lost_update_other_error, legacy)
    assert lockstep.classify_replay(legacy, result).name == "reproduced"


def test_several_files_and_a_directory_replay_in_one_run(
    failing: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    """A directory stands for its schedules (a manifest beside them is left out); one
    line per file, the totals, the most urgent outcome's exit code."""
    schedule = Schedule.load(failing)
    (tmp_path / "a.json").write_text(schedule.to_json(), encoding="utf-8")
    other = schedule.with_failure(RecordedFailure("exception", "KeyError"))
    (tmp_path / "b.json").write_text(other.to_json(), encoding="utf-8")
    (tmp_path / "MANIFEST.json").write_text('{"a.json": {}}', encoding="utf-8")
    code, text = run_cli("replay", str(tmp_path))
    assert code == cli.EXIT_DIFFERENT_FAILURE, text
    lines = text.splitlines()
    assert lines[0].startswith("reproduced")
    assert "a.json: exception AssertionError" in lines[0]
    assert lines[1].startswith("different failure")
    assert "b.json" in lines[1]
    assert "2 schedule(s): different failure 1 (exit 3), reproduced 1 (exit 1); exit 3" in text
    code, text = run_cli("replay", str(tmp_path / "a.json"), str(failing))
    assert code == cli.EXIT_FAILURE
    assert "2 schedule(s): reproduced 2 (exit 1); exit 1" in text


def test_an_empty_directory_is_a_usage_error(tmp_path: pathlib.Path) -> None:
    """Nothing to replay: one line, exit 2."""
    assert run_cli("replay", str(tmp_path))[0] == cli.EXIT_USAGE


def test_the_pytest_plugin_names_the_outcome(pytester: pytest.Pytester) -> None:
    """Reproduced, then diverged once the code changed: the message and summary say which."""
    pytester.makepyfile(test_sample=LOST_UPDATE_TEST)
    pytester.runpytest("-p", "no:cacheprovider")
    saved = next((pytester.path / "lockstep-failures").glob("*.json"))
    result = pytester.runpytest("-p", "no:cacheprovider", "--lockstep-replay", str(saved))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*lockstep replay reproduced: the recorded exception*"])
    read = "        value = box[0]\n"
    changed = LOST_UPDATE_TEST.replace(read, "        lockstep.checkpoint('x')\n" + read)
    pytester.makepyfile(test_sample=changed)
    result = pytester.runpytest("-p", "no:cacheprovider", "--lockstep-replay", str(saved))
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "lockstep replay diverged at step" in text
    assert "test_sample.py::test_lost_update: replay diverged" in text

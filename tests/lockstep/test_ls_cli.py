"""The lockstep command line: explore, replay, show, check, exit codes."""

from __future__ import annotations

import io
import json
import os
import pathlib
import shlex
import subprocess
import sys

import attrs
import pytest

import lockstep
from lockstep import Schedule, Settings
from lockstep import _check as check_module
from lockstep import _cli as cli
from lockstep.strategies import Choice
from lockstep.suites import LoadedSuite, SuiteOptions

HERE = pathlib.Path(__file__).parent


def run_cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = cli.main(list(argv), out=out)
    return code, out.getvalue()


def _explore_failure(tmp_path) -> pathlib.Path:
    code, text = run_cli(
        "explore",
        "samples.cli_scenarios:lost_update",
        "--budget",
        "300",
        "--save-dir",
        str(tmp_path),
    )
    assert code == cli.EXIT_FAILURE
    saved = sorted(tmp_path.glob("*.json"))
    assert len(saved) == 1
    assert f"lockstep replay {saved[0]}" in text
    assert "lost update: 1" in text
    return saved[0]


def test_explore_saves_and_replay_reproduces(tmp_path):
    """explore saves the failing schedule; replay FILE reproduces it (exit 1)."""
    path = _explore_failure(tmp_path)
    code, text = run_cli("replay", str(path))
    assert code == cli.EXIT_FAILURE
    assert "lost update: 1" in text
    assert "Replay it with" in text


def test_replay_compact_string_and_passing_schedule(tmp_path):
    """replay accepts an ls1: string; a passing execution exits 0."""
    path = _explore_failure(tmp_path)
    failing = Schedule.load(path)
    code, _ = run_cli("replay", failing.to_string())
    assert code == cli.EXIT_FAILURE
    passing = failing.with_choices(())
    passing_code, text = run_cli(
        "explore", "samples.cli_scenarios:correct", "--budget", "5", "--save-dir", str(tmp_path)
    )
    assert passing_code == cli.EXIT_OK
    assert "no failure" in text
    # Replaying the correct scenario under the failing schedule diverges or passes; an
    # empty schedule diverges at the first step with more than one choice.
    code, text = run_cli("replay", passing.to_string())
    assert code == cli.EXIT_DIVERGED
    assert "the schedule ended after 0 choices" in text
    assert "replay outcome: diverged at step" in text


def test_show_prints_metadata_and_swimlanes(tmp_path):
    """show FILE prints the schedule's provenance and the replayed swimlanes."""
    path = _explore_failure(tmp_path)
    code, text = run_cli("show", str(path))
    assert code == cli.EXIT_OK
    assert "scenario:  samples.cli_scenarios:lost_update" in text
    assert "0:main" in text
    assert "outcome: exception" in text


def test_show_html_writes_a_timeline(tmp_path):
    """show --html OUT renders the rows with lockstep._html."""
    path = _explore_failure(tmp_path)
    out = tmp_path / "timeline.html"
    code, text = run_cli("show", str(path), "--html", str(out))
    assert code == cli.EXIT_OK, text
    html = out.read_text()
    assert html.lstrip().lower().startswith("<!doctype html")
    assert "lost update: 1" in html  # the failure box
    assert "Blocked threads" not in html


def test_bad_inputs_exit_2(tmp_path, capsys):
    """Unreadable, malformed, future-version schedules and bad scenarios: one line, exit 2."""
    assert run_cli("replay", str(tmp_path / "missing.json"))[0] == cli.EXIT_INPUT
    future = tmp_path / "future.json"
    data = Schedule(choices=(Choice(0),), scenario_id="x:y").to_dict()
    data["format_version"] = 7
    future.write_text(json.dumps(data))
    assert run_cli("replay", str(future))[0] == cli.EXIT_INPUT
    assert "format_version 7 is not supported" in capsys.readouterr().err
    no_module = Schedule(choices=(), scenario_id="no_such_mod_xyz:f").save(tmp_path / "n.json")
    assert run_cli("replay", str(no_module))[0] == cli.EXIT_INPUT
    assert "cannot import module 'no_such_mod_xyz'" in capsys.readouterr().err
    pytest_owned = Schedule(choices=(), scenario_id="pytest:t.py::test_x").save(tmp_path / "p.json")
    assert run_cli("replay", str(pytest_owned))[0] == cli.EXIT_INPUT
    assert "--lockstep-replay" in capsys.readouterr().err
    bad_patch = Schedule(
        choices=(), scenario_id="samples.cli_scenarios:correct", patch=("no_such_mod_xyz",)
    ).save(tmp_path / "bp.json")
    assert run_cli("replay", str(bad_patch))[0] == cli.EXIT_INPUT
    assert "recorded module 'no_such_mod_xyz'" in capsys.readouterr().err


def test_usage_errors_exit_2():
    """Unknown commands and bad option values are usage errors."""
    assert run_cli("frobnicate")[0] == cli.EXIT_USAGE
    assert run_cli("explore", "samples.cli_scenarios:correct", "--budget", "0")[0] == 2
    assert run_cli("explore", "samples.cli_scenarios:correct", "--strategy", "nope")[0] == 2
    code, _ = run_cli(
        "explore", "samples.cli_scenarios:correct", "--strategy", "dfs", "--depth", "2"
    )
    assert code == cli.EXIT_USAGE


@pytest.mark.parametrize(
    ("command", "operands"),
    [
        ("replay", ["x.json"]),
        ("show", ["x.json"]),
        ("explore", ["samples.cli_scenarios:correct"]),
        ("check", []),
        ("compare", ["a.json", "b.json"]),
    ],
)
def test_an_unknown_option_points_at_its_subcommands_help(command, operands, capsys):
    """An option a subcommand does not know is that subcommand's usage error: one line
    naming its own help, not the top level's (which does not list the option)."""
    assert run_cli(command, *operands, "--bogus")[0] == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err == (
        f"lockstep {command}: error: unrecognized arguments: --bogus "
        f"(see lockstep {command} --help)\n"
    )


@attrs.define
class _RecordingSuite:
    code: int
    seen: list = attrs.field(factory=list)

    def run(self, options: SuiteOptions) -> int:
        self.seen.append(options)
        return self.code


def test_check_runs_registered_suites(monkeypatch, tmp_path):
    """check passes the options to every suite and returns the worst exit code."""
    good, bad = _RecordingSuite(0), _RecordingSuite(1)
    monkeypatch.setattr(
        check_module,
        "discover_suites",
        lambda: [LoadedSuite("a", "m:A", good, None), LoadedSuite("b", "m:B", bad, None)],
    )
    code, text = run_cli(
        "check",
        "--budget",
        "7",
        "--seed",
        "3",
        "--strategy",
        "pct",
        "--jobs",
        "2",
        "--output-dir",
        str(tmp_path),
        "--target",
        "pkg:factory",
    )
    assert code == 1
    assert "== suite a ==" in text
    (seen,) = good.seen
    assert seen.output_dir.parent == tmp_path.resolve()  # this run's own directory
    assert seen.output_dir.name.startswith("run-")
    assert attrs.evolve(seen, output_dir=None) == SuiteOptions(
        budget=7,
        seed=3,
        strategy="pct",
        jobs=2,
        target="pkg:factory",
        settings=Settings(stall_diagnosis=2.0),
    )


def test_check_without_suites(monkeypatch, capsys, tmp_path):
    """No loadable suite: "no suites registered"; a broken one is reported, exit 2."""
    monkeypatch.setattr(check_module, "discover_suites", list)
    out = str(tmp_path / "out")
    assert run_cli("check", "--output-dir", out) == (
        0,
        "no suites registered (entry point group lockstep.suites)\n",
    )
    monkeypatch.setattr(
        check_module,
        "discover_suites",
        lambda: [LoadedSuite("x", "m:X", None, "ImportError: nope")],
    )
    code, text = run_cli("check", "--output-dir", out)
    assert code == cli.EXIT_INPUT
    assert "no suites registered" in text
    assert "cannot load suite x (m:X): ImportError: nope" in capsys.readouterr().err


def test_module_entry_point_help_documents_exit_codes():
    """`python -m lockstep._cli --help` works in a fresh process and lists exit codes."""
    package_root = str(pathlib.Path(lockstep.__file__).parent.parent)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([package_root, os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "lockstep._cli", "--help"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=HERE,
    )
    assert proc.returncode == 0
    assert "exit codes:" in proc.stdout
    assert "could not be loaded" in proc.stdout
    assert "130  interrupted" in proc.stdout


def _run_command(command: str) -> subprocess.CompletedProcess[str]:
    """Run a printed ``lockstep ...`` command line in a fresh process (from HERE)."""
    argv = shlex.split(command)
    assert argv[0] == "lockstep"
    package_root = str(pathlib.Path(lockstep.__file__).parent.parent)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([package_root, os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        [sys.executable, "-m", "lockstep._cli", *argv[1:]],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=HERE,
    )


def _last_line(text: str) -> str:
    return text.rstrip().splitlines()[-1].strip()


def test_explore_with_patch_prints_a_flagless_command_that_replays(tmp_path):
    """explore --patch saves a schedule recording the patch; the printed
    `lockstep replay FILE` (no flags) reproduces the failure in a fresh process."""
    proc = _run_command(
        f"lockstep explore samples.cli_scenarios:patched_lost_update --budget 300 "
        f"--patch samples.counter_module --save-dir {shlex.quote(str(tmp_path))}"
    )
    assert proc.returncode == cli.EXIT_FAILURE, proc.stderr
    (saved,) = sorted(tmp_path.glob("*.json"))
    assert Schedule.load(saved).patch == ("samples.counter_module",)
    command = _last_line(proc.stdout)
    assert command == shlex.join(["lockstep", "replay", str(saved)])

    again = _run_command(command)
    assert again.returncode == cli.EXIT_FAILURE, again.stderr
    assert "patched lost update: 1" in again.stdout
    assert "divergence" not in again.stdout
    assert _last_line(again.stdout) == command  # the reproduction names itself

    shown = _run_command(f"lockstep show {shlex.quote(str(saved))}")
    assert shown.returncode == cli.EXIT_OK, shown.stderr
    assert "patch:     samples.counter_module" in shown.stdout
    assert "outcome: exception" in shown.stdout
    assert "divergence" not in shown.stdout


def test_patch_flags_replace_the_recorded_list(tmp_path):
    """--patch given on replay/show overrides the schedule's recorded modules."""
    result = lockstep.explore(
        _patched_scenario(), budget=300, patch=["samples.counter_module"], progress=False
    )
    assert result.failure is not None
    path = result.failure.schedule.save(tmp_path / "s.json")
    code, text = run_cli("replay", str(path))
    assert code == cli.EXIT_FAILURE
    assert "patched lost update: 1" in text
    # Patching an unrelated module instead: the counter's sleep is no switch point.
    code, text = run_cli("replay", str(path), "--patch", "samples.racy_module")
    assert code == cli.EXIT_DIVERGED
    assert "(divergence)" in text
    assert _last_line(text) == f"lockstep replay {path} --patch samples.racy_module"
    code, text = run_cli("show", str(path), "--patch", "samples.racy_module")
    assert code == cli.EXIT_OK
    assert "outcome: divergence" in text


def _patched_scenario():
    from samples.cli_scenarios import patched_lost_update

    return patched_lost_update


def test_api_replay_command_has_no_patch_flags_and_works():
    """explore(patch=[...])'s replay command is `lockstep replay 'ls1:...'` without
    flags (the string records the patch) and reproduces the failure when run."""
    from samples import counter_module

    result = lockstep.explore(
        _patched_scenario(), budget=300, patch=[counter_module], progress=False
    )
    failure = result.failure
    assert failure is not None
    assert failure.schedule.patch == ("samples.counter_module",)
    assert failure.replay_command == f"lockstep replay '{failure.schedule.to_string()}'"
    assert "--patch" not in failure.replay_command
    proc = _run_command(failure.replay_command)
    assert proc.returncode == cli.EXIT_FAILURE, proc.stderr
    assert "patched lost update: 1" in proc.stdout
    assert "divergence" not in proc.stdout


def test_explore_prints_the_verdict_and_takes_the_shared_knobs():
    """`lockstep explore` prints what the search established; --no-timeouts,
    --no-races and --time-budget reach explore."""
    code, text = run_cli("explore", "samples.cli_scenarios:correct", "--strategy", "dpor")
    assert code == cli.EXIT_OK
    assert text.startswith("explored every interleaving over synchronisation only")
    assert "exhausted" not in text
    code, text = run_cli(
        "explore",
        "samples.cli_scenarios:correct",
        "--strategy",
        "dfs",
        "--no-timeouts",
        "--no-races",
        "--time-budget",
        "600",
    )
    assert code == cli.EXIT_OK
    assert "with at most 2 preemptions" in text
    assert run_cli("explore", "samples.cli_scenarios:correct", "--time-budget", "0")[0] == 2


def test_explore_failure_names_its_files_and_replays_from_another_directory(tmp_path):
    """explore saves the schedule and an HTML timeline, prints both absolute paths, and
    the printed command reproduces the failure from an unrelated directory (the
    schedule records where `samples` was imported from)."""
    path = _explore_failure(tmp_path)
    code, text = run_cli(
        "explore",
        "samples.cli_scenarios:lost_update",
        "--budget",
        "300",
        "--save-dir",
        str(tmp_path / "again"),
    )
    assert code == cli.EXIT_FAILURE
    saved = next((tmp_path / "again").glob("*.json")).resolve()
    html = saved.with_suffix(".html")
    assert f"Schedule saved to {saved}" in text
    assert f"HTML timeline:     {html}" in text
    assert "lost update: 1" in html.read_text(encoding="utf-8")
    assert Schedule.load(path).import_paths == (str(HERE),)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    package_root = str(pathlib.Path(lockstep.__file__).parent.parent)
    proc = subprocess.run(
        [sys.executable, "-P", "-m", "lockstep._cli", "replay", str(saved)],
        env={**os.environ, "PYTHONPATH": package_root},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=elsewhere,
    )
    assert proc.returncode == cli.EXIT_FAILURE, proc.stderr
    assert "lost update: 1" in proc.stdout


def test_explore_takes_an_iterative_dpor_bound():
    """`--preemption-bound iterative` reaches DPOR; it ends with the unbounded claim;
    other words, and "iterative" for DFS, are usage errors."""
    code, text = run_cli(
        "explore",
        "samples.cli_scenarios:correct",
        "--strategy",
        "dpor",
        "--preemption-bound",
        "iterative",
    )
    assert code == cli.EXIT_OK, text
    assert text.startswith("explored every interleaving over synchronisation only")
    assert "preemptions" not in text.splitlines()[0]
    code, text = run_cli(
        "explore",
        "samples.cli_scenarios:lost_update",
        "--strategy",
        "dpor",
        "--preemption-bound",
        "iterative",
    )
    assert code == cli.EXIT_FAILURE, text
    for argv in (
        ("--strategy", "dpor", "--preemption-bound", "deep"),
        ("--strategy", "dfs", "--preemption-bound", "iterative"),
    ):
        assert run_cli("explore", "samples.cli_scenarios:correct", *argv)[0] == cli.EXIT_USAGE


_SCRIPT = """
import sys
import threading

import lockstep


class Counter:
    def __init__(self):
        self.n = 0


def scenario():
    counter = lockstep.watch(Counter())

    def bump():
        counter.n += 1

    threads = [threading.Thread(target=bump) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    me = sys.modules[__name__]
    result = lockstep.explore(scenario, strategy=lockstep.RandomStrategy(seed=0), budget=20,
                              patch=[me])
    schedule = result.failure.schedule
    print("PATCH", ",".join(schedule.patch))
    again = lockstep.replay(scenario, schedule)
    print("IN-PROCESS", again.failure.kind if again.failure else None)
    print("COMMAND", result.failure.replay_command)
"""


def test_a_script_run_from_elsewhere_records_a_schedule_that_replays_anywhere(tmp_path):
    """`python dir/script.py` run from another directory: the schedule names the script
    by the module it imports as and records its directory, so the same schedule
    replays in the script's own process (patching __main__, not a second copy) and
    with the printed command from a third directory."""
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "racy_script.py").write_text(_SCRIPT, encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    package_root = str(pathlib.Path(lockstep.__file__).parent.parent)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([package_root, os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.run(
        [sys.executable, str(scripts / "racy_script.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=elsewhere,
    )
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)
    assert lines["PATCH"] == "racy_script"
    assert lines["IN-PROCESS"] == "data-race"
    command = lines["COMMAND"].strip()
    assert command.startswith("lockstep replay ")
    replayed = _run_command(command)  # from this test's directory
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    assert "data race on Counter#1.n" in replayed.stdout


def test_the_readme_explore_command_is_one_the_cli_accepts():
    """The README's three lines on `lockstep explore` show a command that parses."""
    readme = (pathlib.Path(__file__).resolve().parents[2] / "README.md").read_text()
    start = readme.index("`lockstep explore ")
    command = readme[start + 1 : readme.index("`", start + 1)]
    args = cli.build_parser().parse_args(command.split()[1:])
    assert (args.command, args.strategy, args.budget) == ("explore", "pct", 500)

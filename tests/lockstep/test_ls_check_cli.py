"""`lockstep check` as a CI tool: options, help, progress, CI files, shards, interrupts.

The suites here are small fakes handed to the command through its discovery
function, so each behaviour is pinned without running the model-manager suite
(tests/suite/test_check_ci.py runs that one end to end).
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import attrs
import pytest

from lockstep import _check as check_module
from lockstep import _cli as cli
from lockstep._progress import Progress, choose_mode, format_duration
from lockstep._text import abbreviate, wrap_lines, wrap_tokens
from lockstep._version import LOCKSTEP_VERSION
from lockstep.suites import (
    EXIT_INTERRUPTED,
    CaseResult,
    LoadedSuite,
    Shard,
    SuiteOptions,
)


def run_cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return cli.main(list(argv), out=out), out.getvalue()


def _case(n: int, outcome: str = "passed", **kw: object) -> CaseResult:
    return CaseResult(
        id=f"case-{n}",
        group="fake.impl",
        name=f"case-{n}",
        outcome=outcome,  # type: ignore[arg-type]
        verdict=kw.pop("verdict", outcome.upper()),  # type: ignore[arg-type]
        executions=10,
        elapsed=0.5,
        **kw,  # type: ignore[arg-type]
    )


@attrs.define
class _Suite:
    """Reports ``results`` one by one; raises ``interrupt_after`` cases in (Ctrl-C)."""

    results: list[CaseResult]
    code: int = 0
    interrupt_after: int | None = None
    ran: int = 0

    def run(self, options: SuiteOptions) -> int:
        self.ran += 1
        options.reporter.start("fake", len(self.results))
        for n, result in enumerate(self.results):
            if self.interrupt_after is not None and n == self.interrupt_after:
                raise KeyboardInterrupt
            options.reporter.case("fake", result)
        return self.code


def _install(monkeypatch: pytest.MonkeyPatch, *suites: _Suite) -> None:
    loaded = [LoadedSuite(f"s{i}", f"m:S{i}", suite, None) for i, suite in enumerate(suites)]
    monkeypatch.setattr(check_module, "discover_suites", lambda: loaded)


# -- help, version, defaults ----------------------------------------------------------------


def test_version() -> None:
    """`lockstep --version` prints the version."""
    code, _ = run_cli("--version")
    assert code == 0


def test_version_text(capsys: pytest.CaptureFixture[str]) -> None:
    """The version line names lockstep's version and the Python it runs on."""
    cli.main(["--version"])
    assert f"lockstep {LOCKSTEP_VERSION} (Python " in capsys.readouterr().out


def test_every_option_of_every_subcommand_has_help_with_its_default() -> None:
    """--help of each subcommand documents every option, with its default."""
    parser = cli.build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(subparsers.choices) == {"replay", "show", "explore", "check", "compare"}
    for name, sub in subparsers.choices.items():
        assert sub.description, name
        for action in sub._actions:
            if action.option_strings and action.dest != "help":
                assert action.help, f"{name} {action.option_strings}"
                assert "default" in action.help, f"{name} {action.option_strings}"
        assert "exit codes:" in sub.format_help()


def test_jobs_defaults_to_the_available_cpus() -> None:
    """--jobs defaults to the CPUs this process may use."""
    args = cli.build_parser().parse_args(["check"])
    assert args.jobs == check_module.available_cpus() >= 1


# -- output hygiene --------------------------------------------------------------------------


def test_a_bad_output_dir_is_refused_before_any_suite_runs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file as --output-dir, or a directory under a file: exit 2, one line, no suite run."""
    suite = _Suite([_case(1)])
    _install(monkeypatch, suite)
    a_file = tmp_path / "file"
    a_file.write_text("x")
    for bad in (a_file, a_file / "below"):
        code, text = run_cli("check", "--output-dir", str(bad))
        assert code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1
        assert err[0].startswith("lockstep check: error: --output-dir")
        assert text == ""
    assert suite.ran == 0


def test_each_run_gets_a_directory_of_its_own(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Two runs into one --output-dir never share a report directory."""
    seen: list[Path] = []

    @attrs.define
    class Recording:
        def run(self, options: SuiteOptions) -> int:
            assert options.output_dir is not None
            seen.append(options.output_dir)
            return 0

    monkeypatch.setattr(
        check_module, "discover_suites", lambda: [LoadedSuite("r", "m:R", Recording(), None)]
    )
    for _ in range(2):
        assert run_cli("check", "--output-dir", str(tmp_path), "--shard", "2/3")[0] == 0
    assert len(set(seen)) == 2
    assert all(p.parent == tmp_path.resolve() for p in seen)
    assert all(p.name.startswith("run-") and p.name.endswith("-shard-2-of-3") for p in seen)


# -- CI files and exit codes -------------------------------------------------------------


def test_junit_and_json_carry_every_case(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """One testcase per case; failures and errors carry the message, the explanation
    and the replay command; skips are skipped; JSON has every row."""
    results = [
        _case(1),
        _case(
            2,
            "failed",
            verdict="FAIL",
            summary="I2 broken: two at once \x01",
            details="the swimlanes",
            replay="lockstep replay /r/x.json",
        ),
        _case(3, "error", verdict="ERROR", summary="0 switch points in m"),
        _case(4, "skipped", verdict="SKIP", summary="capability missing: lru"),
    ]
    _install(monkeypatch, _Suite(results, code=1))
    junit, table = tmp_path / "j.xml", tmp_path / "t.json"
    argv = ["check", "--output-dir", str(tmp_path), "--junit-xml", str(junit)]
    code, text = run_cli(*argv, "--json", str(table))
    assert code == 1
    assert f"JUnit XML: {junit.resolve()}" in text
    root = ET.parse(junit).getroot()
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == (
        "4",
        "1",
        "1",
        "1",
    )
    cases = root.findall("./testsuite/testcase")
    assert [c.get("name") for c in cases] == ["case-1", "case-2", "case-3", "case-4"]
    failure = cases[1].find("failure")
    assert failure is not None
    assert failure.get("message") == "I2 broken: two at once ?"  # control char cleaned
    assert "the swimlanes" in (failure.text or "")
    assert "reproduce: lockstep replay /r/x.json" in (failure.text or "")
    error = cases[2].find("error")
    assert error is not None
    assert error.get("message") == "0 switch points in m"
    skipped = cases[3].find("skipped")
    assert skipped is not None
    data = json.loads(table.read_text())
    assert data["exit_code"] == 1
    assert [c["outcome"] for c in data["suites"]["s0"]["cases"]] == [
        "passed",
        "failed",
        "error",
        "skipped",
    ]


def test_an_interrupted_check_exits_130_with_what_finished_saved(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C during a suite: no traceback, exit 130, JUnit/JSON hold the cases that
    finished and say the run was interrupted; later suites do not start."""
    first = _Suite([_case(1), _case(2, "failed", verdict="FAIL"), _case(3)], interrupt_after=2)
    second = _Suite([_case(9)])
    _install(monkeypatch, first, second)
    junit, table = tmp_path / "j.xml", tmp_path / "t.json"
    code, _ = run_cli(
        "check", "--output-dir", str(tmp_path), "--junit-xml", str(junit), "--json", str(table)
    )
    assert code == EXIT_INTERRUPTED == 130
    assert "Traceback" not in capsys.readouterr().err
    assert second.ran == 0
    data = json.loads(table.read_text())
    assert data["interrupted"] is True
    assert data["exit_code"] == 130
    assert [c["id"] for c in data["suites"]["s0"]["cases"]] == ["case-1", "case-2"]
    assert len(ET.parse(junit).getroot().findall("./testsuite/testcase")) == 2


def test_a_suite_reporting_an_interrupt_stops_the_check(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A suite that handled Ctrl-C itself returns 130: the check stops there with 130."""
    first, second = _Suite([_case(1)], code=130), _Suite([_case(2)])
    _install(monkeypatch, first, second)
    assert run_cli("check", "--output-dir", str(tmp_path))[0] == 130
    assert second.ran == 0


def test_a_huge_target_is_abbreviated_in_the_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 100 KB --target is not echoed in full."""
    code, _ = run_cli("check", "--output-dir", str(tmp_path), "--target", "m" * 100_000 + ":f")
    assert code == 2
    err = capsys.readouterr().err
    assert "characters)" in err
    assert len(err) < 2_000


# -- shards ---------------------------------------------------------------------------------


def test_shards_are_disjoint_and_cover_the_whole_list() -> None:
    """For every N, shards 1..N of a list are disjoint and their union is the list."""
    items = list(range(23))
    for total in range(1, 9):
        shards = [Shard(k, total).select(items) for k in range(1, total + 1)]
        flat = [x for shard in shards for x in shard]
        assert sorted(flat) == items
        assert len(flat) == len(set(flat))
        assert max(len(s) for s in shards) - min(len(s) for s in shards) <= 1


@pytest.mark.parametrize("text", ["0/2", "3/2", "1/0", "a/b", "1-2", "", "1/2/3"])
def test_a_bad_shard_is_a_usage_error(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    """--shard takes K/N with 1 <= K <= N."""
    assert run_cli("check", "--shard", text)[0] == 2
    assert "shard" in capsys.readouterr().err


def test_shard_parse_round_trips() -> None:
    """Shard.parse("K/N") and str() agree."""
    assert str(Shard.parse(" 2/5 ")) == "2/5"
    with pytest.raises(ValueError, match="between 1 and N"):
        Shard(3, 2)


# -- progress ---------------------------------------------------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_plain_progress_lines_are_periodic_and_complete() -> None:
    """Not on a terminal: a line at the start, at most one per interval, and at the end,
    with cells done/total, executions, failures, elapsed and the ETA."""
    stream, clock = io.StringIO(), _Clock()
    progress = Progress(stream, "lines", interval=10.0, clock=clock)
    progress.start("fake", 4)
    clock.now = 5.0
    progress.case("fake", _case(1))  # within the interval since the start line: quiet
    clock.now = 12.0
    progress.case("fake", _case(2, "failed"))  # interval passed: printed
    clock.now = 16.0
    progress.case("fake", _case(3))  # within the interval: quiet
    clock.now = 17.0
    progress.case("fake", _case(4))  # the last one: printed
    lines = stream.getvalue().splitlines()
    assert lines[0] == "lockstep check: suite fake: 4 cells to run"
    assert lines[1] == ("lockstep check: 2/4 cells, 20 executions, 1 failure, 12s elapsed, ETA 12s")
    assert lines[2] == ("lockstep check: 4/4 cells, 40 executions, 1 failure, 17s elapsed, ETA 0s")
    assert len(lines) == 3


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_live_bar_and_quiet_gets_nothing() -> None:
    """On a terminal the bar shows cells, executions, failures and the ETA; --quiet
    prints nothing."""
    terminal = _Terminal()
    assert choose_mode(terminal, quiet=False) == "bar"
    assert choose_mode(io.StringIO(), quiet=False) == "lines"
    assert choose_mode(terminal, quiet=True) == "off"
    progress = Progress(terminal, "bar")
    progress.start("fake", 3)
    progress.case("fake", _case(1))
    progress.case("fake", _case(2, "error"))
    progress.close()
    shown = terminal.getvalue()
    assert "lockstep check: 2/3 cells" in shown
    assert "20 executions, 1 failure" in shown
    assert "ETA" in shown
    silent = io.StringIO()
    off = Progress(silent, "off")
    off.start("fake", 1)
    off.case("fake", _case(1))
    off.close()
    assert silent.getvalue() == ""


def test_durations_read_well() -> None:
    """45s, 3m05s, 1h02m."""
    assert [format_duration(s) for s in (45, 185, 3720)] == ["45s", "3m05s", "1h02m"]


# -- text ------------------------------------------------------------------------------------


def test_abbreviate_keeps_head_tail_and_the_count() -> None:
    """A 100 KB value shrinks to about the limit, saying how long it was."""
    text = abbreviate("a" * 50 + "b" * 100_000 + "c" * 50, 80)
    assert text.startswith("aaaa")
    assert text.endswith("cccc")
    assert "(100100 characters)" in text
    assert len(text) <= 80 + 4
    assert abbreviate("short") == "short"


def test_wrap_lines_keeps_short_lines_and_indents_continuations() -> None:
    """Only lines over the width wrap; continuation lines keep the indent plus four."""
    text = "  " + " ".join(["word"] * 40) + "\nshort"
    wrapped = wrap_lines(text, 40).splitlines()
    assert all(len(line) <= 40 for line in wrapped)
    assert wrapped[1].startswith("      word")
    assert wrapped[-1] == "short"


# -- swimlanes ---------------------------------------------------------------------------


def _lanes(threads: int, label: str) -> str:
    import lockstep

    def body() -> None:
        lockstep.checkpoint(label)

    def scenario() -> None:
        for t in [lockstep.spawn(body) for _ in range(threads)]:
            t.join()
        raise AssertionError("show me the trace")

    result = lockstep.explore(scenario, budget=1, shrink=False)
    assert result.failure is not None
    return result.failure.trace.swimlanes()


@pytest.mark.parametrize("threads", [2, 4, 7, 12])
def test_swimlanes_fit_in_100_columns_without_losing_text(threads: int) -> None:
    """Whatever the number of threads, no line is wider than 100 columns and a long
    label is wrapped, not cut."""
    label = "a-long-label-" + "x" * 30 + "-end"
    text = _lanes(threads, label)
    assert max(len(line) for line in text.splitlines()) <= 100
    assert "…" not in text
    joined = "".join(part.strip(" |") for part in text.splitlines())
    assert "-end" in joined


def test_a_huge_label_is_abbreviated_in_the_swimlanes() -> None:
    """A 100 KB label does not turn into thousands of lines."""
    text = _lanes(2, "y" * 100_000)
    assert len(text.splitlines()) < 80
    assert "characters)" in "".join(text.split())


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["check", "--targt", "mymgr:Adapter"], "unrecognized arguments: --targt"),
        (["check", "--budget", "many"], "argument --budget"),
        (["chekc"], "invalid choice: 'chekc'"),
    ],
)
def test_a_usage_error_is_one_line_and_exit_2(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A misspelt option, a bad value or command: one line naming it (no usage block)."""
    code, text = run_cli(*argv)
    err = capsys.readouterr().err
    assert code == 2
    assert text == ""
    assert len(err.splitlines()) == 1, err
    assert says in err
    assert err.rstrip().endswith("--help)")


def test_an_output_file_in_a_missing_directory_is_refused_and_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--junit-xml /missing/dir/x.xml` is one line and exit 2; no directory appears (only
    --output-dir is created)."""
    missing = tmp_path / "missing" / "dir"
    for flag in ("--junit-xml", "--json"):
        code, text = run_cli(
            "check", "--output-dir", str(tmp_path / "report"), flag, str(missing / "x")
        )
        err = capsys.readouterr().err
        assert code == 2
        assert text == ""
        (line,) = err.splitlines()
        assert line.startswith(f"lockstep check: error: {flag} ")
        assert line.endswith(
            "does not exist; create it first, or write the file under --output-dir"
        )
        assert not (tmp_path / "missing").exists()


def test_a_usage_error_of_the_one_suite_prints_nothing_else(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One registered suite refusing its input (exit 2, nothing ran): no suite heading,
    no CI files, only the suite's own line."""

    class _Refuses:
        def run(self, options: SuiteOptions) -> int:
            print("lockstep check: --target: no such thing", file=sys.stderr)
            return 2

    monkeypatch.setattr(
        check_module, "discover_suites", lambda: [LoadedSuite("a", "m:A", _Refuses(), None)]
    )
    junit = tmp_path / "j.xml"
    code, text = run_cli("check", "--output-dir", str(tmp_path), "--junit-xml", str(junit))
    assert code == 2
    assert text == ""
    assert capsys.readouterr().err.splitlines() == ["lockstep check: --target: no such thing"]
    assert not junit.exists()


def test_wrapping_breaks_between_words_and_splits_only_words_longer_than_a_line() -> None:
    """A swimlane cell "start main @scenarios.py:23" in 15 columns keeps its words whole
    (never "start main @sce" / "narios.py:23"); a word longer than the line is split
    before a separator."""
    assert wrap_tokens("start main @scenarios.py:23", 15) == [
        "start main",
        "@scenarios.py",
        ":23",
    ]
    assert wrap_tokens("acquire Lock#3 @m.py:9", 15) == ["acquire Lock#3", "@m.py:9"]
    assert wrap_tokens("x" * 30, 14) == ["x" * 14, "x" * 14, "xx"]
    for line in wrap_lines("  " + "word " * 30 + "@a/very/long/path/to/the/module.py:12", 30).split(
        "\n"
    ):
        assert len(line) <= 30

"""``python3 -m models_spec.hunt``: the search past the default check."""

from __future__ import annotations

import io

import pytest

from models_spec.hunt import Finding, hunt, main


def test_a_hunt_finds_a_known_bug_and_says_how_to_rerun_it() -> None:
    """B14's variant (admission overshoot) fails I11 on random-1 within two executions."""
    out = io.StringIO()
    status = main(
        [
            "--first=1",
            "--count=1",
            "--budget=5",
            "--families=random",
            "--strategies=pct",
            "--implementations=variant-B14-admission-overshoot",
        ],
        out,
    )
    lines = out.getvalue().splitlines()
    assert status == 1
    assert lines[0].startswith("FAIL random-1 variant-B14-admission-overshoot pct seed=1")
    assert "invariant I11 violated" in lines[0]
    assert lines[1] == (
        "  rerun: python3 -m models_spec.hunt --first 1 --count 1 --families random "
        "--implementations variant-B14-admission-overshoot --strategies pct --shrink"
    )
    assert lines[-1] == "1 failing search(es)"


def test_the_rerun_shrinks_and_prints_the_explanation() -> None:
    out = io.StringIO()
    argv = Finding("random-1", "variant-B14-admission-overshoot", "pct", 1, 1, "").command()
    status = main([*argv.split()[3:], "--budget=5"], out)
    assert status == 1
    assert "Failing interleaving" in out.getvalue()


def test_a_rerun_keeps_the_ops_per_thread() -> None:
    finding = Finding("basic-6", "core-depth0-weighted", "random", 6, 78, "", ops=3)
    assert finding.command().endswith("--strategies random --ops 3 --shrink")


def test_a_hunt_of_the_core_passes() -> None:
    out = io.StringIO()
    status = main(["--first=1", "--count=1", "--budget=3"], out)
    assert (status, out.getvalue()) == (0, "0 failing search(es)\n")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--count=0"], "count must be an int >= 1 (got 0)"),
        (["--budget=0"], "budget must be an int >= 1 (got 0)"),
        (["--ops=7"], "ops must be an int in 1..6 (got 7)"),
        (["--families=nope"], "unknown family 'nope'; known: random, basic, mixed"),
        (["--strategies=dfs"], "unknown strategy 'dfs'; known: random, pct"),
        (["--implementations=nope"], "unknown implementation 'nope'"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = io.StringIO()
    assert main(argv, out) == 2
    assert capsys.readouterr().err == f"models_spec.hunt: {message}\n"
    assert out.getvalue() == ""


def test_hunt_validates_before_running() -> None:
    with pytest.raises(ValueError, match="first must be an int >= 0"):
        next(hunt(-1, 1))

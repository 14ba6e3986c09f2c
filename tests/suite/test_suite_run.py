"""The suite's protocol: verdicts, exit status, --target, --jobs, artifacts."""

from __future__ import annotations

import io
from pathlib import Path

import attrs
import pytest

from lockstep._cli import main as lockstep_main
from lockstep.suites import SuiteOptions
from models_spec._check.suite import (
    SUITE,
    Job,
    ModelManagerSuite,
    plan_jobs,
    render_table,
    run_job,
    run_jobs,
    table_rows,
)

from .fake_adapters import never_breaks


def _suite(**kwargs: object) -> tuple[ModelManagerSuite, io.StringIO]:
    stream = io.StringIO()
    return ModelManagerSuite(stream=stream, **kwargs), stream  # type: ignore[arg-type]


def test_registered_suite_is_discovered_by_lockstep_check() -> None:
    """The entry point resolves to SUITE, which has the Suite protocol's run()."""
    from lockstep.suites import discover_suites

    loaded = {entry.name: entry for entry in discover_suites()}
    assert loaded["modelmanager"].suite is SUITE


def test_caught_variant_and_passing_core_exit_zero(tmp_path: Path) -> None:
    """B10: the core passes, the variant is CAUGHT (I3); its schedule and timeline are saved."""
    suite, stream = _suite(scenarios=("B10-alias-is-the-key",), core_depths=(0,))
    code = suite.run(SuiteOptions(budget=5, output_dir=tmp_path))
    text = stream.getvalue()
    assert code == 0, text
    assert "variant-B10-alias-not-key" in text
    assert "CAUGHT" in text
    assert "I3" in text
    assert "ESCAPED" not in text
    assert "CORE-FAIL" not in text
    # What each search established, in lockstep's verdict wording (never "exhausted").
    assert "What the searches established" in text
    assert "  pct: " in text
    assert "sampled over synchronisation" in text
    assert "exhausted" not in text
    saved = sorted(p.name for p in tmp_path.iterdir())
    assert "B10-alias-is-the-key__variant-B10-alias-not-key__replay.json" in saved
    assert "B10-alias-is-the-key__variant-B10-alias-not-key__replay.html" in saved
    html = (tmp_path / "B10-alias-is-the-key__variant-B10-alias-not-key__replay.html").read_text()
    assert "I3 violated" in html


def _b10_variant_job(tmp_path: Path) -> Job:
    jobs = plan_jobs(
        SuiteOptions(budget=5, output_dir=tmp_path),
        scenarios=("B10-alias-is-the-key",),
        core_depths=(0,),
    )
    (job,) = [j for j in jobs if j.role == "variant"]
    assert job.modes[0] == "replay", job.modes
    assert len(job.modes) > 1, job.modes
    return job


def test_a_variant_replaying_its_recorded_schedule_keeps_its_searches_failures_as_found(
    tmp_path: Path,
) -> None:
    """The replay shows the bug minimally; the searches only say that they catch it, so
    their failures are not shrunk (shrinking cost as much as the searches), and their
    explanations say so instead of calling the interleaving shrunk."""
    cell = run_job(_b10_variant_job(tmp_path))
    assert cell.verdict == "CAUGHT"
    replay, *searches = cell.modes
    assert replay.kind
    assert "Failing interleaving, shrunk (" in replay.explanation
    caught = [m for m in searches if m.kind]
    assert caught, [m.mode for m in searches]
    for mode in caught:
        assert "Failing interleaving, as found, not shrunk (" in mode.explanation, mode.mode
        assert "Failing interleaving, shrunk" not in mode.explanation


def test_a_variant_without_a_recorded_schedule_has_its_failures_shrunk(tmp_path: Path) -> None:
    """The control: with no replay to show the bug minimally, a search's failure is shrunk."""
    job = _b10_variant_job(tmp_path)
    cell = run_job(attrs.evolve(job, modes=job.modes[1:]))
    assert cell.verdict == "CAUGHT"
    caught = [m for m in cell.modes if m.kind]
    assert caught
    for mode in caught:
        assert "Failing interleaving, shrunk (" in mode.explanation, mode.mode


def test_escaping_variant_makes_the_check_fail(tmp_path: Path) -> None:
    """A "variant" that never breaks is ESCAPED and the exit status is 1."""
    suite, stream = _suite(
        scenarios=("B5-failed-remove-desyncs-lru",),
        variants={"B5": never_breaks},
        core_depths=(0,),
    )
    code = suite.run(SuiteOptions(budget=3, output_dir=tmp_path))
    text = stream.getvalue()
    assert code == 1
    assert "fake-variant-that-never-breaks" in text
    assert "ESCAPED" in text
    assert "0/1 variants caught by at least one search strategy" in text


def test_target_runs_every_selected_scenario_against_the_adapter(tmp_path: Path) -> None:
    """--target: the user's adapter in every row, no variants, SKIP where capabilities lack."""
    suite, stream = _suite(scenarios=("B12-lock-table-leak", "B13-phantom-from-refresh"))
    code = suite.run(
        SuiteOptions(budget=5, output_dir=tmp_path, target="models_spec.adapter:BareManagerAdapter")
    )
    text = stream.getvalue()
    assert code == 0, text
    rows = ["  ".join(r) for r in table_rows(text) if r[0].startswith("B1")]
    assert len(rows) == 2
    assert all("core-bare-manager" in row for row in rows)
    assert "PASS" in rows[0]
    assert "SKIP" in rows[1]
    assert "variant-" not in text


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("no-colon-here", "must look like"),
        ("no_such_module_xyz:factory", "cannot import"),
        ("models_spec.adapter:Missing", "no attribute"),
        ("tests.suite.fake_adapters:broken_factory", "failed"),
        ("tests.suite.fake_adapters:NOT_AN_ADAPTER", "does not satisfy"),
    ],
)
def test_bad_target_is_rejected_with_exit_2(
    target: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bad --target runs nothing and says why in one line (exit 2: usage)."""
    suite, stream = _suite()
    assert suite.run(SuiteOptions(target=target)) == 2
    err = capsys.readouterr().err
    assert message in err
    assert len(err.strip().splitlines()) == 1
    assert stream.getvalue() == ""


def test_lockstep_check_cli_passes_target_through(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`lockstep check --target BAD` reaches the suite and exits 2 (usage)."""
    argv = ["check", "--target", "no_such_module_xyz:f", "--output-dir", str(tmp_path)]
    assert lockstep_main(argv) == 2
    assert "lockstep check: --target: cannot import module" in capsys.readouterr().err


def test_jobs_two_gives_the_same_table_as_jobs_one(tmp_path: Path) -> None:
    """Worker processes change the time column only."""
    options = SuiteOptions(budget=4, output_dir=tmp_path)
    jobs = plan_jobs(
        options,
        scenarios=("B7-duplicate-lru-entries", "B14-admission-overshoot", "random-1"),
        core_depths=(0, 2),
    )
    assert len(jobs) >= 6
    serial = run_jobs(jobs, 1)
    parallel = run_jobs(jobs, 2)
    assert serial == parallel
    assert render_table(serial, with_time=False) == render_table(parallel, with_time=False)
    assert {c.verdict for c in serial} == {"PASS", "CAUGHT"}


def test_each_full_cache_policy_has_its_cells(tmp_path: Path) -> None:
    """The scenarios where a cache full of pinned or leased models is reachable are
    checked under on_full "wait" and "refuse" too (the default cells run "proceed"),
    and a policy cell judges the core under its own policy."""
    options = SuiteOptions(budget=4, output_dir=tmp_path)
    jobs = plan_jobs(options, core_depths=(0,))
    policy_cells = {
        (j.scenario, j.implementation)
        for j in jobs
        if j.implementation.endswith(("-wait", "-refuse"))
    }
    for scenario in ("B17-unload-under-running-model", "B22-bound-not-restored"):
        assert (scenario, "core-depth0-wait") in policy_cells
        assert (scenario, "core-depth0-refuse") in policy_cells
    assert not any(s.startswith("B1-") for s, _ in policy_cells)  # no pins or leases there
    chosen = [j for j in jobs if j.implementation == "core-depth0-refuse"][:1]
    (cell,) = run_jobs(chosen, 1)
    assert cell.verdict == "PASS"

"""Every line `lockstep check` prints fits 100 columns (issue 33), a passing run with
known-bug variants and a failing ``--target`` run alike; only a path longer than a line
stands alone on a line of its own. ``--verbose`` adds the checker's detail, and the JSON
keeps it in a field of its own."""

from __future__ import annotations

import io
import re
from pathlib import Path

import attrs

from lockstep.suites import SuiteOptions
from models_spec._check.cells import Cell
from models_spec._check.report import RunSummary, case_result
from models_spec._check.suite import (
    ModelManagerSuite,
    plan_jobs,
    render_table,
    run_job,
    table_rows,
)

WIDTH = 100


def _run(tmp_path: Path, **options: object) -> str:
    out = io.StringIO()
    suite = ModelManagerSuite(
        stream=out,
        scenarios=("B1-remove-add-generation-split", "B17-unload-under-running-model"),
        core_depths=(0,),
    )
    suite.run(SuiteOptions(budget=3, output_dir=tmp_path, **options))  # type: ignore[arg-type]
    return out.getvalue()


def _too_wide(text: str) -> list[str]:
    """Lines over 100 columns, but for a path, or the command replaying it, alone on its
    line (neither is ever cut)."""
    alone = re.compile(r"\s*(lockstep replay )?/\S+")
    return [line for line in text.splitlines() if len(line) > WIDTH and not alone.fullmatch(line)]


def test_a_run_with_caught_variants_fits_100_columns(tmp_path: Path) -> None:
    text = _run(tmp_path)
    assert "CAUGHT" in text
    assert "What the searches established" in text
    assert not _too_wide(text), _too_wide(text)


def test_a_failing_target_run_fits_100_columns_and_verbose_adds_the_detail(
    tmp_path: Path,
) -> None:
    target = "examples.own_manager:UnlockedCheckManagerAdapter"
    text = _run(tmp_path / "plain", target=target)
    assert "FAIL" in text
    assert "Failing interleaving" in text
    assert not _too_wide(text), _too_wide(text)
    assert "Detail (the checker's own terms" not in text
    verbose = _run(tmp_path / "verbose", target=target, verbose=True)
    assert "Detail (the checker's own terms, --verbose):" in verbose
    assert not _too_wide(verbose), _too_wide(verbose)


def test_the_json_keeps_the_detail_in_a_field_of_its_own(tmp_path: Path) -> None:
    jobs = plan_jobs(
        SuiteOptions(budget=3, output_dir=tmp_path),
        scenarios=("B7-duplicate-lru-entries",),
        core_depths=(0,),
    )
    (job,) = [j for j in jobs if j.role == "variant"]
    fields = case_result(run_job(job), "modelmanager").fields
    assert fields["detail"] == "lru=('X', 'X')"
    assert "lru=(" not in str(fields["message"])


def _cell(verdict: str, role: str = "target", implementation: str = "mine") -> Cell:
    return Cell(
        scenario="B1-remove-add-generation-split",
        implementation=implementation,
        role=role,
        verdict=verdict,
        label="-",
        executions=6,
        elapsed=0.1,
        caught_by=("pct",) if verdict == "CAUGHT" else (),
        modes=(),
    )


def test_the_closing_counts_are_never_split_across_lines(tmp_path: Path) -> None:
    """A shard's long first line puts the verdict counts on a line of their own, whole
    (it once broke as "... FAIL 2, PASS 1, SKIP" / "    12")."""
    cells = (_cell("FAIL"),) * 2 + (_cell("PASS"),) + (_cell("SKIP"),) * 12
    summary = RunSummary(
        cells=cells,
        planned=30,
        selected=15,
        shard="2/2",
        elapsed=1.3,
        workers=2,
        output_dir=tmp_path,
        interrupted=False,
    )
    first, second = summary.closing_lines()[:2]
    assert first.endswith("with 2 job(s):"), first
    assert second == "    FAIL 2, PASS 1, SKIP 12"
    short = attrs.evolve(summary, shard=None, cells=cells[:3])
    assert short.closing_lines()[0].endswith("job(s): FAIL 2, PASS 1")


def test_the_caught_column_is_there_only_where_the_run_has_variants() -> None:
    """A target's run has no known-bug variants: no empty "search caught" column."""
    target = render_table([_cell("FAIL"), _cell("PASS", implementation="other")])
    assert "search caught" not in target
    both = render_table([_cell("PASS", role="core"), _cell("CAUGHT", role="variant")])
    assert "search caught" in both
    assert table_rows(both)[-1][-1] == "pct"

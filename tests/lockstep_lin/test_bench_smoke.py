"""benchmarks.bench_lockstep still runs: --quick in-process, structure only, never timings."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from benchmarks import bench_lockstep  # noqa: E402


def test_quick_run_has_every_table(capsys: pytest.CaptureFixture[str]) -> None:
    """Every bug x strategy cell is present and found; DPOR counts match the traces."""
    result = bench_lockstep.run(quick=True)
    assert set(result) >= {"throughput", "bugs", "dpor_vs_dfs", "frontrun"}
    assert result["throughput"]["executions"] == 20
    assert result["throughput"]["switch_points_per_execution"] > 30
    assert set(result["bugs"]) == {
        "lost_update",
        "abba_deadlock",
        "missed_wakeup",
        "timeout_fallback",
        "two_preemptions",
        "inventory_oversold",
    }
    for row in result["bugs"].values():
        assert set(row) == set(bench_lockstep.STRATEGIES)
        for cell in row.values():
            assert cell["found"] == cell["runs"] == 1
            assert cell["executions"] <= cell["budget"]
    for row in result["dpor_vs_dfs"].values():
        assert row["dpor"]["complete"] == row["traces"]
        assert row["dpor"]["exhausted"]
    assert result["frontrun"]["available"] is False
    for modes in result["races"].values():
        assert modes["watched"]["dpor"]["kind"] == "data-race"
        assert modes["watched, races off"]["dpor"]["kind"] == "exception"
        assert modes["unwatched"]["dpor"]["kind"] is None
    assert result["watch_overhead"]["ratio"] > 0
    assert result["watch_overhead"]["ratio_races_off_per_step"] > 0
    for row in result["dpor_vs_traces"].values():
        assert row["complete"] == row["traces"]
    assert bench_lockstep.main(["--quick"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("bench_lockstep: python ")
    assert any(line.startswith("3. Executions to exhaust") for line in lines)
    assert bench_lockstep.main(["--watch-overhead", "--quick"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert "per-execution CPU time of watching" in line
    assert "watched/unwatched x" in line

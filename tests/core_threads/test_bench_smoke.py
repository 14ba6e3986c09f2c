"""The core benchmark still runs: ``--quick`` mode in-process, structure only, never timings."""

from __future__ import annotations

import pathlib
import sys

import pytest

_ROOT = str(pathlib.Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:  # ``benchmarks`` is not installed; plain ``pytest`` needs this
    sys.path.insert(0, _ROOT)

from benchmarks import bench_core  # noqa: E402


def test_quick_run_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    """One row per (operation, max_size), each with positive costs and a ratio."""
    assert bench_core.main(["--quick"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("bench_core: python ")
    assert lines[1].split() == [
        "operation",
        "stack",
        "max_size",
        "core",
        "ns/op",
        "baseline",
        "base",
        "ns/op",
        "ratio",
    ]
    rows = [line for line in lines if line.endswith("x") and not line.startswith("worst")]
    operations = ("add_model (warm)", "lease enter+exit", "refresh")
    assert len(rows) == len(operations) * 2  # --quick measures max_size 8 and 100
    for row in rows:
        assert row.startswith(operations)
        assert " cache " in row
        assert float(row.split()[-1].rstrip("x")) > 0
    assert lines[-1].startswith("worst ratio ")


def test_measure_returns_one_row_per_cell() -> None:
    """measure() covers every operation for every requested max_size."""
    rows = bench_core.measure(bench_core.Settings(repeat=1, number=20, max_sizes=(3,)))
    assert sorted(row.operation for row in rows) == [
        "add_model (warm)",
        "lease enter+exit",
        "refresh",
    ]
    assert all(row.max_size == 3 and row.core_ns > 0 and row.baseline_ns > 0 for row in rows)


def test_layers_adds_bare_manager_rows() -> None:
    """--layers measures a bare ModelManager too (add and lease; it has no refresh)."""
    settings = bench_core.Settings(repeat=1, number=20, max_sizes=(3,), layers=True)
    rows = bench_core.measure(settings)
    assert sorted((row.stack, row.operation) for row in rows) == [
        ("cache", "add_model (warm)"),
        ("cache", "lease enter+exit"),
        ("cache", "refresh"),
        ("manager", "add_model (warm)"),
        ("manager", "lease enter+exit"),
    ]
    assert "manager" in bench_core.format_table(rows)


def test_bad_settings_are_rejected(capsys: pytest.CaptureFixture[str]) -> None:
    """--repeat 0 is a usage error naming the values."""
    with pytest.raises(SystemExit) as excinfo:
        bench_core.main(["--repeat", "0"])
    assert excinfo.value.code == 2
    assert "--repeat and --number must be >= 1" in capsys.readouterr().err


def test_cells_runs_a_named_cell_and_refuses_an_unknown_one(capsys):
    from benchmarks import cells

    assert cells.main(["--budget", "1", "random-1@core-depth0"]) == 0
    assert capsys.readouterr().out.strip() == "random-1@core-depth0: PASS, 3 executions"
    assert cells.main(["--budget", "1", "nope@core-depth0"]) == 2
    assert "no such cell" in capsys.readouterr().err

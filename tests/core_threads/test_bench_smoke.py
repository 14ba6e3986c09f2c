"""The core benchmark still runs: ``--quick`` mode in-process, structure only, never timings."""

from __future__ import annotations

import pathlib
import sys
from typing import Any

import pytest

_ROOT = str(pathlib.Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:  # ``benchmarks`` is not installed; plain ``pytest`` needs this
    sys.path.insert(0, _ROOT)

from benchmarks import bench_core  # noqa: E402
from modelmanager import WithFixedSizeCache  # noqa: E402


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


def test_baselines_are_filled_in_step_with_the_stacks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each id goes into every stack and then into the baselines before the next id,
    so no structure is given memory laid out apart from the others'."""
    order: list[tuple[str, str]] = []
    real_add = bench_core._Baselines.add

    def baselines_add(self: bench_core._Baselines, model_id: str) -> None:
        order.append(("baselines", model_id))
        real_add(self, model_id)

    def trace(stack: str, add: Any) -> Any:
        def add_model(model_id: str, *args: Any, **kwargs: Any) -> None:
            order.append((stack, model_id))
            add(model_id, *args, **kwargs)

        return add_model

    real_init = WithFixedSizeCache.__init__

    def cache_init(self: Any, *args: Any, **kwargs: Any) -> None:
        real_init(self, *args, **kwargs)
        self.add_model = trace("cache", self.add_model)

    monkeypatch.setattr(bench_core._Baselines, "add", baselines_add)
    monkeypatch.setattr(WithFixedSizeCache, "__init__", cache_init)
    bench_core.measure(bench_core.Settings(repeat=1, number=6, max_sizes=(3,)))
    ids = [f"model-{index}" for index in range(3)]
    filling = [(side, model_id) for model_id in ids for side in ("cache", "baselines")]
    assert order[: len(filling)] == filling  # then the timed loops' warm adds
    assert ("baselines", ids[0]) not in order[len(filling) :]


@pytest.mark.parametrize("max_size", [8, 1500])
def test_every_id_is_warm_before_the_first_timed_loop(max_size: int) -> None:
    """The warm-up visits every id (and at least 1,000 ids), on both sides."""
    ids = [f"model-{index}" for index in range(max_size)]
    calls: dict[str, list[list[str]]] = {"core": [], "base": []}

    def recorder(side: str) -> bench_core.Loop:
        return lambda sequence: calls[side].append(list(sequence))

    settings = bench_core.Settings(repeat=1, number=3000, max_sizes=(max_size,))
    bench_core._paired(recorder("core"), recorder("base"), ids, settings)
    for side in ("core", "base"):
        warm_up, timed = calls[side]
        assert set(warm_up) == set(ids)
        assert len(warm_up) == max(max_size, 1000)
        assert len(timed) == 3000


def test_bad_settings_are_rejected(capsys: pytest.CaptureFixture[str]) -> None:
    """--repeat 0 is a usage error naming the values."""
    with pytest.raises(SystemExit) as excinfo:
        bench_core.main(["--repeat", "0"])
    assert excinfo.value.code == 2
    assert "--repeat and --number must be >= 1" in capsys.readouterr().err


def test_cells_runs_a_named_cell_and_refuses_an_unknown_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from benchmarks import cells

    assert cells.main(["--budget", "1", "random-1@core-depth0"]) == 0
    assert capsys.readouterr().out.strip() == "random-1@core-depth0: PASS, 3 executions"
    assert cells.main(["--budget", "1", "nope@core-depth0"]) == 2
    assert "no such cell" in capsys.readouterr().err

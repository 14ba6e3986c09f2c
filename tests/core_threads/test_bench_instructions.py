"""The instruction-count benchmark: its child loops run, its arithmetic is right.

valgrind itself is not run here (a count takes seconds under it): a stand-in
prints cachegrind's summary line for a known cost per operation.
"""

from __future__ import annotations

import pathlib
import stat
import sys

import pytest

_ROOT = str(pathlib.Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:  # ``benchmarks`` is not installed; plain ``pytest`` needs this
    sys.path.insert(0, _ROOT)

from benchmarks import bench_instructions  # noqa: E402

# A stand-in for valgrind: the child's arguments end with OP SIDE MAX_SIZE COUNT; it
# reports 1,000,000 start-up instructions plus 7 a core operation, 5 a baseline one.
_FAKE_VALGRIND = """#!{python}
import sys
side, count = sys.argv[-3], int(sys.argv[-1])
per_op = 7 if side == "core" else 5
print(f"==1== I   refs:      {{1_000_000 + per_op * count:,}}", file=sys.stderr)
"""


@pytest.mark.parametrize("operation", sorted(bench_instructions.OPERATIONS))
@pytest.mark.parametrize("side", ["core", "baseline"])
def test_every_child_loop_runs(operation: str, side: str) -> None:
    """The loops valgrind counts: each runs on a filled cache (or its baseline)."""
    assert bench_instructions.main(["--child", operation, side, "3", "10"]) == 0


def test_the_cost_of_one_operation_is_the_difference_over_the_count_difference(
    tmp_path: pathlib.Path,
) -> None:
    """Start-up cancels out: (I(large) - I(small)) / (large - small), per side."""
    fake = tmp_path / "valgrind"
    fake.write_text(_FAKE_VALGRIND.format(python=sys.executable))
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    rows = bench_instructions.measure(str(fake), max_size=8, small=100, large=1100)
    assert [(row.operation, row.core, row.base) for row in rows] == [
        (operation, 7, 5) for operation in bench_instructions.OPERATIONS
    ]
    assert rows[0].ratio == pytest.approx(1.4)
    table = bench_instructions.format_table(rows).splitlines()
    assert table[2].split()[-1] == "1.40x"


def test_a_failed_count_says_what_valgrind_said(tmp_path: pathlib.Path) -> None:
    fake = tmp_path / "valgrind"
    fake.write_text(f"#!{sys.executable}\nimport sys\nprint('no tool', file=sys.stderr)\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    with pytest.raises(RuntimeError, match=r"failed \(exit 0\):\nno tool"):
        bench_instructions.measure(str(fake), max_size=8, small=1, large=2)


def test_without_valgrind_it_says_so_and_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(bench_instructions.shutil, "which", lambda name: None)
    assert bench_instructions.main([]) == 2
    assert "valgrind is not installed" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--small", "10", "--large", "10"], ["--max-size", "0"]])
def test_bad_counts_are_usage_errors(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        bench_instructions.main(argv)
    assert exited.value.code == 2

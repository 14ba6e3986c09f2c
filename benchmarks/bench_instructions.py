"""Warm-path cost of the core in CPU instructions, counted: the same at any load.

Run with ``python3 -m benchmarks.bench_instructions`` (needs ``valgrind``;
``apt-get install valgrind``).

``bench_core`` times the warm paths; on a small shared machine its ratios move
by 0.2x from run to run. This benchmark counts instead: each operation of
``bench_core`` (the same loops, the same trivial models, the same baselines) is
run in a child interpreter under ``valgrind --tool=cachegrind`` twice, with
``--small`` and ``--large`` operations, and the difference of the two
instruction counts divided by the difference of the operation counts is the
cost of one operation: start-up, imports and filling the cache cancel out.
``PYTHONHASHSEED`` is fixed; counts repeat within about 1% (the environment's
size moves the interpreter's memory layout a little), whatever else runs on the
machine. The ratio column is core / baseline, as in ``bench_core``.

Instruction counts are not time (a cache miss costs more than an add), but
for these loops, whose data fits in the CPU's caches, they move with the
timed medians, and a change of a few percent is visible without noise.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence

import attrs

from benchmarks import bench_core
from modelmanager import ModelManager, WithFixedSizeCache

OPERATIONS: dict[str, tuple[str, str]] = {
    "add_model (warm)": ("add_model (warm)", "OrderedDict+Lock"),
    "lease enter+exit": ("lease enter+exit", "OrderedDict+Lock+lease"),
    "refresh": ("refresh", "OrderedDict+Lock"),
}
"""Each operation: its loop among ``bench_core``'s core loops, and its baseline loop."""

_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


@attrs.frozen
class Row:
    """One operation: instructions per operation for the core and its baseline."""

    operation: str
    max_size: int
    core: int
    baseline: str
    base: int

    @property
    def ratio(self) -> float:
        return self.core / self.base


def _child(operation: str, side: str, max_size: int, count: int) -> None:
    """Fill a cache as ``bench_core`` does and run one loop ``count`` times (in the child)."""
    ids = [f"model-{index}" for index in range(max_size)]
    cache = WithFixedSizeCache(ModelManager(bench_core._TrivialRegistry()), max_size=max_size)
    for model_id in ids:
        cache.add_model(model_id)
    visit = list(ids)
    random.Random(max_size).shuffle(visit)
    sequence = [visit[index % len(visit)] for index in range(count)]
    core_name, baseline_name = OPERATIONS[operation]
    if side == "core":
        loop = bench_core._core_loops(cache)[core_name]
    else:
        loop = bench_core._baseline_loops(ids)[baseline_name]
    loop(visit)  # warm up: specialised bytecode, allocated structures
    loop(sequence)


def _count(valgrind: str, operation: str, side: str, max_size: int, count: int) -> int:
    """Instructions the child runs for ``count`` operations (start-up included)."""
    command = [
        valgrind,
        "--tool=cachegrind",
        "--cache-sim=no",
        "--cachegrind-out-file=/dev/null",
        sys.executable,
        "-m",
        "benchmarks.bench_instructions",
        "--child",
        operation,
        side,
        str(max_size),
        str(count),
    ]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    found = _REFS.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(
            f"valgrind run of {operation!r} ({side}) failed (exit {done.returncode}):\n"
            f"{done.stderr[-2000:]}"
        )
    return int(found.group(1).replace(",", ""))


def measure(valgrind: str, max_size: int, small: int, large: int) -> list[Row]:
    """Instructions per operation of every operation, core and baseline."""
    rows = []
    for operation, (_, baseline) in OPERATIONS.items():
        per_op = {}
        for side in ("core", "baseline"):
            few = _count(valgrind, operation, side, max_size, small)
            many = _count(valgrind, operation, side, max_size, large)
            per_op[side] = round((many - few) / (large - small))
        rows.append(Row(operation, max_size, per_op["core"], baseline, per_op["baseline"]))
    return rows


def format_table(rows: Sequence[Row]) -> str:
    """A fixed-width table, one line per operation."""
    header = (
        f"{'operation':<18} {'max_size':>8} {'core instr/op':>13} "
        f"{'baseline':<22} {'base instr/op':>13} {'ratio':>6}"
    )
    lines = [header, "-" * len(header)]
    for row in rows:
        lines.append(
            f"{row.operation:<18} {row.max_size:>8} {row.core:>13,} "
            f"{row.baseline:<22} {row.base:>13,} {row.ratio:>5.2f}x"
        )
    return "\n".join(lines)


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python3 -m benchmarks.bench_instructions", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--max-size", type=int, default=8, help="models in the cache (default 8)")
    parser.add_argument("--small", type=int, default=2_000, help="operations of the short run")
    parser.add_argument("--large", type=int, default=12_000, help="operations of the long run")
    parser.add_argument("--child", nargs=4, metavar=("OP", "SIDE", "MAX_SIZE", "COUNT"))
    args = parser.parse_args(argv)
    if args.child is None and not 1 <= args.small < args.large:
        parser.error(f"need 1 <= --small < --large (got {args.small} and {args.large})")
    if args.max_size < 1:
        parser.error(f"--max-size must be >= 1 (got {args.max_size})")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Count and print the table; exit 2 where valgrind is missing."""
    args = _parse(argv)
    if args.child is not None:
        operation, side, max_size, count = args.child
        _child(operation, side, int(max_size), int(count))
        return 0
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        print(
            "bench_instructions: valgrind is not installed (apt-get install valgrind); "
            "python3 -m benchmarks.bench_core times the same loops",
            file=sys.stderr,
        )
        return 2
    print(
        f"bench_instructions: python {sys.version.split()[0]}, instructions per operation "
        f"((I({args.large}) - I({args.small})) / {args.large - args.small}, cachegrind)"
    )
    print(format_table(measure(valgrind, args.max_size, args.small, args.large)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Run chosen cells of ``lockstep check`` in this process, for instruction counts.

    python3 -m benchmarks.cells [--budget B] [SCENARIO@IMPLEMENTATION ...]

Runs each named cell of the default check (its modes, with ``--budget``
executions per strategy) and prints one line per cell. Under callgrind the
difference between two budgets is what the extra executions cost, in
instructions, which no other load on the machine changes::

    valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        python3 -m benchmarks.cells --budget 12   # minus the same with --budget 2

Without cells it runs the four used in ``benchmarks/README.md``. Exit status 2
names a cell the check does not have.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from lockstep.suites import SuiteOptions
from models_spec._check.suite import plan_jobs, run_job

DEFAULT_CELLS = (
    "random-1@core-depth0",
    "B4-warm-fast-path-bypass@core-depth0",
    "random-2@core-depth0-weighted",
    "B17-unload-under-running-model@core-depth0",
)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the cells; 0, or 2 for a cell the default check does not have."""
    parser = argparse.ArgumentParser(prog="python3 -m benchmarks.cells", description=__doc__)
    parser.add_argument("--budget", type=int, default=12, help="executions per strategy")
    parser.add_argument("cells", nargs="*", default=list(DEFAULT_CELLS))
    args = parser.parse_args(argv)
    if args.budget < 1:
        parser.error("--budget must be >= 1")
    with tempfile.TemporaryDirectory() as out:
        jobs = plan_jobs(SuiteOptions(output_dir=Path(out), budget=args.budget))
        by_name = {f"{job.scenario}@{job.implementation}": job for job in jobs}
        missing = [cell for cell in args.cells if cell not in by_name]
        if missing:
            print(f"no such cell in the default check: {', '.join(missing)}", file=sys.stderr)
            return 2
        for cell in args.cells:
            result = run_job(by_name[cell])
            print(f"{cell}: {result.verdict}, {result.executions} executions")
    return 0


if __name__ == "__main__":
    sys.exit(main())

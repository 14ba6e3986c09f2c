"""Throughput of this checkout's backends next to another lockstep checkout, in one run.

``compare(baseline_dir)`` measures, in fresh interpreters and alternating so that
machine load hits every contender alike:

* executions/s and switch points/s of the random strategy on two scenarios: the
  3-thread x 10-acquire lock scenario and a models_spec scenario (a reported bug's
  scenario against the core, its invariants checked at every step);
* optionally (``check=True``) the wall time of the default ``lockstep check --jobs 2``;

for the baseline checkout (its own code, imported from its ``src/`` and root through
``PYTHONPATH``, with its default backend) and for this checkout on each backend. It
reports medians over ``repeats`` runs and the ratios to the baseline. The scenarios'
code is the same text for every contender (``_RUNNER`` below), written against the
API both versions have.

A baseline checkout of the commit this work started from::

    git worktree add /tmp/lockstep-base ec2b891
    python3 -m benchmarks.bench_lockstep --baseline /tmp/lockstep-base --check
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["SPEC_SCENARIO", "compare", "measure", "render_comparison"]

_ROOT = Path(__file__).resolve().parents[1]
SPEC_SCENARIO = "B1-remove-add-generation-split"

# Runs in a fresh interpreter: argv = kind, executions, backend ("-": the default).
# Prints {"executions", "seconds", "steps"} as JSON. Only API that every lockstep
# version compared here has.
_RUNNER = """
import json, sys, time
import lockstep
import lockstep.threading

kind, executions, backend = sys.argv[1], int(sys.argv[2]), sys.argv[3]
patch = ()
if kind == "lock":
    def scenario():
        lock = lockstep.threading.Lock()
        box = {"n": 0}

        def worker():
            for _ in range(10):
                with lock:
                    box["n"] += 1

        threads = [lockstep.spawn(worker) for _ in range(3)]
        for t in threads:
            t.join()
        assert box["n"] == 30
else:
    from models_spec.adapter import CoreAdapter
    from models_spec._harness.scenario_index import get_scenario

    adapter = CoreAdapter(0)
    scenario = get_scenario(kind).build(adapter)
    patch = adapter.patch_modules()
options = {} if backend == "-" else {"backend": backend}
start = time.perf_counter()
result = lockstep.explore(
    scenario,
    strategy=lockstep.RandomStrategy(0),
    budget=executions,
    shrink=False,
    progress=False,
    patch=patch,
    max_steps=3000,
    **options,
)
seconds = time.perf_counter() - start
if result.failure is not None:
    sys.exit("the scenario failed: " + result.failure.message)
print(json.dumps({"executions": result.executions, "seconds": seconds, "steps": result.steps}))
"""


def _env(checkout: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("LOCKSTEP_BACKEND", None)
    if checkout is not None:
        roots = [str(checkout / "src"), str(checkout)]
        env["PYTHONPATH"] = os.pathsep.join(roots)
        env["PYTHONDONTWRITEBYTECODE"] = "1"  # leave the other checkout untouched
    else:
        env["PYTHONPATH"] = os.pathsep.join([str(_ROOT / "src"), str(_ROOT)])
    return env


def measure(
    kind: str, executions: int, *, checkout: Path | None = None, backend: str | None = None
) -> dict[str, float]:
    """One fresh-interpreter run of ``kind`` ("lock" or a scenario id); rates per second."""
    with tempfile.TemporaryDirectory() as cwd:  # nothing importable from the cwd
        proc = subprocess.run(
            [sys.executable, "-c", _RUNNER, kind, str(executions), backend or "-"],
            env=_env(checkout),
            cwd=cwd,
            capture_output=True,
            text=True,
            check=False,
        )
    if proc.returncode != 0:
        raise RuntimeError(f"measuring {kind} failed: {proc.stderr.strip()[-2000:]}")
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    return {
        "executions_per_second": data["executions"] / data["seconds"],
        "switch_points_per_second": data["steps"] / data["seconds"],
        "switch_points_per_execution": data["steps"] / data["executions"],
    }


def check_wall_time(*, checkout: Path | None = None, backend: str | None = None) -> float:
    """Wall seconds of ``lockstep check --jobs 2`` (the default suite) in a fresh process."""
    with tempfile.TemporaryDirectory() as out:
        command = [sys.executable, "-m", "lockstep", "check", "--jobs", "2", "--output-dir", out]
        if backend is not None:
            command += ["--backend", backend]
        start = time.perf_counter()
        proc = subprocess.run(
            command, env=_env(checkout), cwd=out, capture_output=True, text=True, check=False
        )
        seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"lockstep check failed ({proc.returncode}): {proc.stdout[-2000:]}")
    return seconds


def compare(
    baseline: Path,
    *,
    repeats: int = 5,
    lock_executions: int = 300,
    spec_executions: int = 60,
    check: bool = False,
) -> dict[str, Any]:
    """Medians for the baseline and for both backends here, and the ratios."""
    contenders: dict[str, dict[str, Any]] = {
        "baseline": {"checkout": baseline, "backend": None},
        "thread": {"checkout": None, "backend": "thread"},
        "greenlet": {"checkout": None, "backend": "greenlet"},
    }
    samples: dict[str, dict[str, list[dict[str, float]]]] = {
        name: {"lock": [], "spec": []} for name in contenders
    }
    checks: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(repeats):
        for name, how in contenders.items():  # alternate: load hits everyone alike
            samples[name]["lock"].append(measure("lock", lock_executions, **how))
            samples[name]["spec"].append(measure(SPEC_SCENARIO, spec_executions, **how))
    if check:
        for _ in range(max(1, repeats // 2)):
            for name, how in contenders.items():
                checks[name].append(check_wall_time(**how))
    table: dict[str, Any] = {}
    for name in contenders:
        row: dict[str, Any] = {}
        for kind, runs in samples[name].items():
            row[kind] = {
                key: statistics.median(run[key] for run in runs)
                for key in ("executions_per_second", "switch_points_per_second")
            }
            row[kind]["runs"] = [round(run["executions_per_second"]) for run in runs]
        if checks[name]:
            row["check_seconds"] = statistics.median(checks[name])
        table[name] = row
    return {"baseline": str(baseline), "repeats": repeats, "table": table}


def render_comparison(result: dict[str, Any]) -> str:
    """The side-by-side table with ratios to the baseline."""
    table = result["table"]
    base = table["baseline"]
    lines = [
        f"Side by side with {result['baseline']} (medians of {result['repeats']} fresh runs "
        "each, alternating)",
        f"{'':10} {'lock 3x10 exec/s':>17} {'switch/s':>9} {'ratio':>6}"
        f" {SPEC_SCENARIO[:13] + ' exec/s':>20} {'ratio':>6} {'check --jobs 2':>15}",
    ]
    for name, row in table.items():
        lock, spec = row["lock"], row["spec"]
        lock_ratio = lock["executions_per_second"] / base["lock"]["executions_per_second"]
        spec_ratio = spec["executions_per_second"] / base["spec"]["executions_per_second"]
        check = f"{row['check_seconds']:.1f} s" if "check_seconds" in row else "-"
        lines.append(
            f"{name:10} {lock['executions_per_second']:17.0f} "
            f"{lock['switch_points_per_second']:9.0f} {lock_ratio:5.2f}x"
            f" {spec['executions_per_second']:20.1f} {spec_ratio:5.2f}x {check:>15}"
        )
    lines.append(
        "runs (lock exec/s): "
        + "; ".join(f"{name} {row['lock']['runs']}" for name, row in table.items())
    )
    return "\n".join(lines)

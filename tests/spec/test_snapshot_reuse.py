"""The core adapter's snapshot reuses what no watched write can have changed.

`CoreAdapter.snapshot` keeps the parts read from watched state alone (registry,
pins, leases, loads in flight, weights) while `lockstep.lowlevel.watched_writes()`
is unchanged, and reads the rest (the lifecycle table's entries, the LRU's marks,
the LRU lock: state that is not watched) every time. That is exact only if every
change to those parts is a watched write. These tests take a fresh snapshot next to
every snapshot the suite takes, over the default check's core cells and the
``mixed`` family (pins, leases held across operations), and require them equal.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lockstep.suites import SuiteOptions
from models_spec._check.suite import plan_jobs, run_job
from models_spec.adapter import CoreAdapter, Snapshot


def _same(a: Snapshot, b: Snapshot) -> bool:
    """Equal values everywhere, the same model objects under the same keys."""
    if a.registered.keys() != b.registered.keys():
        return False
    if any(a.registered[k] is not b.registered[k] for k in a.registered):
        return False
    fields = (
        "lru",
        "lifecycle",
        "pins",
        "leases",
        "in_flight_loads",
        "max_size",
        "lru_lock_held",
        "weights",
        "max_weight",
    )
    return all(getattr(a, f) == getattr(b, f) for f in fields)


@pytest.fixture
def compared(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Every CoreAdapter.snapshot is checked against a fresh one; counts them."""
    counts = {"snapshots": 0, "reused": 0}
    reuse = CoreAdapter.snapshot

    def checking(self: CoreAdapter, stack: Any) -> Snapshot:
        before = self._last_snapshot
        snap = reuse(self, stack)
        fresh = self.fresh_snapshot(stack)
        assert _same(snap, fresh), f"reused snapshot differs:\n{snap}\nfresh:\n{fresh}"
        counts["snapshots"] += 1
        if before is not None and self._last_snapshot is not None:
            counts["reused"] += before[1] == self._last_snapshot[1] and before[0] is stack
        return snap

    monkeypatch.setattr(CoreAdapter, "snapshot", checking)
    return counts


def _core_jobs(tmp_path: Path, **options: Any) -> list[Any]:
    jobs = plan_jobs(SuiteOptions(budget=6, output_dir=tmp_path), **options)
    return [job for job in jobs if job.role == "core" and job.implementation.startswith("core-")]


SHARDS = 4
"""The default check's core cells are split in this many tests, each a quarter of them:
all of them in one test took 43 s on one loaded core, past a third of the timeout."""


@pytest.mark.parametrize("shard", range(SHARDS))
def test_the_default_checks_core_cells_see_the_same_state(
    compared: dict[str, int], tmp_path: Path, shard: int
) -> None:
    jobs = _core_jobs(tmp_path)
    assert len(jobs) > 50
    for job in jobs[shard::SHARDS]:
        cell = run_job(job)
        assert cell.verdict in ("PASS", "SKIP"), (cell.scenario, cell.implementation, cell.message)
    assert compared["snapshots"] > 10_000 // SHARDS
    assert compared["reused"] > compared["snapshots"] // 2  # else this tests nothing


@pytest.mark.parametrize("half", range(2))
def test_pins_and_leases_held_across_operations_see_the_same_state(
    compared: dict[str, int], tmp_path: Path, half: int
) -> None:
    scenarios = [f"mixed-{seed}" for seed in range(half, 8, 2)]
    jobs = [
        job
        for job in _core_jobs(tmp_path, scenarios=scenarios)
        if not job.implementation.endswith("-wait")  # see models_spec.hunt
    ]
    assert jobs
    for job in jobs:
        run_job(job)
    assert compared["snapshots"] > 500
    assert compared["reused"] > 0

"""Recorded schedules replay exactly, on every supported CPython version.

Each ``schedules/NAME.json`` was recorded by explore(); ``NAME.trace.json`` holds the
expected failure and, per step, (thread, kind, label, file:line, preemption). Replaying
must reproduce both exactly: schedules name operations, not bytecode, so they survive
interpreter upgrades. Never skipped.
"""

from __future__ import annotations

import json
import os
import pathlib

import pytest

from lockstep import Schedule, replay
from lockstep._cli import load_scenario

CORPUS = pathlib.Path(__file__).parent / "schedules"
RECORDED = sorted(p for p in CORPUS.glob("*.json") if not p.name.endswith(".trace.json"))


def _signature(rows):
    result = []
    for row in rows:
        path, _, line = row["location"].rpartition(":")
        where = f"{os.path.basename(path)}:{line}"
        result.append([row["thread"], row["kind"], row["label"], where, row["preemption"]])
    return result


def test_corpus_is_not_empty():
    """The corpus holds at least one recorded schedule."""
    assert RECORDED


@pytest.mark.parametrize("path", RECORDED, ids=[p.stem for p in RECORDED])
def test_recorded_schedule_replays_exactly(path):
    """Same failure, same steps, same locations as when it was recorded."""
    schedule = Schedule.load(path)
    expected = json.loads(path.with_name(f"{path.stem}.trace.json").read_text())
    assert schedule.scenario_id is not None
    result = replay(load_scenario(schedule.scenario_id), schedule)
    assert result.failure is not None
    assert result.failure.kind == expected["failure_kind"]
    assert result.failure.message == expected["message"]
    assert result.schedule.choices == schedule.choices
    assert _signature(result.trace.to_rows()) == expected["steps"]

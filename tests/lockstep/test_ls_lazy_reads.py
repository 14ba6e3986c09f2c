"""Reads of a watched attribute are recorded from its first write on (races reported).

Most attributes of watched objects are written once, before the threads start (a
lock, a table, a limit), and only read afterwards: no read of them can race, so
with races reported their reads are not recorded until the attribute is first
written during an execution. An execution that writes one whose earlier reads went
unrecorded runs again from the start with the same choices, recording them: the
race detector sees every read that a write could race with, and nothing else
changes (the same executions, failures and schedules as recording everything).

Each test defines its class inside the test, so the class starts with no recorded
attribute whatever ran before in the process.
"""

from __future__ import annotations

from typing import Any

import pytest

import lockstep
from lockstep import DFSStrategy, DporStrategy, PCTStrategy, RandomStrategy, explore, replay
from lockstep._memory import _state
from lockstep._memory._instances import tracked_instance_class

threading = lockstep.threading


def _fresh_class() -> type:
    class Config:
        def __init__(self) -> None:
            self.limit = 2  # read only, after the threads start
            self.loaded = 0  # read, then written by another thread

    return Config


def _read_then_write(cls: type, *, synced: bool) -> Any:
    def scenario() -> None:
        config = lockstep.watch(cls())
        lock = threading.Lock()
        other = threading.Lock()

        def reader() -> None:
            with lock:
                _ = config.limit
                _ = config.loaded

        def writer() -> None:
            with lock if synced else other:
                config.loaded = config.limit

        threads = [lockstep.spawn(reader), lockstep.spawn(writer)]
        for t in threads:
            t.join()

    return scenario


def test_a_read_made_before_the_first_write_still_races_with_it():
    """The first execution runs the reader, then the writer: the reader's read of
    ``loaded`` was made before anything wrote it. The execution runs again recording
    it, and the race is reported in that first execution."""
    result = explore(
        _read_then_write(_fresh_class(), synced=False), strategy=DFSStrategy(), budget=1
    )
    assert result.executions == 1  # the rerun is the same execution, not another one
    failure = result.failure
    assert failure is not None
    assert failure.kind == "data-race", failure
    race = failure.race
    assert race is not None
    assert race.location.endswith(".loaded")
    assert {race.first.mode, race.second.mode} == {"read", "write"}


def test_the_schedule_of_such_a_race_replays_it(tmp_path):
    cls = _fresh_class()
    scenario = _read_then_write(cls, synced=False)
    failure = explore(scenario, strategy=DFSStrategy(), budget=1).failure
    assert failure is not None
    again = replay(scenario, failure.schedule)
    assert again.failure is not None
    assert again.failure.kind == "data-race"
    assert again.failure.message == failure.message


def test_reads_ordered_by_the_lock_are_no_race():
    result = explore(
        _read_then_write(_fresh_class(), synced=True), strategy=DporStrategy(), budget=100
    )
    assert result.failure is None
    assert result.exhausted


def _missed_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the times an execution had to run again."""
    calls: list[int] = []
    original = _state.MemoryState.reads_missed

    def counting(self: _state.MemoryState) -> None:
        calls.append(1)
        original(self)

    monkeypatch.setattr(_state.MemoryState, "reads_missed", counting)
    return calls


def test_an_attribute_only_read_never_makes_an_execution_run_again(monkeypatch):
    calls = _missed_reads(monkeypatch)
    cls = _fresh_class()

    def scenario() -> None:
        config = lockstep.watch(cls())

        def reader() -> None:
            _ = config.limit + config.loaded

        threads = [lockstep.spawn(reader), lockstep.spawn(reader)]
        for t in threads:
            t.join()

    result = explore(scenario, strategy=DporStrategy(), budget=100)
    assert result.failure is None
    assert calls == []
    # Read only: no descriptor stands for them on the tracked class, so reading them
    # costs what it costs on an unwatched object.
    tracked = vars(tracked_instance_class(cls))
    assert "limit" not in tracked
    assert "loaded" not in tracked


@pytest.mark.parametrize(
    "make_strategy",
    [
        lambda: RandomStrategy(seed=3),
        lambda: PCTStrategy(seed=3),
        DporStrategy,
        DFSStrategy,
    ],
    ids=["random", "pct", "dpor", "dfs"],
)
def test_running_again_changes_no_result(monkeypatch, make_strategy):
    """The same exploration with a class that starts with no recorded attribute (its
    first executions run again) and once the class has them all (none does) gives the
    same executions, failure, schedule and message."""
    calls = _missed_reads(monkeypatch)
    cls = _fresh_class()

    def scenario() -> None:
        config = lockstep.watch(cls())
        lock = threading.Lock()

        def loader() -> None:
            with lock:
                seen = config.loaded
            if seen < config.limit:  # checked, then acted on outside the lock
                config.loaded = seen + 1

        def reader() -> None:
            with lock:
                assert config.loaded <= config.limit

        threads = [lockstep.spawn(loader), lockstep.spawn(loader), lockstep.spawn(reader)]
        for t in threads:
            t.join()

    cold = explore(scenario, strategy=make_strategy(), budget=200, shrink=False)
    assert calls, "the first execution that wrote `loaded` ran again"
    del calls[:]
    warm = explore(scenario, strategy=make_strategy(), budget=200, shrink=False)
    assert calls == []
    assert cold.executions == warm.executions
    assert cold.steps == warm.steps
    assert cold.failure is not None  # the unlocked write races
    assert warm.failure is not None
    assert cold.failure.kind == "data-race"
    assert cold.failure.schedule.choices == warm.failure.schedule.choices
    assert cold.failure.message == warm.failure.message


def test_with_races_off_every_read_is_recorded_from_the_start(monkeypatch):
    """With races off every watched access is a switch point, so every attribute's
    reads are recorded from the watch on: nothing runs again."""
    calls = _missed_reads(monkeypatch)
    result = explore(
        _read_then_write(_fresh_class(), synced=False),
        strategy=DFSStrategy(),
        budget=50,
        races=False,
    )
    assert result.failure is None
    assert calls == []


def _first_execution_race(obj: Any, read: Any, write: Any) -> Any:
    """The race DFS's first execution reports: one thread reads, another writes ``obj``."""

    def scenario() -> None:
        watched = lockstep.watch(obj)
        threads = [lockstep.spawn(read, watched), lockstep.spawn(write, watched)]
        for t in threads:
            t.join()

    failure = explore(scenario, strategy=DFSStrategy(), budget=1).failure
    assert failure is not None
    assert failure.kind == "data-race", failure
    assert failure.race is not None
    return failure.race


def test_a_deleted_attribute_counts_as_written():
    race = _first_execution_race(
        _fresh_class()(),
        lambda config: getattr(config, "loaded", None),
        lambda config: delattr(config, "loaded"),
    )
    assert race.location.endswith(".loaded")


def test_a_class_default_shadowed_by_a_write_counts_as_written():
    class Flags:
        ready = False  # a class-level default, read before any instance value exists

    race = _first_execution_race(
        Flags(), lambda flags: flags.ready, lambda flags: setattr(flags, "ready", True)
    )
    assert race.location.endswith(".ready")

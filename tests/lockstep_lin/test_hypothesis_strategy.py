"""HypothesisStrategy: schedules as Hypothesis data (found, shrunk, replayed from the database)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.database import InMemoryExampleDatabase

import lockstep
from lockstep._schedule import Choice
from lockstep.errors import InvalidArgumentType
from lockstep.strategies._base import StepContext
from lockstep.strategies.hypothesis import HypothesisStrategy, run_under_hypothesis


def lost_update() -> None:
    """Two unlocked read-modify-write increments: one preemption loses an update."""
    box = {"n": 0}

    def increment() -> None:
        value = box["n"]
        lockstep.checkpoint("read", resource="n")
        box["n"] = value + 1

    threads = [lockstep.spawn(increment) for _ in range(2)]
    for t in threads:
        t.join()
    assert box["n"] == 2, f"lost update: n == {box['n']}"


def locked_update() -> None:
    """The same increments under a lock: correct in every schedule."""
    box = {"n": 0}
    lock = lockstep.threading.Lock()

    def increment() -> None:
        with lock:
            value = box["n"]
            lockstep.checkpoint("read", resource="n")
            box["n"] = value + 1

    threads = [lockstep.spawn(increment) for _ in range(2)]
    for t in threads:
        t.join()
    assert box["n"] == 2


def test_finds_and_shrinks_the_lost_update() -> None:
    """Hypothesis finds the bug deterministically and shrinks it to one preemption."""
    calls: list[int] = []

    @settings(max_examples=200, deadline=None, derandomize=True, database=None)
    @given(st.data())
    def check(data: st.DataObject) -> None:
        calls.append(1)
        run_under_hypothesis(lost_update, data)

    with pytest.raises(lockstep.ExplorationFailed) as info:
        check()
    failure = info.value.failure
    assert failure.kind == "exception"
    assert "lost update" in failure.message
    assert failure.trace.preemptions == 1
    assert len(calls) <= 200 + 50  # search plus shrinking stay bounded


def test_correct_code_passes_every_example() -> None:
    """No false alarm on the locked version."""
    runs: list[int] = []

    @settings(max_examples=40, deadline=None, derandomize=True, database=None)
    @given(st.data())
    def check(data: st.DataObject) -> None:
        result = run_under_hypothesis(locked_update, data)
        runs.append(result.executions)

    check()
    assert runs
    assert set(runs) == {1}


def test_failing_schedule_replays_from_the_database() -> None:
    """The shrunk schedule is saved; the next run fails on its first example.

    (@seed would make the first search deterministic but disables saving; without it
    the first search misses the bug with probability about (3/4)^200 < 1e-24: each
    example preempts at the one racy step with probability about 1/4.)
    """
    database = InMemoryExampleDatabase()
    calls: list[int] = []

    def build() -> object:
        @settings(max_examples=200, deadline=None, database=database)
        @given(st.data())
        def check(data: st.DataObject) -> None:
            calls.append(1)
            run_under_hypothesis(lost_update, data)

        return check

    with pytest.raises(lockstep.ExplorationFailed):
        build()()  # type: ignore[operator]
    assert database.data
    calls.clear()
    with pytest.raises(lockstep.ExplorationFailed) as info:
        build()()  # type: ignore[operator]
    assert len(calls) <= 2  # the saved example, then Hypothesis' final replay
    assert info.value.failure.trace.preemptions == 1


class _FixedData:
    """A stand-in for st.data(): returns scripted draws (and records the ranges)."""

    def __init__(self, values: list[int]) -> None:
        self.values = values
        self.ranges: list[object] = []

    def draw(self, strategy: object) -> int:
        self.ranges.append(strategy)
        return self.values.pop(0)


def _ctx(
    current: int | None, enabled: set[int], timeouts: frozenset[int] = frozenset()
) -> StepContext:
    return StepContext(
        step=3,
        current=current,
        enabled=frozenset(enabled),
        timeouts=timeouts,
        pending={},
        thread_names=("main", "a", "b"),
        clock=0.0,
    )


def test_index_zero_never_preempts() -> None:
    """Draw 0 continues the current thread; timeouts come last."""
    choices = [Choice(0, "run"), Choice(1, "run"), Choice(2, "timeout")]
    data = _FixedData([0, 1, 2])
    strategy = HypothesisStrategy(data)
    ctx = _ctx(current=1, enabled={0, 1}, timeouts=frozenset({2}))
    assert strategy.choose(choices, ctx) == Choice(1, "run")
    assert strategy.choose(choices, ctx) == Choice(0, "run")
    assert strategy.choose(choices, ctx) == Choice(2, "timeout")
    assert strategy.draws == 3
    # A single choice draws nothing.
    assert strategy.choose([Choice(0, "run")], ctx) == Choice(0, "run")
    assert strategy.draws == 3
    assert strategy.end_execution(None) is False  # type: ignore[arg-type]


def test_rejects_non_data() -> None:
    """The constructor names what it needs."""
    with pytest.raises(InvalidArgumentType, match=r"hypothesis.strategies.data\(\)"):
        HypothesisStrategy(42)

"""Honest verdicts and the knobs every strategy shares (timeouts, time_budget, scenario ids).

A verdict states what the search established: every interleaving up to a bound
(over watched state, or synchronisation only), cut short by a budget, or a
sample. A bare "exhausted" is never what a user reads.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lockstep
from lockstep import (
    DFSStrategy,
    DporStrategy,
    InvalidArgument,
    PCTStrategy,
    RandomStrategy,
    Verdict,
    _execution,
    explore,
    watch,
)
from lockstep import _explore as explore_module
from lockstep.errors import InvalidArgumentType
from lockstep.strategies import CountingStrategy, DeterminismCheck
from lockstep.strategies.hypothesis import HypothesisStrategy, run_under_hypothesis

threading = lockstep.threading


def critical_sections() -> None:
    lock = threading.Lock()
    box = [0]

    def inc() -> None:
        with lock:
            box[0] += 1

    ts = [lockstep.spawn(inc) for _ in range(2)]
    for t in ts:
        t.join()


class Counter:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.value = 0

    def inc(self) -> None:
        with self.lock:
            self.value += 1


def watched_counter() -> None:
    counter = watch(Counter())
    ts = [lockstep.spawn(counter.inc) for _ in range(2)]
    for t in ts:
        t.join()
    assert counter.value == 2


def _no_bare_exhausted(text: str) -> None:
    assert "exhausted" not in text


def test_unwatched_exhaustive_search_says_synchronisation_only() -> None:
    """DPOR over a program that watches nothing: complete, but only over synchronisation."""
    result = explore(critical_sections, strategy=DporStrategy(), budget=100)
    verdict = result.verdict
    assert verdict.coverage == "complete"
    assert verdict.complete
    assert not verdict.watched
    assert not verdict.sound
    assert "explored every interleaving over synchronisation only" in verdict.describe()
    assert "nothing was watched" in verdict.describe()
    _no_bare_exhausted(result.summary())


def test_watched_exhaustive_search_is_the_strongest_claim() -> None:
    """DPOR over watched, race-free state: no failure, no data race on watched state."""
    result = explore(watched_counter, strategy=DporStrategy(), budget=100)
    verdict = result.verdict
    assert verdict.sound
    assert verdict.describe().startswith(
        "explored every interleaving over synchronisation and watched state in "
    )
    assert verdict.describe().endswith(": no failure, no data race on watched state")
    assert result.summary().startswith(verdict.describe())
    _no_bare_exhausted(result.summary())


def test_a_bound_is_part_of_the_claim() -> None:
    """DFS with its default bound says "with at most 2 preemptions"."""
    verdict = explore(watched_counter, strategy=DFSStrategy(), budget=10_000).verdict
    assert verdict.complete
    assert verdict.preemption_bound == 2
    assert "every interleaving with at most 2 preemptions" in verdict.describe()


def test_races_off_and_declared_races_are_stated() -> None:
    """races=False says races were not checked; declarations are counted."""
    verdict = explore(watched_counter, strategy=DporStrategy(), races=False).verdict
    assert verdict.complete
    assert not verdict.races_checked
    assert "data races not checked" in verdict.describe()

    class Declared(Counter):
        __benign_races__: ClassVar[dict[str, str]] = {"value": "a statistic"}

    def scenario() -> None:
        counter = watch(Declared())
        ts = [lockstep.spawn(counter.inc) for _ in range(2)]
        for t in ts:
            t.join()

    verdict = explore(scenario, strategy=DporStrategy()).verdict
    assert verdict.benign == ("Declared#1.value",)
    assert "1 location declared intentionally racy" in verdict.describe()


def test_sampling_strategies_claim_nothing_about_completeness() -> None:
    """Random and PCT sample; their verdict says so, with the seed."""
    for strategy, name in ((RandomStrategy(4), "random"), (PCTStrategy(4), "pct")):
        verdict = explore(watched_counter, strategy=strategy, budget=7).verdict
        assert verdict.coverage == "sampled"
        assert verdict.describe().startswith(f"sampled 7 schedules with {name} (seed 4), ")
        assert "no completeness claim" in verdict.describe()


@settings(max_examples=1, deadline=None, database=None)
@given(st.data())
def test_hypothesis_one_execution_is_a_sample(data: st.DataObject) -> None:
    """run_under_hypothesis stops after one execution: a sample, not a complete search."""
    result = run_under_hypothesis(watched_counter, data)
    assert result.exhausted  # the strategy wants no more executions...
    assert result.verdict.coverage == "sampled"  # ...which proves nothing


def test_execution_budget_cut_short() -> None:
    """A systematic search stopped by the execution budget says so."""
    verdict = explore(watched_counter, strategy=DFSStrategy(), budget=3).verdict
    assert verdict.coverage == "execution-budget"
    assert "stopped by the execution budget after 3 executions" in verdict.describe()
    assert "no completeness claim" in verdict.describe()


def test_failure_verdict() -> None:
    """A failure: kind and the execution it was found in."""

    def racy() -> None:
        counter = watch(Counter())

        def inc() -> None:
            counter.value += 1

        ts = [lockstep.spawn(inc) for _ in range(2)]
        for t in ts:
            t.join()

    result = explore(racy, strategy=DporStrategy())
    assert result.verdict.coverage == "failed"
    assert result.verdict.describe() == "failed: data-race found in execution 1 of dpor"


def test_wrappers_forward_what_makes_a_search_systematic() -> None:
    """CountingStrategy and DeterminismCheck keep DPOR's completeness claim."""
    for wrapper in (CountingStrategy(DporStrategy()), DeterminismCheck(DporStrategy())):
        assert explore(watched_counter, strategy=wrapper, budget=100).verdict.complete
    counted = explore(watched_counter, strategy=CountingStrategy(DFSStrategy()), budget=10_000)
    assert counted.verdict.preemption_bound == 2


def test_a_verdict_is_built_for_hand_made_results() -> None:
    """ExploreResult without a verdict derives one (tests, older callers)."""
    result = lockstep.ExploreResult(
        executions=3,
        exhausted=False,
        failure=None,
        elapsed=0.1,
        schedules_per_second=30.0,
        steps=10,
        strategy="random",
    )
    assert isinstance(result.verdict, Verdict)
    assert result.verdict.coverage == "sampled"


# --- time budget -----------------------------------------------------------------------------


@pytest.fixture
def fake_clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """A deterministic clock for time_budget: each reading advances it by one second."""
    now = [0.0]

    def tick() -> float:
        now[0] += 1.0
        return now[0]

    monkeypatch.setattr(explore_module, "_now", tick)
    return now


def test_time_budget_stops_cleanly_and_says_so(fake_clock: list[float]) -> None:
    """A clock advancing 1 s per reading: the start reads 1 (deadline 4.5); the checks
    before executions 2, 3, 4 and 5 read 2, 3, 4 and 5, so the fifth never starts."""
    result = explore(watched_counter, strategy=RandomStrategy(0), budget=100, time_budget=3.5)
    assert result.executions == 4
    assert result.failure is None
    assert result.verdict.coverage == "time-budget"
    assert "stopped by the time budget (3.5 s) after 4 executions" in result.verdict.describe()
    dfs = explore(watched_counter, strategy=DFSStrategy(), budget=100, time_budget=2.5)
    assert dfs.verdict.coverage == "time-budget"
    assert not dfs.exhausted


def test_time_budget_does_not_hide_completion(fake_clock: list[float]) -> None:
    """A search that completes within the budget is complete."""
    result = explore(watched_counter, strategy=DporStrategy(), time_budget=1000.0)
    assert result.verdict.complete


@pytest.mark.parametrize("bad", [0, -1, float("inf"), float("nan"), "5", True])
def test_time_budget_is_validated(bad: Any) -> None:
    """A time budget is a positive, finite number of seconds."""
    with pytest.raises(InvalidArgument, match="time_budget"):
        explore(watched_counter, time_budget=bad)


# --- timeouts ----------------------------------------------------------------------------------


def timed_acquire(outcomes: list[bool]) -> Callable[[], None]:
    def scenario() -> None:
        lock = threading.Lock()

        def holder() -> None:
            with lock:
                lockstep.checkpoint("holding")

        def impatient() -> None:
            got = lock.acquire(timeout=0.5)
            outcomes.append(got)
            if got:
                lock.release()

        ts = [lockstep.spawn(holder), lockstep.spawn(impatient)]
        for t in ts:
            t.join()

    return scenario


STRATEGIES: dict[str, Callable[[bool], lockstep.Strategy]] = {
    "random": lambda timeouts: RandomStrategy(0, timeouts=timeouts, timeout_probability=0.9),
    "pct": lambda timeouts: PCTStrategy(0, timeouts=timeouts, timeout_probability=0.9),
    "dfs": lambda timeouts: DFSStrategy(preemption_bound=None, timeouts=timeouts),
    "dpor": lambda timeouts: DporStrategy(timeouts=timeouts),
}


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_timeouts_knob(name: str) -> None:
    """timeouts=False: the timed acquire never times out; True: some execution does."""
    without: list[bool] = []
    explore(timed_acquire(without), strategy=STRATEGIES[name](False), budget=60)
    assert without
    assert all(without)
    with_timeouts: list[bool] = []
    explore(timed_acquire(with_timeouts), strategy=STRATEGIES[name](True), budget=60)
    assert False in with_timeouts


@settings(max_examples=30, deadline=None, database=None)
@given(st.data())
def test_hypothesis_timeouts_knob(data: st.DataObject) -> None:
    """HypothesisStrategy(timeouts=False) never draws a timeout while a thread can run."""
    outcomes: list[bool] = []
    run_under_hypothesis(timed_acquire(outcomes), data, timeouts=False)
    assert all(outcomes)


@pytest.mark.parametrize(
    "make",
    [
        lambda: RandomStrategy(0, timeouts="no"),
        lambda: PCTStrategy(0, timeouts=1),
        lambda: DFSStrategy(timeouts=None),
        lambda: DporStrategy(timeouts="yes"),
        lambda: HypothesisStrategy(types.SimpleNamespace(draw=lambda s: 0), timeouts=0),
    ],
)
def test_timeouts_must_be_a_bool(make: Callable[[], object]) -> None:
    """Every strategy validates the knob the same way."""
    with pytest.raises(InvalidArgumentType, match="timeouts must be True or False"):
        make()


def test_make_strategy_passes_timeouts() -> None:
    """The registry (CLI, plugin) accepts the knob for every strategy."""
    from lockstep.strategies import make_strategy

    for name in ("random", "pct", "dfs", "dpor"):
        assert make_strategy(name, timeouts=False).timeouts is False  # type: ignore[attr-defined]


# --- scenario ids ------------------------------------------------------------------------------


def test_a_closure_failure_says_how_to_make_it_replayable_by_file() -> None:
    """A closure has no importable id; the report says to pass scenario_id=."""

    def scenario() -> None:
        raise AssertionError("boom")

    failure = explore(scenario, budget=1).failure
    assert failure is not None
    assert failure.schedule.scenario_id is None
    assert failure.replay_command is None
    assert "scenario_id='module:qualname'" in str(failure)
    named = explore(scenario, budget=1, scenario_id="tests.example:scenario").failure
    assert named is not None
    assert named.replay_command is not None


def test_a_script_scenario_is_named_by_its_importable_module(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """`python script.py` (from any directory) and `python -m pkg.mod` give replayable ids."""

    def scenario() -> None:
        pass

    scenario.__module__ = "__main__"
    scenario.__qualname__ = "scenario"
    script = types.ModuleType("__main__")
    script.__file__ = str(tmp_path / "my_script.py")
    script.__spec__ = None
    monkeypatch.setitem(sys.modules, "__main__", script)
    monkeypatch.chdir(tmp_path)
    assert _execution.scenario_id_of(scenario) == "my_script:scenario"
    monkeypatch.chdir("/")  # the schedule records the script's directory instead
    assert _execution.scenario_id_of(scenario) == "my_script:scenario"
    script.__file__ = str(tmp_path / "os.py")  # would import the standard library's os
    assert _execution.scenario_id_of(scenario) is None
    script.__file__ = str(tmp_path / "my-script.py")  # not an importable name
    assert _execution.scenario_id_of(scenario) is None
    script.__spec__ = types.SimpleNamespace(name="pkg.runner")  # type: ignore[assignment]
    assert _execution.scenario_id_of(scenario) == "pkg.runner:scenario"


class _Polled:
    """A flag declared intentionally racy (a polled flag)."""

    __benign_races__: ClassVar[dict[str, str]] = {"flag": "polled flag"}

    def __init__(self) -> None:
        self.flag = False
        self.lock = threading.Lock()


def _flag_read_under_a_lock(writer_locks: bool) -> Callable[[], None]:
    """A reader reads the declared flag holding the lock; the writer sets it holding the
    lock too (both orders are fine), or holding nothing (then the reader seeing the
    flag is the failure)."""

    def scenario() -> None:
        polled = watch(_Polled())

        def reader() -> None:
            with polled.lock:
                seen = polled.flag
            assert writer_locks or not seen, "the reader saw a flag set without the lock"

        def writer() -> None:
            if writer_locks:
                with polled.lock:
                    polled.flag = True
                return
            polled.flag = True

        threads = [lockstep.spawn(reader), lockstep.spawn(writer)]
        for thread in threads:
            thread.join()

    return scenario


def test_dpor_claims_no_completeness_for_a_declared_location_written_without_its_lock() -> None:
    """A declared location read holding a lock is not a switch point (its reads are
    assumed ordered with its writes by that lock); written holding no lock, that
    assumption fails, DPOR never reorders the read with the write, and the verdict
    must not read as a proof: it is "partial" and names the location."""
    result = explore(
        _flag_read_under_a_lock(writer_locks=False),
        strategy=DporStrategy(),
        budget=200,
        progress=False,
    )
    assert result.failure is None  # DPOR alone misses the reachable failure ...
    verdict = result.verdict
    assert verdict.coverage == "partial"  # ... and says so
    assert not verdict.complete
    assert not verdict.sound
    assert verdict.unordered == ("_Polled#1.flag",)
    assert "except the orders of _Polled#1.flag" in verdict.describe()
    # The searches that preempt at the lock steps find it.
    for strategy in (DFSStrategy(), RandomStrategy(0)):
        found = explore(
            _flag_read_under_a_lock(writer_locks=False),
            strategy=strategy,
            budget=200,
            progress=False,
        )
        assert found.failure is not None


def test_dpor_is_complete_when_the_declared_location_is_written_under_its_lock() -> None:
    """The control: the write holds the reader's lock, so the lock steps order them and
    DPOR reorders those: nothing unordered, the verdict claims completeness."""
    result = explore(
        _flag_read_under_a_lock(writer_locks=True),
        strategy=DporStrategy(),
        budget=200,
        progress=False,
    )
    assert result.failure is None
    assert result.verdict.coverage == "complete"
    assert result.verdict.unordered == ()

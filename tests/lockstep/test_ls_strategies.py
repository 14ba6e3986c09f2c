"""Strategies: exhaustive DFS, preemption bounds, determinism check, metrics, registry."""

from __future__ import annotations

import itertools
import random

import pytest

import lockstep
from lockstep import DFSStrategy, PCTStrategy, RandomStrategy, explore, spawn
from lockstep.strategies import (
    Choice,
    CountingStrategy,
    DeterminismCheck,
    StepContext,
    make_strategy,
)
from lockstep.strategies._replay import PrefixStrategy


def _two_by_two(orders):
    def scenario():
        out = []

        def worker(name):
            out.append(f"{name}1")
            lockstep.checkpoint("mid", resource="out")
            out.append(f"{name}2")
            lockstep.checkpoint("after", resource="out")

        a = spawn(worker, "a")
        b = spawn(worker, "b")
        a.join()
        b.join()
        orders.add(tuple(out))

    return scenario


def _interleavings():
    result = set()
    for positions in itertools.combinations(range(4), 2):
        order = []
        a = iter(["a1", "a2"])
        b = iter(["b1", "b2"])
        for i in range(4):
            order.append(next(a) if i in positions else next(b))
        result.add(tuple(order))
    return result


def test_dfs_unbounded_sees_every_interleaving_and_exhausts():
    """Unbounded DFS reaches all 6 orders of two 2-step threads and reports exhaustion."""
    orders = set()
    result = explore(
        _two_by_two(orders), strategy=DFSStrategy(preemption_bound=None), budget=100_000
    )
    assert result.failure is None
    assert result.exhausted
    assert orders == _interleavings()
    assert len(orders) == 6


def test_dfs_preemption_bound_zero_only_switches_at_blocking_points():
    """With no preemptions allowed, each thread runs to completion once started."""
    orders = set()
    result = explore(_two_by_two(orders), strategy=DFSStrategy(preemption_bound=0), budget=1000)
    assert result.exhausted
    assert orders == {("a1", "a2", "b1", "b2"), ("b1", "b2", "a1", "a2")}


def test_dfs_bound_grows_the_space_monotonically():
    """More preemptions allowed: at least as many executions (3, 16, 56; the unbounded
    search's 251 are test_dfs_unbounded_sees_every_interleaving_and_exhausts')."""
    counts = []
    for bound in (0, 1, 2):
        strategy = DFSStrategy(preemption_bound=bound)
        explore(_two_by_two(set()), strategy=strategy, budget=100_000)
        counts.append(strategy.executions)
    assert counts == sorted(counts)
    assert counts[0] < counts[-1]


def test_determinism_check_passes_deterministic_scenarios():
    """A deterministic scenario passes; each schedule runs twice."""
    result = explore(_two_by_two(set()), strategy=DeterminismCheck(RandomStrategy(0)), budget=20)
    assert result.failure is None
    assert result.executions == 20


def test_determinism_check_reports_nondeterminism():
    """State leaking between executions changes the choice sets: "nondeterminism"."""
    calls = itertools.count()

    def scenario():
        if next(calls) % 2:
            spawn(lambda: None).join()
        lockstep.checkpoint("x")

    result = explore(scenario, strategy=DeterminismCheck(RandomStrategy(0)), budget=10)
    assert result.failure is not None
    assert result.failure.kind == "nondeterminism"
    assert "re-run" in result.failure.message


def test_dfs_reports_nondeterminism():
    """DFS replaying its prefix notices a different choice set."""
    calls = itertools.count()

    def scenario():
        threads = [spawn(lockstep.checkpoint, "t") for _ in range(1 + next(calls) % 2)]
        lockstep.checkpoint("main")
        for t in threads:
            t.join()

    result = explore(scenario, strategy=DFSStrategy(), budget=50)
    assert result.failure is not None
    assert result.failure.kind == "nondeterminism"


def test_dpor_replays_operations_whose_labels_come_from_global_state():
    """A thread named from a process-global counter (as ``ThreadPoolExecutor`` names
    its workers) is the same operation in every execution: DPOR completes."""
    pools = itertools.count()

    def scenario():
        pool = next(pools)
        lock = lockstep.threading.Lock()
        out = []

        def work(i):
            with lock:
                out.append(i)

        threads = [spawn(work, i, name=f"pool-{pool}_{i}") for i in range(2)]
        for t in threads:
            t.join()

    result = explore(scenario, strategy=lockstep.DporStrategy(), budget=50)
    assert result.failure is None, result.failure
    assert result.verdict.complete
    assert result.executions > 1


def test_dpor_nondeterminism_names_the_operation_that_changed():
    """A replayed prefix that meets another operation says which, not just thread ids."""
    calls = itertools.count()

    def scenario():
        resource = f"cell-{next(calls)}"

        def step():
            lockstep.checkpoint("touch", resource=resource)
            lockstep.checkpoint("again", resource=resource)

        threads = [spawn(step) for _ in range(2)]
        for t in threads:
            t.join()

    result = explore(scenario, strategy=lockstep.DporStrategy(), budget=50)
    assert result.failure is not None
    assert result.failure.kind == "nondeterminism"
    assert "cell-0" in result.failure.message
    assert "cell-1" in result.failure.message


def test_counting_strategy_metrics():
    """The counting wrapper totals executions, steps and preemptions."""
    counting = CountingStrategy(RandomStrategy(1))
    result = explore(_two_by_two(set()), strategy=counting, budget=7)
    metrics = counting.metrics()
    assert metrics.executions == 7
    assert metrics.steps == result.steps
    assert metrics.max_threads == 3
    assert metrics.failures == 0


def test_pct_finds_an_ordering_bug_with_depth_one_quickly():
    """An ordering bug (d=1) is found within a few PCT executions."""

    def scenario():
        box = []
        t = spawn(box.append, "child")
        lockstep.checkpoint("before-append")
        box.append("main")
        t.join()
        assert box[0] == "main"

    result = explore(scenario, strategy=PCTStrategy(seed=0, depth=1), budget=50)
    assert result.failure is not None
    assert result.pct_bound is not None


def test_registry_and_errors():
    """make_strategy knows the names; unknown names and bad options are rejected."""
    assert isinstance(make_strategy("random", seed=3), RandomStrategy)
    assert isinstance(make_strategy("pct", seed=3, depth=2), PCTStrategy)
    assert isinstance(make_strategy("dfs", preemption_bound=1), DFSStrategy)
    with pytest.raises(lockstep.InvalidArgument, match="unknown strategy 'bogus'"):
        make_strategy("bogus")
    with pytest.raises(lockstep.InvalidArgument, match="does not accept the option"):
        make_strategy("dfs", depth=3)
    with pytest.raises(lockstep.InvalidArgument, match="depth must be >= 1"):
        PCTStrategy(depth=0)
    with pytest.raises(lockstep.InvalidArgument, match="preemption_bound"):
        DFSStrategy(preemption_bound=-1)


def test_strategy_returning_a_foreign_choice_is_an_error():
    """A strategy must return one of the offered choices."""

    class Bad(PrefixStrategy):
        def choose(self, choices, step):
            return lockstep.strategies.Choice(99)

    with pytest.raises(lockstep.LockstepError, match="not one of the choices"):
        explore(lambda: None, strategy=Bad(()), budget=1)

    class LateBad(PrefixStrategy):
        def choose(self, choices, step):
            if step.step < 2:
                return super().choose(choices, step)
            raise KeyError("strategy bug")

    def scenario():
        for _ in range(3):
            lockstep.checkpoint("x")

    # raised inside a logical thread, still reported as the strategy's error
    with pytest.raises(KeyError, match="strategy bug"):
        explore(scenario, strategy=LateBad(()), budget=1)


@pytest.mark.parametrize("seed", [0, 1, 12345])
def test_random_strategy_draws_what_random_choice_draws(seed):
    """RandomStrategy inlines random.Random.choice's index draw (it runs at most
    steps): it must pick what choice() picks from the same generator state, so seeds
    keep finding the same schedules."""
    strategy = RandomStrategy(seed)
    reference = random.Random(seed)
    for n in [2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 33] * 40:
        choices = [Choice.of(i, "run") for i in range(n)]
        ctx = StepContext(0, None, frozenset(range(n)), frozenset(), {}, (), 0.0, False)
        assert strategy.choose(choices, ctx) is reference.choice(choices)
        assert strategy._below(n) == reference.choice(range(n))  # the timeout draws
    assert strategy._rng.getstate() == reference.getstate()

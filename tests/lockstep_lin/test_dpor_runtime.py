"""DPOR on the real runtime: execution counts per Mazurkiewicz trace, and bugs found.

Counts (our dependency notion: same resource = conflict; see test_dpor_sim.py):
3 independent threads -> 1 execution; 2 threads x 2 checkpoints on one resource
-> 6 (= C(4,2)); 3 x 2 -> 90 (= 6!/2!^3); critical sections on one lock: 2
threads -> 2 traces, 3 threads -> 3! = 6 traces, each plus one redundant
execution per acquire site (the site is not yet known to be blocking: see
DporStrategy._not_reversible).  Unbounded DFS needs 251 executions for the
2 x 2 case and 298 for two critical sections (every interleaving of every
switch point, thread start/end and joins included).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

import lockstep
from lockstep.strategies._dpor import DporStrategy
from tests.quality import lockstep_bugs

checkpoints = lockstep_bugs.checkpoint_program
critical_sections = lockstep_bugs.critical_section_program


@pytest.mark.parametrize(
    ("scenario", "traces", "redundant"),
    [
        (checkpoints(3, 2, shared=False), 1, 0),
        (checkpoints(2, 2, shared=True), 6, 0),
        (checkpoints(3, 2, shared=True), 90, 0),
        (critical_sections(2), 2, 1),
        (critical_sections(3), 6, 2),
    ],
    ids=["independent", "2x2-shared", "3x2-shared", "2-critical", "3-critical"],
)
def test_one_complete_execution_per_trace(
    scenario: Callable[[], None], traces: int, redundant: int
) -> None:
    """DPOR explores each Mazurkiewicz trace exactly once, then reports exhaustion."""
    strategy = DporStrategy()
    result = lockstep.explore(scenario, strategy=strategy, budget=10_000)
    assert result.ok
    assert result.exhausted
    assert strategy.complete_executions == traces
    assert strategy.blocked_executions == redundant
    assert result.executions == traces + redundant


def test_dfs_needs_many_more_executions() -> None:
    """The same 2 x 2 program under unbounded DFS: every interleaving (251)."""
    dfs = lockstep.DFSStrategy(preemption_bound=None)
    result = lockstep.explore(checkpoints(2, 2, shared=True), strategy=dfs, budget=10_000)
    assert result.exhausted
    assert result.executions == 251


def test_finds_abba_deadlock() -> None:
    """Lock-order inversion is found (the deadlock trace is one of few)."""

    def scenario() -> None:
        a, b = lockstep.threading.Lock(), lockstep.threading.Lock()

        def one() -> None:
            with a, b:
                pass

        def two() -> None:
            with b, a:
                pass

        threads = [lockstep.spawn(one), lockstep.spawn(two)]
        for t in threads:
            t.join()

    result = lockstep.explore(scenario, strategy=DporStrategy(), budget=100)
    assert result.failure is not None
    assert result.failure.kind == "deadlock"


def test_finds_bug_behind_a_lock_timeout() -> None:
    """A branch only reachable when acquire(timeout=...) times out is explored."""

    def scenario() -> None:
        lock = lockstep.threading.Lock()
        state = {"fallback": False}

        def holder() -> None:
            with lock:
                lockstep.checkpoint("working")

        def impatient() -> None:
            if lock.acquire(timeout=1.0):
                lock.release()
            else:
                state["fallback"] = True

        threads = [lockstep.spawn(holder), lockstep.spawn(impatient)]
        for t in threads:
            t.join()
        assert not state["fallback"], "the fallback path ran"

    result = lockstep.explore(scenario, strategy=DporStrategy(), budget=100)
    assert result.failure is not None
    assert "fallback" in result.failure.message


def test_correct_program_is_exhausted_without_failure() -> None:
    """A correct program: the space is exhausted and nothing fails."""
    strategy = DporStrategy()
    result = lockstep.explore(critical_sections(2), strategy=strategy, budget=100)
    assert result.ok
    assert strategy.exhausted


def test_nondeterministic_scenario_is_reported() -> None:
    """A scenario whose choices change between executions (hidden state) is a
    "nondeterminism" failure, not a silently wrong exploration."""
    runs = {"n": 0}

    def scenario() -> None:
        runs["n"] += 1
        workers = 2 if runs["n"] == 1 else 3  # differs on the replay of the prefix

        def worker() -> None:
            lockstep.checkpoint("work", resource="x")

        threads = [lockstep.spawn(worker) for _ in range(workers)]
        for t in threads:
            t.join()

    result = lockstep.explore(scenario, strategy=DporStrategy(), budget=50, shrink=False)
    assert result.failure is not None
    assert result.failure.kind == "nondeterminism"
    assert "not a pure function of its schedule" in result.failure.message


def test_preemption_bound_is_validated_and_respected() -> None:
    """preemption_bound=0 explores only schedules without preemptions."""
    seen: list[int] = []

    class Watch(DporStrategy):
        def end_execution(self, outcome: lockstep.strategies.ExecutionOutcome) -> bool:
            seen.append(sum(step.preemption for step in outcome.steps))
            return super().end_execution(outcome)

    strategy = Watch(preemption_bound=0)
    result = lockstep.explore(checkpoints(2, 2, shared=True), strategy=strategy, budget=100)
    assert result.exhausted
    assert set(seen) == {0}
    assert strategy.complete_executions < 6

"""lockstep finds classic concurrency bugs within a stated budget, with every strategy.

The bugs and budgets live in ``lockstep_bugs.py`` (shared with
``benchmarks.bench_lockstep``), each budget with its probability arithmetic.
Seeds are fixed and Hypothesis is derandomized, so every outcome is deterministic.
"""

from __future__ import annotations

import pytest
from lockstep_bugs import BUGS, STRATEGIES, hunt, two_preemptions

import lockstep
from lockstep._linearizability import HistoryRecorder, check_linearizability
from lockstep.strategies._dpor import DporStrategy

pytestmark = pytest.mark.quality


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("bug", sorted(BUGS))
def test_bug_is_found_within_budget(bug: str, strategy: str) -> None:
    """Each strategy finds each bug within its budget, failing the expected way."""
    spec = BUGS[bug]
    executions, failure = hunt(spec, strategy)
    assert failure is not None, f"{strategy} missed {bug} in {executions} executions"
    assert executions <= spec.budgets[strategy]
    assert failure.kind == spec.expected_kind, failure.message


def test_two_preemption_bug_needs_two_preemptions() -> None:
    """Bounded DFS with one preemption exhausts its space without finding it; with
    two it finds it, in an execution with exactly two preemptions."""
    one = lockstep.explore(
        two_preemptions, strategy=lockstep.DFSStrategy(preemption_bound=1), budget=20_000
    )
    assert one.exhausted
    assert one.ok
    found = lockstep.explore(
        two_preemptions,
        strategy=lockstep.DFSStrategy(preemption_bound=2),
        budget=20_000,
        shrink=False,
    )
    assert found.failure is not None
    assert found.failure.trace.preemptions == 2


def test_dpor_exhausts_the_fixed_inventory() -> None:
    """DPOR proves the fixed check-and-take (one critical section) correct: it explores
    every trace and finds nothing."""

    def fixed() -> None:
        lock = lockstep.threading.Lock()
        stock = {"widget": 1}

        def buy() -> None:
            with lock:
                if stock["widget"] >= 1:
                    stock["widget"] -= 1

        threads = [lockstep.spawn(buy) for _ in range(2)]
        for t in threads:
            t.join()
        assert stock["widget"] == 0

    strategy = DporStrategy()
    result = lockstep.explore(fixed, strategy=strategy, budget=1000)
    assert result.ok
    assert result.exhausted
    assert strategy.complete_executions == 2


def test_linearizability_checker_catches_a_racy_register() -> None:
    """A counter with an unlocked read-modify-write, recorded inside lockstep runs:
    some explored history is not linearizable against a sequential counter."""
    verdicts: list[str] = []

    def scenario() -> None:
        recorder = HistoryRecorder()
        cell = {"n": 0}

        def increment(k: int) -> None:
            handle = recorder.invoke(k, "inc")
            value = cell["n"]
            lockstep.checkpoint("read", resource="n")
            cell["n"] = value + 1
            recorder.respond(handle, value + 1)

        threads = [lockstep.spawn(increment, k) for k in range(2)]
        for t in threads:
            t.join()
        result = check_linearizability(
            recorder, lambda state, _inp, out: (out == state + 1, state + 1), initial=0
        )
        verdicts.append(result.verdict)
        assert result.ok, result.explanation

    outcome = lockstep.explore(scenario, strategy=DporStrategy(), budget=50, shrink=False)
    assert outcome.failure is not None
    assert "Not linearizable" in outcome.failure.message
    assert verdicts[-1] == "illegal"
    assert "ok" in verdicts  # the serial schedules were judged linearizable first

"""DPOR with iterative preemption bounding: shallow bugs first, the same final verdict.

Unbounded DPOR is depth-first: it reorders the late steps of its first trace before
it comes back to the early ones, so a bug that needs one preemption early in the
run can wait behind hundreds of executions (a cache that computes outside its lock:
cachetools' pattern). ``DporStrategy(preemption_bound="iterative")`` searches with
bounds 0, 1, 2, ... in turn and is exhausted, with the unbounded search's claim,
once a pass ends in which the bound cut nothing.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

import lockstep
from lockstep import DporStrategy, explore, watch
from lockstep.strategies import ExecutionOutcome

threading = lockstep.threading


def _cache(
    loads: int, *, computes_under_lock: bool = False, threads: int = 3
) -> Callable[[], None]:
    """``threads`` threads (three by default) load two keys through a cache that computes
    outside its lock (inside it with ``computes_under_lock``)."""

    def scenario() -> None:
        lock = threading.Lock()
        cache: dict[int, int] = {}
        computed = watch([])

        def load(key: int) -> int:
            with lock:
                if key in cache:
                    return cache[key]
                if computes_under_lock:
                    computed.append(key)
            if not computes_under_lock:
                computed.append(key)  # two threads missing together race here
            with lock:
                return cache.setdefault(key, key)

        def worker(key: int) -> None:
            for _ in range(loads):
                load(key)

        workers = [lockstep.spawn(worker, i % 2) for i in range(threads)]
        for t in workers:
            t.join()

    return scenario


def test_iterative_bounding_finds_a_one_preemption_race_far_sooner() -> None:
    """Two loads per thread: the unbounded search needs 63 executions, the iterative one
    10 (three loads: 1,263 against 12, 10 s on the thread backend, past the timeout on a
    loaded machine; the ratio is the point, not the size)."""
    unbounded = explore(_cache(2), strategy=DporStrategy(), budget=5000, shrink=False)
    iterative = DporStrategy(preemption_bound="iterative")
    found = explore(_cache(2), strategy=iterative, budget=5000, shrink=False)
    assert found.failure is not None
    assert found.failure.kind == "data-race"
    assert iterative.passes == 2  # bound 0 cannot reach it, bound 1 does
    assert unbounded.failure is not None  # the unbounded search gets there too...
    assert found.executions * 4 <= unbounded.executions  # ...much later


def test_an_iterative_search_ends_with_the_unbounded_claim() -> None:
    """Two threads (25 executions in 5 passes; three threads: 314, 10 s on 3.13t's thread
    backend, past the timeout on a loaded machine)."""
    iterative = DporStrategy(preemption_bound="iterative")
    result = explore(
        _cache(1, computes_under_lock=True, threads=2), strategy=iterative, budget=5000
    )
    assert result.failure is None
    assert result.exhausted
    assert result.verdict.coverage == "complete"
    assert result.verdict.preemption_bound is None  # every trace, no bound
    assert iterative.preemption_bound is None
    assert iterative.passes >= 2
    unbounded = DporStrategy()
    again = explore(_cache(1, computes_under_lock=True, threads=2), strategy=unbounded, budget=5000)
    assert again.exhausted
    # The earlier passes are the price; the last one is the unbounded search itself.
    assert unbounded.executions < iterative.executions
    assert _last_pass(_cache(1, computes_under_lock=True, threads=2)) == unbounded.executions


def _last_pass(scenario: Callable[[], None]) -> int:
    """Executions of an exhausted iterative search's last pass."""
    strategy = DporStrategy(preemption_bound="iterative")
    end_execution = strategy.end_execution
    started = [0]

    def counting(outcome: ExecutionOutcome) -> bool:
        passes = strategy.passes
        more = end_execution(outcome)
        if more and strategy.passes != passes:
            started[0] = strategy.executions
        return more

    strategy.end_execution = counting  # type: ignore[method-assign]
    assert explore(scenario, strategy=strategy, budget=5000).exhausted
    return strategy.executions - started[0]


def test_a_program_that_never_preempts_ends_after_one_pass() -> None:
    def scenario() -> None:
        box = watch([])
        t = lockstep.spawn(box.append, 1)
        t.join()
        box.append(2)

    iterative = DporStrategy(preemption_bound="iterative")
    result = explore(scenario, strategy=iterative, budget=100)
    assert result.exhausted
    assert iterative.passes == 1


@pytest.mark.parametrize("bad", ["deep", "Iterative", ""])
def test_an_unknown_bound_name_is_refused(bad: str) -> None:
    with pytest.raises(lockstep.InvalidArgument, match='"iterative"'):
        DporStrategy(preemption_bound=bad)  # type: ignore[arg-type]

"""explore(keep_going=True): the search goes on after its first failure, and reports the
first failure of every distinct kind and label it met, first one first."""

from __future__ import annotations

import lockstep


def two_ways() -> None:
    """Fails one way when the first thread finishes first, another way otherwise."""
    order: list[str] = []

    def worker(name: str) -> None:
        lockstep.checkpoint("before", resource="order")
        order.append(name)

    threads = [lockstep.spawn(worker, "a"), lockstep.spawn(worker, "b")]
    for thread in threads:
        thread.join()
    if order[0] == "a":
        raise KeyError("a first")
    raise ValueError("b first")


def test_without_keep_going_the_first_failure_hides_the_other() -> None:
    """The default stops at the first failure: only one way is reported."""
    result = lockstep.explore(two_ways, strategy=lockstep.RandomStrategy(seed=1), budget=40)
    assert result.failure is not None
    assert len(result.failures) == 1
    assert result.executions < 40


def test_keep_going_reports_every_distinct_failure_first_one_first() -> None:
    """Both exception types, the first found first (and shrunk); the budget is spent."""
    result = lockstep.explore(
        two_ways, strategy=lockstep.RandomStrategy(seed=1), budget=40, keep_going=True
    )
    assert result.failure is not None
    kinds = [f.signature for f in result.failures]
    assert kinds[0] == result.failure.signature
    assert sorted(k[1] for k in kinds) == ["KeyError", "ValueError"]
    assert result.executions == 40
    assert all(f.replay_command for f in result.failures)


def test_failed_at_is_the_execution_that_found_the_failure() -> None:
    """With keep_going the search runs its whole budget: `executions` is the budget, and
    `failed_at` the index of the execution that found `failure` (the one a stopping
    search ends at, with the same strategy and seed)."""
    stopping = lockstep.explore(two_ways, strategy=lockstep.RandomStrategy(seed=1), budget=40)
    going = lockstep.explore(
        two_ways, strategy=lockstep.RandomStrategy(seed=1), budget=40, keep_going=True
    )
    assert stopping.failed_at == stopping.executions
    assert going.failed_at == stopping.executions < going.executions == 40


def test_failed_at_is_none_without_a_failure() -> None:
    result = lockstep.explore(lambda: None, budget=3)
    assert result.failure is None
    assert result.failed_at is None

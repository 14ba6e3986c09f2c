"""``heapq`` on a watched list is seen in patched modules.

``heapq``'s functions are C code that change a list in place without calling its
methods; a patched module's ``heapq`` (and the names imported from it) are swapped for
stand-ins that record the write first. Without the stand-ins DPOR certifies the
unlocked push ("every interleaving ... no race") and the race detector is silent.
"""

from __future__ import annotations

import heapq

import pytest
from samples import heap_module
from samples.heap_module import Scheduler

import lockstep
from lockstep import DporStrategy, RandomStrategy, explore, watch
from lockstep._memory import _heapq as ls_heapq

PATCH = ["samples.heap_module"]


def _two_submitters(locked: bool) -> None:
    scheduler = watch(Scheduler())
    submit = scheduler.submit_locked if locked else scheduler.submit
    threads = [lockstep.spawn(submit, p, f"job{p}") for p in (2, 1)]
    for thread in threads:
        thread.join()
    assert sorted(scheduler.jobs) == [(1, "job1"), (2, "job2")]


def _unlocked() -> None:
    _two_submitters(locked=False)


def _locked() -> None:
    _two_submitters(locked=True)


@pytest.mark.parametrize(
    "strategy", [DporStrategy(), RandomStrategy(seed=0)], ids=["dpor", "random"]
)
def test_an_unlocked_heappush_is_a_data_race(strategy: lockstep.Strategy) -> None:
    result = explore(_unlocked, strategy=strategy, budget=100, patch=PATCH, shrink=False)
    assert result.failure is not None, result.summary()
    assert result.failure.kind == "data-race"
    race = result.failure.race
    assert race is not None
    assert race.location.endswith(".jobs")
    assert {race.first.operation, race.second.operation} == {"heappush"}
    assert race.first.code.endswith("heap_module.py:18")


def test_heap_operations_under_one_lock_are_race_free_and_exhaust() -> None:
    result = explore(_locked, strategy=DporStrategy(), budget=200, patch=PATCH)
    assert result.failure is None, result.failure
    assert result.exhausted


def test_a_push_racing_a_locked_pop_is_a_data_race() -> None:
    def scenario() -> None:
        scheduler = watch(Scheduler())
        scheduler.jobs.append((0, "first"))
        taker = lockstep.spawn(scheduler.take)
        scheduler.submit(1, "second")
        taker.join()

    result = explore(scenario, strategy=DporStrategy(), budget=100, patch=PATCH, shrink=False)
    assert result.failure is not None, result.summary()
    race = result.failure.race
    assert result.failure.kind == "data-race"
    assert race is not None
    assert {race.first.operation, race.second.operation} == {"heappush", "heappop"}


def test_patching_swaps_the_module_and_the_imported_names_and_restores_them() -> None:
    with lockstep.patched(heap_module):
        assert heap_module.heapq is ls_heapq
        assert heap_module.heappop is ls_heapq.heappop
        assert heap_module.heappop is not heapq.heappop
    assert heap_module.heapq is heapq
    assert heap_module.heappop is heapq.heappop


def test_the_stand_ins_behave_as_heapq_outside_a_run() -> None:
    heap: list[int] = []
    for value in (5, 1, 4, 2):
        ls_heapq.heappush(heap, value)
    assert heap[0] == 1
    assert ls_heapq.heappushpop(heap, 0) == 0
    assert ls_heapq.heapreplace(heap, 3) == 1
    assert [ls_heapq.heappop(heap) for _ in range(len(heap))] == [2, 3, 4, 5]
    data = [3, 1, 2]
    ls_heapq.heapify(data)
    assert data[0] == 1
    assert ls_heapq.nsmallest(2, [3, 1, 2]) == [1, 2]  # the real function, through __getattr__
    assert ls_heapq.heappush.__name__ == "heappush"


def test_patching_heapq_itself_is_refused() -> None:
    with (
        pytest.raises(lockstep.InvalidArgument, match="refusing to patch 'heapq'"),
        lockstep.patched("heapq"),
    ):
        pass

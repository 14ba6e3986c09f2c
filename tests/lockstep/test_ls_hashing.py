"""Threads and primitives created in a run hash alike in every execution.

The default hash of an object comes from its address, which differs from one
execution to the next. Code that keeps threads or locks in a set and iterates it
(``concurrent.futures.ThreadPoolExecutor`` joins ``self._threads``, a set, at
shutdown) then behaved differently after the same choices, and DFS and DPOR reported
"nondeterminism" for a deterministic program. Objects are kept alive across
executions here so that each execution's objects sit at new addresses.
"""

from __future__ import annotations

import concurrent.futures
from typing import Any

import pytest

import lockstep
import lockstep.threading as ls_threading
from lockstep import DFSStrategy, DporStrategy, RandomStrategy, explore
from lockstep.strategies import DeterminismCheck

_FACTORIES = {
    "Thread": lambda: ls_threading.Thread(target=lambda: None),
    "Lock": ls_threading.Lock,
    "RLock": ls_threading.RLock,
    "Condition": ls_threading.Condition,
    "Event": ls_threading.Event,
    "Semaphore": ls_threading.Semaphore,
    "BoundedSemaphore": ls_threading.BoundedSemaphore,
}


def test_hashes_and_set_order_are_the_same_in_every_execution() -> None:
    kept: list[Any] = []
    seen: list[tuple[Any, ...]] = []

    def scenario() -> None:
        made = [(name, make()) for name, make in _FACTORIES.items() for _ in range(3)]
        kept.append(made)  # alive: the next execution's objects get other addresses
        by_object = {id(obj): name for name, obj in made}
        order = tuple(by_object[id(obj)] for obj in {obj for _, obj in made})
        seen.append((tuple(hash(obj) for _, obj in made), order))

    result = explore(scenario, strategy=RandomStrategy(seed=0), budget=5)
    assert result.failure is None
    assert len(seen) == 5
    assert all(entry == seen[0] for entry in seen), seen
    # Equality stays identity: distinct objects never compare equal.
    first = kept[0]
    assert len({obj for _, obj in first}) == len(first)


def test_objects_made_outside_a_run_keep_the_default_hash() -> None:
    for make in _FACTORIES.values():
        obj = make()
        assert hash(obj) == object.__hash__(obj)


def _pool_scenario() -> None:
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = [pool.submit(pow, 2, n) for n in range(2)]
        assert [f.result() for f in futures] == [1, 2]


_POOL_MODULES = ["concurrent.futures.thread", "concurrent.futures._base"]


def test_a_thread_pool_is_deterministic_under_dfs_and_dpor() -> None:
    """The executor joins its workers in the iteration order of a set of threads."""
    for strategy in (DFSStrategy(), DporStrategy()):
        result = explore(
            _pool_scenario,
            strategy=strategy,
            budget=40,
            patch=_POOL_MODULES,
            scenario_id=f"{__name__}:_pool_scenario",
        )
        assert result.failure is None, result.failure
        assert result.executions == 40


@pytest.mark.parametrize(
    "make",
    [DFSStrategy, DporStrategy, lambda: DeterminismCheck(RandomStrategy(seed=0))],
    ids=["dfs", "dpor", "determinism-check"],
)
def test_a_nondeterminism_report_names_the_usual_causes(make: Any) -> None:
    """State kept from an earlier execution changes the threads: every strategy that
    checks determinism says so, and says what usually causes it and what to do."""
    runs = [0]

    def scenario() -> None:
        runs[0] += 1
        lock = ls_threading.Lock()

        def worker() -> None:
            with lock:
                pass

        threads = [lockstep.spawn(worker) for _ in range(1 + runs[0] % 2)]
        for thread in threads:
            thread.join()

    result = explore(scenario, strategy=make(), budget=20, shrink=False)
    assert result.failure is not None
    assert result.failure.kind == "nondeterminism"
    message = result.failure.message
    assert "not a pure function of its schedule" in message
    assert "set of objects hashed by id()" in message
    assert "Random and PCT search do not need a deterministic scenario" in message

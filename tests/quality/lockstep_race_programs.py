"""Race programs on plain Python state, watched or not: the catalogue that
``test_lockstep_races.py`` and ``benchmarks.bench_lockstep`` share.

Each program races on a dict or an attribute with no controlled primitive
around the racing accesses (or with two *different* locks). ``make(watched)``
builds the scenario with its state passed through ``lockstep.watch`` or left
plain; unwatched, the only switch points are the lock operations and thread
starts/joins, which is what made DPOR report a false "exhausted" before watch
existed. Each has a race-free control: the same program with one lock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import attrs

import lockstep

_T = TypeVar("_T")


def _maybe(watched: bool, value: _T) -> _T:
    return lockstep.watch(value) if watched else value


def split_lock(watched: bool, *, fixed: bool = False) -> Callable[[], None]:
    """The issue's 25-line program (upstream B1 in miniature): remove disposes of
    X's lock while an add waits on it, so a second add creates a new lock and the
    two adds run under different locks: two loads. ``fixed``: one lock for all."""

    def scenario() -> None:
        threading = lockstep.threading
        state = threading.Lock()
        locks: dict[str, Any] = _maybe(watched, {})
        models: dict[str, str] = _maybe(watched, {"X": "old"})
        loads: list[int] = []
        single = threading.Lock()

        def get_lock() -> Any:
            if fixed:
                return single
            with state:
                if "X" not in locks:
                    locks["X"] = threading.Lock()
                return locks["X"]

        def remove() -> None:
            with get_lock():
                models.pop("X", None)
                with state:
                    locks.pop("X", None)  # disposes the lock while a waiter holds the old one

        def add() -> None:
            with get_lock():
                if "X" not in models:
                    loads.append(1)
                    models["X"] = "new"

        threads = [lockstep.spawn(remove), lockstep.spawn(add), lockstep.spawn(add)]
        for t in threads:
            t.join()
        assert len(loads) <= 1, f"X loaded {len(loads)} times"

    return scenario


def unlocked_check(watched: bool, *, fixed: bool = False) -> Callable[[], None]:
    """``'k' in d`` racing ``d['k'] = 1``: both threads see k missing and both create."""

    def scenario() -> None:
        table: dict[str, int] = _maybe(watched, {})
        lock = lockstep.threading.Lock()
        created: list[int] = []

        def get_or_create(n: int) -> None:
            if fixed:
                lock.acquire()
            try:
                if "k" not in table:
                    created.append(n)
                    table["k"] = n
            finally:
                if fixed:
                    lock.release()

        threads = [lockstep.spawn(get_or_create, n) for n in range(2)]
        for t in threads:
            t.join()
        assert len(created) == 1, f"created by {created}"

    return scenario


class Counter:
    """A counter object whose ``value`` two threads increment."""

    def __init__(self) -> None:
        self.value = 0
        self.lock = lockstep.threading.Lock()


def lost_update(watched: bool, *, fixed: bool = False) -> Callable[[], None]:
    """``self.value += 1`` in two threads: read, read, write, write loses one."""

    def scenario() -> None:
        counter = _maybe(watched, Counter())

        def increment() -> None:
            if fixed:
                with counter.lock:
                    counter.value += 1
            else:
                counter.value += 1

        threads = [lockstep.spawn(increment) for _ in range(2)]
        for t in threads:
            t.join()
        assert counter.value == 2, f"lost an update: {counter.value}"

    return scenario


@attrs.frozen
class RaceProgram:
    name: str
    make: Callable[..., Callable[[], None]]


PROGRAMS: dict[str, RaceProgram] = {
    p.name: p
    for p in (
        RaceProgram("split_lock", split_lock),
        RaceProgram("unlocked_check", unlocked_check),
        RaceProgram("lost_update", lost_update),
    )
}


def strategy(name: str, seed: int = 0) -> lockstep.Strategy:
    """A fresh strategy by name."""
    if name == "dpor":
        return lockstep.DporStrategy()
    if name == "dfs":
        return lockstep.DFSStrategy(preemption_bound=2)
    if name == "random":
        return lockstep.RandomStrategy(seed)
    if name == "pct":
        return lockstep.PCTStrategy(seed, depth=2)
    raise ValueError(name)


def hunt(
    program: RaceProgram,
    strategy_name: str,
    *,
    watched: bool,
    races: bool = True,
    fixed: bool = False,
    budget: int = 100,
    seed: int = 0,
) -> lockstep.ExploreResult:
    """Explore one program (no shrinking: the count is executions to the first failure)."""
    return lockstep.explore(
        program.make(watched, fixed=fixed),
        strategy=strategy(strategy_name, seed),
        budget=budget,
        races=races,
        shrink=False,
        progress=False,
    )

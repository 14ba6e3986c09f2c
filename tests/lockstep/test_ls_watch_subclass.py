"""Watched container subclasses whose methods are Python code that synchronises.

A thread-safe mapping such as ``expiringdict.ExpiringDict`` overrides ``__setitem__``
with ``with self.lock: OrderedDict.__setitem__(self, key, value)``: the storage is
touched inside the lock, through the base class, where nothing can intercept it.
Recording the access when the call starts (before the lock) made every correct use
a "data race"; the access is now judged when the call returns, with the clock the
thread has then, so the method's own lock orders it. A subclass with no lock, and
one whose method synchronises nothing (``Counter.update``), are judged as before.
"""

from __future__ import annotations

import contextlib
from collections import Counter, OrderedDict
from collections.abc import Callable
from typing import Any

import pytest

import lockstep
from lockstep import DporStrategy, RandomStrategy, explore, watch

threading = lockstep.threading


class LockedMap(OrderedDict[Any, Any]):
    """Every operation under the map's own lock, the storage reached through the base."""

    def __init__(self, locked: bool = True) -> None:
        super().__init__()
        self.lock = threading.Lock() if locked else None

    def _guard(self) -> Any:
        return self.lock if self.lock is not None else _NoLock()

    def __setitem__(self, key: Any, value: Any) -> None:
        with self._guard():
            OrderedDict.__setitem__(self, key, value)

    def __getitem__(self, key: Any) -> Any:
        with self._guard():
            return OrderedDict.__getitem__(self, key)

    def get(self, key: Any, default: Any = None) -> Any:
        with self._guard():
            return OrderedDict.get(self, key, default)

    def pop(self, key: Any, default: Any = None) -> Any:
        with self._guard():
            return OrderedDict.pop(self, key, default)


class _NoLock:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _users(locked: bool) -> Callable[[], None]:
    def scenario() -> None:
        shared = watch(LockedMap(locked))

        def user(i: int) -> None:
            shared["k"] = i
            shared.get("k")
            shared.pop("j")

        threads = [lockstep.spawn(user, i) for i in range(2)]
        threads.append(lockstep.spawn(shared.__setitem__, "j", 0))
        for t in threads:
            t.join()

    return scenario


@pytest.mark.parametrize("strategy", [DporStrategy, lambda: RandomStrategy(0)])
def test_a_map_that_locks_inside_its_methods_has_no_race(strategy: Callable[[], Any]) -> None:
    result = explore(_users(locked=True), strategy=strategy(), budget=300)
    assert result.failure is None, result.failure


@pytest.mark.parametrize("strategy", [DporStrategy, lambda: RandomStrategy(0)])
def test_the_same_map_without_its_lock_races(strategy: Callable[[], Any]) -> None:
    result = explore(_users(locked=False), strategy=strategy(), budget=300)
    failure = result.failure
    assert failure is not None
    assert failure.kind == "data-race", failure
    race = failure.race
    assert race is not None
    assert race.location.startswith("LockedMap#1[")
    # Both sides are named at the caller's line, not inside the map's methods.
    for side in (race.first, race.second):
        assert "test_ls_watch_subclass.py:" in side.code
    lines = {int(side.code.rsplit(":", 1)[1]) for side in (race.first, race.second)}
    assert lines <= set(range(_first_line(_users), _first_line(_users) + 20))


def _first_line(function: Callable[..., Any]) -> int:
    return function.__code__.co_firstlineno


def test_a_python_method_that_synchronises_nothing_is_judged_exactly() -> None:
    """Counter.update is Python code with no lock: two unordered updates race."""

    def scenario() -> None:
        counts = watch(Counter())
        threads = [lockstep.spawn(counts.update, ["x"]) for _ in range(2)]
        for t in threads:
            t.join()

    result = explore(scenario, strategy=RandomStrategy(0), budget=50)
    failure = result.failure
    assert failure is not None
    assert failure.kind == "data-race", failure


def test_a_failure_inside_the_method_still_records_the_access() -> None:
    """An overriding method that raises may have touched the storage first: its access
    is checked all the same."""

    class WritesThenRaises(OrderedDict[Any, Any]):
        def __setitem__(self, key: Any, value: Any) -> None:
            OrderedDict.__setitem__(self, key, value)
            raise RuntimeError("after the write")

    def scenario() -> None:
        shared = watch(WritesThenRaises())

        def user() -> None:
            with contextlib.suppress(RuntimeError):
                shared["k"] = 1

        threads = [lockstep.spawn(user) for _ in range(2)]
        for t in threads:
            t.join()

    result = explore(scenario, strategy=RandomStrategy(0), budget=50)
    failure = result.failure
    assert failure is not None
    assert failure.kind == "data-race", failure

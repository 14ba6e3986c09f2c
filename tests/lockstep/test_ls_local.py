"""lockstep.threading.local: attributes per logical thread inside a run, per OS thread outside."""

from __future__ import annotations

import threading

import pytest

import lockstep
from lockstep import RandomStrategy, explore, spawn


class Counted(lockstep.threading.local):
    """A subclass whose __init__ runs once per thread, with the creation arguments."""

    inits = 0

    def __init__(self, start: int) -> None:
        type(self).inits += 1
        self.value = start

    @property
    def doubled(self) -> int:
        lockstep.checkpoint("inside a property")  # a switch point mid-access
        return self.value * 2


def test_each_logical_thread_has_its_own_attributes(backend):
    """Writes in one logical thread are invisible to the others, across switch points."""
    shared = lockstep.threading.local()
    seen: dict[int, tuple[object, ...]] = {}

    def worker(n: int) -> None:
        before = hasattr(shared, "n")
        shared.n = n
        lockstep.checkpoint("switch", resource="shared")
        seen[n] = (before, shared.n, dict(vars(shared)))

    def scenario():
        shared.n = "main"
        threads = [spawn(worker, n) for n in range(3)]
        for t in threads:
            t.join()
        seen[-1] = (shared.n,)

    for seed in range(5):
        seen.clear()
        assert explore(scenario, strategy=RandomStrategy(seed), budget=1).failure is None
        assert seen[-1] == ("main",)
        for n in range(3):
            assert seen[n] == (False, n, {"n": n})


def test_subclass_init_runs_per_thread_and_properties_may_switch(backend):
    """__init__ runs again (same arguments) in each thread that touches the object; a
    property reaching a switch point reads its own thread's attributes."""
    counted = Counted(5)
    results: dict[int, int] = {}

    def worker(n: int) -> None:
        counted.value += n
        results[n] = counted.doubled

    def scenario():
        threads = [spawn(worker, n) for n in (1, 2)]
        for t in threads:
            t.join()

    for seed in range(4):
        Counted.inits = 0
        results.clear()
        assert explore(scenario, strategy=RandomStrategy(seed), budget=1).failure is None
        assert results == {1: 12, 2: 14}
        assert Counted.inits == 2  # once per worker, never for the creator outside the run


def test_every_execution_starts_fresh(backend):
    """A module-level local has no attribute in a new execution's threads."""
    shared = lockstep.threading.local()
    found: list[bool] = []

    def scenario():
        found.append(hasattr(shared, "x"))
        shared.x = 1

    result = explore(scenario, budget=3, shrink=False)
    assert result.executions == 3
    assert found == [False, False, False]


def test_outside_a_run_it_is_per_os_thread(backend):
    """With real threads it behaves like threading.local."""
    shared = lockstep.threading.local()
    shared.x = "creator"
    seen = []

    def other() -> None:
        seen.append(getattr(shared, "x", None))
        shared.x = "other"

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen == [None]
    assert shared.x == "creator"


def test_misuse_raises_what_threading_local_raises(backend):
    """Arguments without __init__, deleting a missing attribute, replacing __dict__."""
    with pytest.raises(TypeError, match="Initialization arguments are not supported"):
        lockstep.threading.local(1)
    shared = lockstep.threading.local()
    with pytest.raises(AttributeError):
        del shared.missing
    with pytest.raises(AttributeError, match="read-only"):
        shared.__dict__ = {}
    with pytest.raises(AttributeError, match="no attribute 'missing'"):
        _ = shared.missing
    shared.y = 2
    assert shared.__dict__ == {"y": 2}
    del shared.y
    assert not hasattr(shared, "y")


def test_patched_module_gets_the_logical_local(backend):
    """patched() swaps threading.local (and a name imported from threading) for lockstep's."""
    from lockstep._patching import stand_in_for

    assert lockstep.threading.local is not threading.local
    assert stand_in_for(threading.local) is lockstep.threading.local

"""explore() collects garbage less often, and not through what existed before it,
while it runs; it leaves the collector as it was (lockstep._gc)."""

from __future__ import annotations

import gc
import weakref

import pytest
from ls_helpers import needs_greenlet

import lockstep
from lockstep._gc import EXPLORE_THRESHOLD, fewer_collections
from lockstep._runtime import current_logical_thread


@pytest.fixture
def collector():
    """The test's own thresholds, nothing frozen, and the process's state given back."""
    before = gc.get_threshold()
    enabled = gc.isenabled()
    frozen = gc.get_freeze_count()
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    yield
    gc.unfreeze()
    gc.set_threshold(*before)
    if enabled:
        gc.enable()
    if frozen:
        gc.freeze()


def test_explore_raises_the_threshold_freezes_and_restores_both(collector):
    seen = []

    def scenario():
        seen.append((gc.get_threshold(), gc.get_freeze_count() > 0))

    result = lockstep.explore(scenario, budget=3)
    assert result.failure is None
    assert seen == [((EXPLORE_THRESHOLD, 10, 10), True)] * 3
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0


def test_restored_after_a_failure_too(collector):
    def scenario():
        raise ValueError("boom")

    result = lockstep.explore(scenario, budget=3)
    assert result.failure is not None
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0


def test_what_existed_before_is_frozen_during_and_collectable_after(collector):
    """A cycle made before the exploration, garbage during it, is left out of its
    collections (a full collection walks none of what existed before) and collected
    after it."""

    class Node:
        other: Node

    a, b = Node(), Node()
    a.other, b.other = b, a
    ref = weakref.ref(a)
    with fewer_collections():
        del a, b  # garbage only now, after the freeze: no collection took it before
        gc.collect()
        assert ref() is not None  # frozen: not even looked at
    gc.collect()
    assert ref() is None  # unfrozen: garbage like any other


@pytest.mark.parametrize("setup", ["disabled", "zero"])
def test_left_alone_when_collection_is_off(collector, setup):
    if setup == "disabled":
        gc.disable()
    else:
        gc.set_threshold(0)
    before = gc.get_threshold()
    with fewer_collections():
        assert gc.get_threshold() == before
        assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == before
    assert gc.isenabled() == (setup != "disabled")


def test_a_higher_threshold_is_kept_and_still_frozen(collector):
    gc.set_threshold(EXPLORE_THRESHOLD * 2, 10, 10)
    with fewer_collections():
        assert gc.get_threshold() == (EXPLORE_THRESHOLD * 2, 10, 10)
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == (EXPLORE_THRESHOLD * 2, 10, 10)
    assert gc.get_freeze_count() == 0


def test_what_someone_else_froze_stays_frozen(collector):
    """A freeze made before the block is neither undone nor extended by it.

    Judged on objects of the test's own: the process-wide freeze count is not
    a stable measure (a frozen object of another thread, e.g. xdist's I/O
    thread, may be freed at any moment and leaves the frozen set with it).
    """

    class Node:
        other: Node

    def cycle() -> Node:
        a, b = Node(), Node()
        a.other, b.other = b, a
        return a

    keep = cycle()
    theirs = weakref.ref(keep)
    gc.freeze()  # "someone else" freezes it, while it is still referenced
    del keep  # garbage from now on, kept only by the freeze
    with fewer_collections():
        ours = weakref.ref(cycle())  # made inside the block: the block must not freeze it
        gc.collect()
        assert theirs() is not None  # still frozen: not unfrozen on entry
        assert ours() is None  # not frozen: no second freeze inside
    gc.collect()
    assert theirs() is not None  # still frozen after the block: not unfrozen on exit
    gc.unfreeze()
    gc.collect()
    assert theirs() is None  # it was only ever kept by the freeze


def test_a_threshold_the_code_inside_sets_is_kept(collector):
    with fewer_collections():
        assert gc.get_threshold() == (EXPLORE_THRESHOLD, 10, 10)
        gc.set_threshold(1234, 5, 5)
    assert gc.get_threshold() == (1234, 5, 5)


@needs_greenlet
def test_an_exploration_keeps_nothing_of_its_executions_on_the_greenlet_backend():
    """Once explore() returns and its result is dropped, what the executions' threads
    held is collectable: the carrier ends its workers on their own OS thread (a parked
    worker freed later, from another thread, was leaked by greenlet with its stack and
    the run it held)."""
    held = []

    def scenario():
        held.append(weakref.ref(current_logical_thread().run))
        threads = [lockstep.spawn(lambda: None) for _ in range(2)]
        for thread in threads:
            thread.join()

    for seed in range(3):
        result = lockstep.explore(
            scenario, strategy=lockstep.RandomStrategy(seed=seed), budget=2, backend="greenlet"
        )
        assert result.failure is None
    del result
    gc.collect()
    assert len(held) == 6
    assert [ref for ref in held if ref() is not None] == []

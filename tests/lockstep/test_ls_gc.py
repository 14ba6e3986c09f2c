"""explore() collects garbage less often while it runs, and leaves the thresholds as
they were (lockstep._gc)."""

from __future__ import annotations

import gc

import pytest

import lockstep
from lockstep._gc import EXPLORE_THRESHOLD, fewer_collections


@pytest.fixture
def thresholds():
    """The test's own thresholds, and the process's given back afterwards."""
    before = gc.get_threshold()
    enabled = gc.isenabled()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*before)
    if enabled:
        gc.enable()


def test_explore_raises_the_youngest_threshold_and_restores_it(thresholds):
    seen = []

    def scenario():
        seen.append(gc.get_threshold())

    result = lockstep.explore(scenario, budget=3)
    assert result.failure is None
    assert seen == [(EXPLORE_THRESHOLD, 10, 10)] * 3
    assert gc.get_threshold() == (700, 10, 10)


def test_restored_after_a_failure_too(thresholds):
    def scenario():
        raise ValueError("boom")

    result = lockstep.explore(scenario, budget=3)
    assert result.failure is not None
    assert gc.get_threshold() == (700, 10, 10)


@pytest.mark.parametrize("setup", ["disabled", "zero", "higher"])
def test_left_alone_when_collection_is_off_or_already_rarer(thresholds, setup):
    if setup == "disabled":
        gc.disable()
    elif setup == "zero":
        gc.set_threshold(0)
    else:
        gc.set_threshold(EXPLORE_THRESHOLD * 2, 10, 10)
    before = gc.get_threshold()
    with fewer_collections():
        assert gc.get_threshold() == before
    assert gc.get_threshold() == before
    assert gc.isenabled() == (setup != "disabled")


def test_a_threshold_the_code_inside_sets_is_kept(thresholds):
    with fewer_collections():
        assert gc.get_threshold() == (EXPLORE_THRESHOLD, 10, 10)
        gc.set_threshold(1234, 5, 5)
    assert gc.get_threshold() == (1234, 5, 5)

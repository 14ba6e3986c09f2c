"""A cold load or a removal takes effect at the cache layer at one instant (I15).

Between the inner layer's registration of a cold load and the cache's LRU
commit, and between the inner layer's unregistration and the cache's
``_forget``, the stack's observers answer from the cache's committed view:
the id is loaded there exactly while it is in the LRU *and* registered inside.
A pass-through layer between cache and manager parks the add (or remove)
right after the inner step, ordered with events, so each window is observed
deterministically.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from modelmanager import (
    LockTimeout,
    ModelManager,
    ModelManagerDecorator,
    ModelNotFound,
    WithFixedSizeCache,
)

from .helpers import FakeRegistry, join, run_in_thread


class _ParkAfterInnerStep(ModelManagerDecorator):
    """Parks ``add_model``/``remove`` of ``park_id`` right after the inner layer's step."""

    def __init__(self, manager: Any, park_id: str) -> None:
        super().__init__(manager)
        self.park_id = park_id
        self.parked = threading.Event()
        self.release = threading.Event()
        self.parking = False

    def _park(self, model_id: str) -> None:
        if self.parking and model_id == self.park_id:
            self.parked.set()
            assert self.release.wait(timeout=30), "the test never released the parked step"

    def add_model(
        self,
        model_id: str,
        api_key: str | None = None,
        model_id_alias: str | None = None,
        **load_kwargs: Any,
    ) -> None:
        super().add_model(model_id, api_key, model_id_alias, **load_kwargs)
        self._park(model_id)

    def remove(self, model_id: str, delete_from_disk: bool = True) -> None:
        super().remove(model_id, delete_from_disk)
        self._park(model_id)


def _stack(
    registry: FakeRegistry, outer: bool, max_size: int = 3
) -> tuple[Any, WithFixedSizeCache, _ParkAfterInnerStep]:
    parking = _ParkAfterInnerStep(ModelManager(registry), "x")
    cache = WithFixedSizeCache(parking, max_size=max_size)
    stack: Any = ModelManagerDecorator(cache) if outer else cache
    return stack, cache, parking


def _assert_not_loaded_here(stack: Any, cache: WithFixedSizeCache, others: list[str]) -> None:
    assert "x" not in stack
    assert sorted(stack.keys()) == others
    assert len(stack) == len(others)
    with pytest.raises(ModelNotFound):
        stack["x"]
    assert sorted(d.model_id for d in stack.describe_models()) == others
    assert "x" not in cache.lru_order()


@pytest.mark.parametrize("outer", [False, True], ids=["cache", "decorator-over-cache"])
def test_cold_load_is_invisible_until_its_lru_commit(registry: FakeRegistry, outer: bool) -> None:
    """Registered inside but not committed: no observer of the stack sees it yet."""
    stack, cache, parking = _stack(registry, outer)
    stack.add_model("a")
    parking.parking = True
    adder, outcome = run_in_thread(stack.add_model, "x")
    try:
        assert parking.parked.wait(timeout=30)
        assert parking.manager.keys() == ["a", "x"]  # the window: registered in the inner layer
        _assert_not_loaded_here(stack, cache, ["a"])
        stack.refresh("x")  # not loaded here: a no-op, no phantom (B13)
        stack.add_model("a")  # a warm hit in the window
        assert cache.lru_order() == ["a"]
    finally:
        parking.release.set()
    join(adder)
    assert "error" not in outcome
    # The load took effect at its commit, after the hit: most recent.
    assert "x" in stack
    assert stack["x"] is registry.constructed[-1]
    assert sorted(stack.keys()) == ["a", "x"]
    assert len(stack) == 2
    assert cache.lru_order() == ["a", "x"]


@pytest.mark.parametrize("outer", [False, True], ids=["cache", "decorator-over-cache"])
def test_removal_is_invisible_from_the_inner_unregistration(
    registry: FakeRegistry, outer: bool
) -> None:
    """Unregistered inside but not forgotten: gone for every observer and for admission."""
    stack, cache, parking = _stack(registry, outer, max_size=2)
    stack.add_model("a")
    stack.add_model("x")
    parking.parking = True
    remover, outcome = run_in_thread(stack.remove, "x")
    try:
        assert parking.parked.wait(timeout=30)
        assert parking.manager.keys() == ["a"]  # the window: unregistered in the inner layer
        _assert_not_loaded_here(stack, cache, ["a"])
        # The cache holds one model, so a cold add needs no room: "a" stays.
        stack.add_model("c")
        assert sorted(stack.keys()) == ["a", "c"]
        assert stack.statistics().evictions == 0
    finally:
        parking.release.set()
    join(remover)
    assert "error" not in outcome
    assert cache.lru_order() == ["a", "c"]
    assert sorted(stack.keys()) == ["a", "c"]
    assert cache.in_flight_loads() == 0
    assert stack.lifecycle_snapshot() == {}


def test_failed_removal_keeps_the_model_visible(registry: FakeRegistry) -> None:
    """The removal mark of a remove that fails is dropped: loaded, same LRU position."""
    stack, cache, _ = _stack(registry, outer=False)
    for model_id in "axb":
        stack.add_model(model_id)
    registry.clear_errors["x"] = RuntimeError("x")
    with pytest.raises(RuntimeError):
        stack.remove("x")
    assert "x" in stack
    assert cache.lru_order() == ["a", "x", "b"]
    assert len(stack) == 3
    assert cache._book.marks == {}


def test_eviction_waits_for_a_load_between_registration_and_commit(
    registry: FakeRegistry,
) -> None:
    """A full cache's admission does not evict while a load awaits its commit.

    "a" is loaded and "x" is registered inside but parked before its commit,
    so a cold add of "c" needs room; it must not evict until "x" is loaded
    here (the queue timeout of 0 makes a premature eviction attempt time out
    instead: nothing may change).
    """
    parking = _ParkAfterInnerStep(ModelManager(registry), "x")
    cache = WithFixedSizeCache(parking, max_size=2, queue_lock_timeout=0)
    cache.add_model("a")
    parking.parking = True
    adder, outcome = run_in_thread(cache.add_model, "x")
    try:
        assert parking.parked.wait(timeout=30)
        with pytest.raises(LockTimeout):
            cache.add_model("c")
        assert parking.manager.keys() == ["a", "x"]  # nothing evicted, "c" not loaded
        assert cache.statistics().evictions == 0
    finally:
        parking.release.set()
    join(adder)
    assert "error" not in outcome
    cache.add_model("c")  # now "x" is loaded here: "a", the least recent, goes
    assert cache.lru_order() == ["x", "c"]

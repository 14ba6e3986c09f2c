"""B20: a cache built over a manager that already holds models adopts them or refuses.

Before the fix, ``WithFixedSizeCache(manager_with_A_and_B, max_size=2)``
started with an empty LRU: ``add_model("A")`` returned but ``"A" in cache``
was False, and after adding C and D the inner manager held four models under
a cap of two.
"""

from __future__ import annotations

import pytest

from modelmanager import (
    InvalidArgument,
    ModelManager,
    ModelManagerDecorator,
    WithFixedSizeCache,
)

from .helpers import FakeRegistry


def populated(registry: FakeRegistry, ids: str) -> ModelManager:
    manager = ModelManager(registry)
    for model_id in ids:
        manager.add_model(model_id)
    return manager


def test_models_that_fit_are_adopted_in_registration_order(registry: FakeRegistry) -> None:
    """Adopted models are visible at the cache, least recent first in load order."""
    inner = populated(registry, "ba")
    cache = WithFixedSizeCache(inner, max_size=3)
    assert cache.lru_order() == ["b", "a"]
    assert cache.keys() == ["b", "a"]
    assert "a" in cache
    assert "b" in cache
    assert len(cache) == 2
    assert cache["a"] is inner["a"]
    assert [d.model_id for d in cache.describe_models()] == ["b", "a"]


def test_issue_snippet_keeps_the_cap(registry: FakeRegistry) -> None:
    """add_model of an adopted id is a hit; later cold adds evict: the inner holds <= 2."""
    inner = populated(registry, "AB")
    cache = WithFixedSizeCache(inner, max_size=2)
    cache.add_model("A")
    assert "A" in cache
    assert cache.statistics().hits == 1
    assert cache.statistics().loads == 2  # nothing reloaded
    cache.add_model("C")
    assert len(inner) <= 2
    assert cache.lru_order() == ["A", "C"]  # A was used, so B went first
    cache.add_model("D")
    assert len(inner) <= 2
    assert cache.lru_order() == ["C", "D"]
    assert sorted(inner.keys()) == ["C", "D"]
    assert cache.statistics().evictions_capacity == 2
    assert sorted(m.model_id for m in registry.constructed if m.cleared) == ["A", "B"]


def test_adopted_models_are_evicted_least_recent_first(registry: FakeRegistry) -> None:
    """The adopted order is the LRU order: the first-registered goes first."""
    inner = populated(registry, "xyz")
    cache = WithFixedSizeCache(inner, max_size=3)
    cache.refresh("x")  # x becomes most recent: y is now the least recent
    cache.add_model("w")
    assert cache.lru_order() == ["z", "x", "w"]
    assert "y" not in inner


def test_adopted_models_can_be_pinned_removed_and_leased(registry: FakeRegistry) -> None:
    """Adopted ids behave like ids loaded through the cache."""
    inner = populated(registry, "ab")
    cache = WithFixedSizeCache(inner, max_size=2)
    cache.pin_model("a")
    with cache.lease("b"):
        cache.add_model("c")  # a pinned, b leased by this thread: admitted over the bound
    # The lease ended: the least recent unpinned model went (the bound came back).
    assert cache.lru_order() == ["a", "c"]
    assert "b" not in inner
    cache.remove("c")
    assert cache.lru_order() == ["a"]
    assert inner.keys() == ["a"]


def test_exactly_full_is_adopted(registry: FakeRegistry) -> None:
    """count == max_size fits."""
    cache = WithFixedSizeCache(populated(registry, "ab"), max_size=2)
    assert cache.lru_order() == ["a", "b"]


def test_too_many_models_are_refused_with_nothing_changed(registry: FakeRegistry) -> None:
    """count > max_size: InvalidArgument naming count, ids and what to do; nothing unloaded."""
    inner = populated(registry, "ABCD")
    before = (inner.keys(), inner.statistics(), inner.lifecycle_snapshot())
    with pytest.raises(InvalidArgument) as caught:
        WithFixedSizeCache(inner, max_size=2)
    message = str(caught.value)
    assert "max_size=2" in message
    assert "already holds 4 models" in message
    assert "'A', 'B', 'C', 'D'" in message
    assert "remove some" in message
    assert "max_size >= 4" in message
    assert (inner.keys(), inner.statistics(), inner.lifecycle_snapshot()) == before
    assert all(not model.clear_calls for model in registry.constructed)


def test_refusal_abbreviates_a_long_list_of_ids(registry: FakeRegistry) -> None:
    """Many held models: the message shows a few ids and how many more."""
    inner = ModelManager(registry)
    for index in range(40):
        inner.add_model(f"model-{index:02d}")
    with pytest.raises(InvalidArgument) as caught:
        WithFixedSizeCache(inner, max_size=8)
    message = str(caught.value)
    assert "'model-00', 'model-01', 'model-02', 'model-03', 'model-04', ... (35 more)" in message
    assert "model-39" not in message
    assert len(message) < 300


def test_adoption_through_decorators_and_caches(registry: FakeRegistry) -> None:
    """The inner layer may be a decorator or another cache: its keys() are adopted."""
    inner = populated(registry, "ab")
    over_decorator = WithFixedSizeCache(ModelManagerDecorator(inner), max_size=2)
    assert over_decorator.lru_order() == ["a", "b"]
    inner_cache = WithFixedSizeCache(ModelManager(registry), max_size=3)
    inner_cache.add_model("c")
    inner_cache.add_model("d")
    over_cache = WithFixedSizeCache(inner_cache, max_size=2)
    assert over_cache.lru_order() == ["c", "d"]
    with pytest.raises(InvalidArgument, match="already holds 2 models"):
        WithFixedSizeCache(inner_cache, max_size=1)

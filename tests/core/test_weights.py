"""Weight-based capacity: a weigher and a weight bound, alongside or instead of the count."""

from __future__ import annotations

from typing import Any

import pytest

from modelmanager import InvalidArgument, InvalidArgumentType, ModelManager, WithFixedSizeCache

from .helpers import FakeRegistry

SIZES = {"s": 1, "m": 4, "l": 6, "xl": 11}


def by_id(resolved_id: str, model: Any) -> int:
    """A registry-supplied size: the number the id's prefix names."""
    return SIZES[resolved_id.split("-", maxsplit=1)[0]]


def weighted(registry: FakeRegistry, max_weight: int = 10, **kwargs: Any) -> WithFixedSizeCache:
    kwargs.setdefault("max_size", None)
    return WithFixedSizeCache(
        ModelManager(registry), max_weight=max_weight, weigher=by_id, **kwargs
    )


def test_weight_bound_alone_evicts_by_weight(registry: FakeRegistry) -> None:
    """max_size=None: the weight bound alone decides; least recent first until it fits."""
    cache = weighted(registry)
    cache.add_model("m-1")
    cache.add_model("m-2")
    cache.add_model("s-1")
    assert cache.weights() == {"m-1": 4, "m-2": 4, "s-1": 1}
    cache.add_model("l-1")  # first load of l: estimated 0, weighs 6: 15 > 10 after the commit
    assert cache.lru_order() == ["s-1", "l-1"]  # the bound came back: m-1, m-2 went
    assert sum(cache.weights().values()) == 7
    assert cache.statistics().evictions_restore == 2


def test_known_weights_are_admitted_before_loading(registry: FakeRegistry) -> None:
    """A reload uses the weight the id had last time: room is made before loading."""
    cache = weighted(registry)
    cache.add_model("l-1")
    cache.remove("l-1")
    cache.add_model("m-1")
    cache.add_model("m-2")
    cache.add_model("l-1")  # estimated 6: 8 + 6 > 10, m-1 goes before l-1 loads
    assert cache.lru_order() == ["m-2", "l-1"]
    stats = cache.statistics()
    assert (stats.evictions_capacity, stats.evictions_restore) == (1, 0)


def test_count_and_weight_bounds_together(registry: FakeRegistry) -> None:
    """Both bounds hold: whichever is tighter decides."""
    cache = weighted(registry, max_weight=10, max_size=2)
    cache.add_model("s-1")
    cache.add_model("s-2")
    cache.add_model("s-3")  # the count bound: s-1 goes
    assert cache.lru_order() == ["s-2", "s-3"]
    cache.add_model("l-1")  # count: one goes; weight 1 + 6 fits
    assert cache.lru_order() == ["s-3", "l-1"]
    cache.add_model("m-1")  # count: s-3 goes; weight 6 + 4 = 10 fits
    assert cache.lru_order() == ["l-1", "m-1"]


def test_a_model_heavier_than_the_bound_is_kept_alone(registry: FakeRegistry) -> None:
    """An id weighing more than max_weight: everything else goes, it stays."""
    cache = weighted(registry)
    cache.add_model("s-1")
    cache.add_model("xl-1")
    assert cache.lru_order() == ["xl-1"]
    assert cache.weights() == {"xl-1": 11}


def test_pinned_and_leased_weigh_but_are_never_evicted(registry: FakeRegistry) -> None:
    """Pinned and leased models count toward the bound and stay; the rest goes."""
    cache = weighted(registry, on_full="proceed")
    cache.add_model("l-1", pin=True)
    with cache.acquire("m-1"):
        cache.add_model("m-2")  # 14 > 10: nothing evictable but m-2 itself (just loaded)
        assert cache.lru_order() == ["l-1", "m-1", "m-2"]
    assert cache.lru_order() == ["l-1", "m-2"]  # m-1 given back and least recent: gone


@pytest.mark.parametrize(
    ("answer", "error"),
    [(-1, InvalidArgument), (1.5, InvalidArgumentType), (True, InvalidArgumentType)],
)
def test_a_bad_weight_fails_the_add_and_unloads(
    registry: FakeRegistry, answer: object, error: type[Exception]
) -> None:
    """A weigher answering anything but an int >= 0: the add fails, nothing stays."""
    cache = WithFixedSizeCache(
        ModelManager(registry), max_weight=10, weigher=lambda rid, model: answer
    )
    with pytest.raises(error, match=r"weigher\('a', model\) must be an int >= 0"):
        cache.add_model("a")
    assert cache.keys() == []
    assert cache.manager.keys() == []
    assert registry.constructed[0].cleared
    assert cache.in_flight_loads() == 0
    assert cache.lifecycle_snapshot() == {}


def test_a_weigher_that_raises_fails_the_add(registry: FakeRegistry) -> None:
    """The weigher's own error propagates; the model is unloaded again."""

    def broken(resolved_id: str, model: Any) -> int:
        raise LookupError(f"no size for {resolved_id}")

    cache = WithFixedSizeCache(ModelManager(registry), max_weight=10, weigher=broken)
    with pytest.raises(LookupError, match="no size for a"):
        cache.add_model("a")
    assert cache.manager.keys() == []
    assert registry.constructed[0].cleared


def test_adoption_weighs_and_refuses_too_heavy(registry: FakeRegistry) -> None:
    """A populated manager is adopted with its weights, or refused when too heavy."""
    manager = ModelManager(registry)
    manager.add_model("m-1")
    manager.add_model("l-1")
    cache = WithFixedSizeCache(manager, max_size=None, max_weight=10, weigher=by_id)
    assert cache.weights() == {"m-1": 4, "l-1": 6}
    cache.add_model("s-1")  # estimated 0, weighs 1: 11 > 10, m-1 goes
    assert cache.lru_order() == ["l-1", "s-1"]
    manager2 = ModelManager(registry)
    manager2.add_model("l-1")
    manager2.add_model("l-2")
    with pytest.raises(InvalidArgument, match="weighing 12") as caught:
        WithFixedSizeCache(manager2, max_weight=10, weigher=by_id)
    assert "max_weight >= 12" in str(caught.value)
    assert manager2.keys() == ["l-1", "l-2"]


def test_unweighted_cache_reports_no_weights(registry: FakeRegistry) -> None:
    """Without a weigher, weights() is empty and max_weight None."""
    cache = WithFixedSizeCache(ModelManager(registry), max_size=2)
    cache.add_model("a")
    assert cache.weights() == {}
    assert cache.max_weight is None


@pytest.mark.parametrize("on_full", ["wait", "refuse", "proceed"])
def test_an_oversized_model_is_loaded_alone_whatever_the_policy(
    registry: FakeRegistry, on_full: str
) -> None:
    """Known to weigh more than max_weight: no wait or refusal could make room for it."""
    cache = weighted(registry, on_full=on_full, queue_lock_timeout=30.0)
    cache.add_model("xl-1")  # first load: estimated 0, weighs 11, kept alone
    cache.add_model("s-1")  # xl-1 goes (restoration): 1
    cache.add_model("xl-1")  # known 11: s-1 goes first, then it loads alone at once
    assert cache.lru_order() == ["xl-1"]
    stats = cache.statistics()
    assert (stats.full_waits, stats.full_refusals, stats.pinned_overflow) == (0, 0, 1)

"""Leases and load-and-lease: what is in use is never unloaded (I13, B17)."""

from __future__ import annotations

import threading

import pytest

from modelmanager import LockTimeout, ModelManager, ModelNotFound, WithFixedSizeCache

from .helpers import FakeRegistry, join, run_in_thread


def test_lease_yields_model_and_counts(manager: ModelManager) -> None:
    """lease yields the model; counts go up while held and back to zero."""
    manager.add_model("a")
    with manager.lease("a") as model:
        assert model is manager["a"]
        with manager.lease("a"):
            assert manager.lease_counts() == {"a": 2}
        assert manager.lease_counts() == {"a": 1}
    assert manager.lease_counts() == {}
    assert manager.lifecycle_snapshot() == {}


def test_lease_of_unloaded_id_raises(manager: ModelManager) -> None:
    """lease raises ModelNotFound (on entry) and leaves nothing behind."""
    with pytest.raises(ModelNotFound), manager.lease("a"):
        pytest.fail("must not enter")
    assert manager.lease_counts() == {}
    assert manager.lifecycle_snapshot() == {}


def test_lease_released_on_exception(manager: ModelManager) -> None:
    """An error inside the with-block still gives the lease back."""
    manager.add_model("a")
    with pytest.raises(RuntimeError), manager.lease("a"):
        raise RuntimeError("inference failed")
    assert manager.lease_counts() == {}


def test_acquire_loads_and_leases(manager: ModelManager, registry: FakeRegistry) -> None:
    """acquire loads (cold or warm) under the alias and leases the model."""
    with manager.acquire("a", model_id_alias="b", api_key="k") as model:
        assert manager.lease_counts() == {"b": 1}
        assert model is manager["b"]
        assert registry.constructed[0].api_key == "k"
    with manager.acquire("a", model_id_alias="b") as again:
        assert again is model
    assert manager.statistics().hits == 1
    assert manager.lease_counts() == {}
    assert manager.lifecycle_snapshot() == {}


def test_acquire_failure_leaves_nothing(manager: ModelManager, registry: FakeRegistry) -> None:
    """A failed load in acquire raises the constructor's error, no lease, no entry."""
    registry.load_errors["a"] = ValueError("nope")
    with pytest.raises(ValueError, match="nope"), manager.acquire("a"):
        pytest.fail("must not enter")
    assert manager.lease_counts() == {}
    assert manager.keys() == []
    assert manager.lifecycle_snapshot() == {}


def test_remove_times_out_on_held_lease(registry: FakeRegistry) -> None:
    """With the lease held, remove times out (lock_timeout=0) and changes nothing."""
    manager = ModelManager(registry, lock_timeout=0)
    manager.add_model("a")
    with manager.lease("a"):
        with pytest.raises(LockTimeout, match="leases on model 'a'"):
            manager.remove("a")
        assert manager.keys() == ["a"]
        assert registry.constructed[0].clear_calls == []
    assert manager.statistics().lock_timeouts == 1
    manager.remove("a")
    assert registry.constructed[0].clear_calls == [True]


class _SignallingManager(ModelManager):
    """Sets ``draining`` when a removal starts waiting for leases."""

    def __init__(self, registry: FakeRegistry) -> None:
        super().__init__(registry)
        self.draining = threading.Event()

    def _wait_for_leases(self, resolved_id: str) -> None:
        self.draining.set()
        super()._wait_for_leases(resolved_id)


def test_remove_waits_for_lease_from_another_thread(registry: FakeRegistry) -> None:
    """remove blocks until the lease is given back; clear_cache never runs under it."""
    manager = _SignallingManager(registry)
    manager.add_model("a")
    leased, give_back = threading.Event(), threading.Event()
    cleared_while_leased: list[bool] = []

    def holder() -> None:
        with manager.lease("a") as model:
            leased.set()
            assert give_back.wait(30)
            cleared_while_leased.append(bool(model.clear_calls))  # type: ignore[attr-defined]

    lease_thread, lease_outcome = run_in_thread(holder)
    assert leased.wait(30)
    remover, remove_outcome = run_in_thread(manager.remove, "a")
    assert manager.draining.wait(30)
    assert manager.keys() == ["a"]
    give_back.set()
    join(lease_thread)
    join(remover)
    assert "error" not in lease_outcome
    assert "error" not in remove_outcome
    assert cleared_while_leased == [False]
    assert manager.keys() == []
    assert registry.constructed[0].clear_calls == [True]
    assert manager.lifecycle_snapshot() == {}


def test_cache_never_evicts_a_leased_model(registry: FakeRegistry) -> None:
    """Capacity eviction skips leased models; over capacity it counts overflow."""
    cache = WithFixedSizeCache(ModelManager(registry), max_size=1)
    with cache.acquire("a") as model:
        cache.add_model("b")
        assert cache.keys() == ["a", "b"]
        assert model.clear_calls == []  # type: ignore[attr-defined]
        assert cache.statistics().pinned_overflow == 1
    cache.add_model("c")
    # Two over capacity: both least-recent models go to admit c.
    assert cache.lru_order() == ["c"]
    assert cache.keys() == ["c"]

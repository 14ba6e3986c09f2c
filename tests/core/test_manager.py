"""ModelManager, single-threaded: loads, hits, removals, aliases, errors, records."""

from __future__ import annotations

from typing import Any

import pytest

from modelmanager import (
    LockTimeout,
    ManagerStatistics,
    ModelDescription,
    ModelManager,
    ModelNotFound,
)

from .helpers import FakeModel, FakeRegistry


def test_add_constructs_once_with_canonical_id(
    manager: ModelManager, registry: FakeRegistry
) -> None:
    """A cold add constructs with model_id/api_key/kwargs; a warm add is a hit."""
    manager.add_model("a", api_key="k", device="cpu")
    manager.add_model("a")
    assert len(registry.constructed) == 1
    model = registry.constructed[0]
    assert (model.model_id, model.api_key, model.load_kwargs) == ("a", "k", {"device": "cpu"})
    assert manager["a"] is model
    assert "a" in manager
    assert manager.keys() == ["a"]
    assert len(manager) == 1
    stats = manager.statistics()
    assert (stats.loads, stats.hits, stats.load_failures) == (1, 1, 0)
    assert manager.lifecycle_snapshot() == {}


def test_alias_is_the_key(manager: ModelManager, registry: FakeRegistry) -> None:
    """add_model(C, alias=A) registers under A; the constructor gets C (B10)."""
    manager.add_model("c")
    manager.add_model("c", model_id_alias="alias")
    assert manager.keys() == ["c", "alias"]
    assert manager["alias"].model_id == "c"  # type: ignore[attr-defined]
    assert manager["alias"] is not manager["c"]
    assert registry.requested == ["c", "alias"]
    manager.add_model("c", model_id_alias="alias")
    assert manager.statistics().hits == 1
    manager.remove("alias")
    assert manager.keys() == ["c"]


def test_remove_calls_clear_cache_once_and_forwards_flag(
    manager: ModelManager, registry: FakeRegistry
) -> None:
    """remove unloads with the given delete_from_disk; unknown ids are a no-op (B12)."""
    manager.add_model("a")
    manager.add_model("b")
    manager.remove("a", delete_from_disk=False)
    manager.remove("b")
    manager.remove("never-loaded")
    assert [m.clear_calls for m in registry.constructed] == [[False], [True]]
    assert manager.keys() == []
    assert manager.statistics().removals == 2
    assert manager.lifecycle_snapshot() == {}


def test_failed_clear_cache_keeps_model(manager: ModelManager, registry: FakeRegistry) -> None:
    """A failed remove changes nothing (I5) and is counted."""
    manager.add_model("a")
    registry.clear_errors["a"] = OSError("disk busy")
    with pytest.raises(OSError, match="disk busy"):
        manager.remove("a")
    assert manager.keys() == ["a"]
    assert manager.statistics().removal_failures == 1
    assert manager.statistics().removals == 0
    del registry.clear_errors["a"]
    manager.remove("a")
    assert manager.keys() == []


def test_failed_constructor_registers_nothing(
    manager: ModelManager, registry: FakeRegistry
) -> None:
    """The constructor's own error propagates unchanged; nothing is left (I10)."""
    error = ValueError("bad weights")
    registry.load_errors["a"] = error
    with pytest.raises(ValueError, match="bad weights") as caught:
        manager.add_model("a")
    assert caught.value is error
    assert manager.keys() == []
    assert manager.describe_models() == []
    assert manager.lifecycle_snapshot() == {}
    assert manager.statistics().load_failures == 1
    del registry.load_errors["a"]
    manager.add_model("a")
    assert manager.keys() == ["a"]


def test_keyboard_interrupt_from_constructor_leaves_table_empty(
    manager: ModelManager, registry: FakeRegistry
) -> None:
    """A BaseException from the constructor retires the lifecycle entry."""
    registry.load_errors["a"] = KeyboardInterrupt()
    with pytest.raises(KeyboardInterrupt):
        manager.add_model("a")
    assert manager.lifecycle_snapshot() == {}
    assert manager.keys() == []
    assert manager.statistics().load_failures == 1  # a failed load, whatever it raised


def test_mapping_registry() -> None:
    """A plain Mapping {id: factory} works; a missing id is ModelNotFound."""
    made: list[str] = []

    def factory(*, model_id: str, api_key: str | None = None, **kwargs: Any) -> FakeModel:
        made.append(model_id)
        return FakeModel(FakeRegistry(), model_id, api_key, **kwargs)

    manager = ModelManager({"a": factory})
    manager.add_model("a")
    assert made == ["a"]
    with pytest.raises(ModelNotFound, match="no factory is registered for model 'zzz'"):
        manager.add_model("zzz")
    assert manager.keys() == ["a"]
    assert manager.lifecycle_snapshot() == {}


def test_getitem_missing_raises_model_not_found(manager: ModelManager) -> None:
    """__getitem__ raises ModelNotFound, which is also a KeyError."""
    with pytest.raises(ModelNotFound, match="model 'x' is not loaded"):
        manager["x"]
    with pytest.raises(KeyError):
        manager["x"]


def test_describe_models(manager: ModelManager) -> None:
    """describe_models lists every model in load order with hits and leases."""
    manager.add_model("a")
    manager.add_model("a")
    manager.add_model("a", model_id_alias="b")
    with manager.lease("b"):
        described = manager.describe_models()
    assert described == [
        ModelDescription(
            model_id="a", canonical_model_id="a", model_class="FakeModel", hits=1, leases=0
        ),
        ModelDescription(
            model_id="b", canonical_model_id="a", model_class="FakeModel", hits=0, leases=1
        ),
    ]


def test_clear_removes_everything(manager: ModelManager, registry: FakeRegistry) -> None:
    """clear unloads every model (I9: no live model afterwards)."""
    for model_id in "abc":
        manager.add_model(model_id)
    manager.clear()
    assert manager.keys() == []
    assert registry.live() == []


def test_clear_attempts_all_and_groups_failures(
    manager: ModelManager, registry: FakeRegistry
) -> None:
    """clear tries every id and raises an ExceptionGroup of the failures."""
    for model_id in "abcd":
        manager.add_model(model_id)
    registry.clear_errors["a"] = OSError("a busy")
    registry.clear_errors["c"] = RuntimeError("c broken")
    with pytest.raises(ExceptionGroup) as caught:
        manager.clear()
    group = caught.value
    assert [str(e) for e in group.exceptions] == ["a busy", "c broken"]
    assert group.exceptions[0].__notes__ == ["while clearing: removing model 'a' failed"]
    assert manager.keys() == ["a", "c"]


def test_statistics_is_frozen_and_addable(manager: ModelManager) -> None:
    """statistics() is a frozen record; records add field-wise."""
    stats = manager.statistics()
    assert stats == ManagerStatistics()
    with pytest.raises(AttributeError):
        stats.loads = 3  # type: ignore[misc]
    total = ManagerStatistics(loads=1, evictions_memory=2) + ManagerStatistics(
        loads=2, evictions_capacity=1
    )
    assert (total.loads, total.evictions) == (3, 3)


def test_repr_shows_state(manager: ModelManager) -> None:
    """repr names models, leases, lifecycle entries and the timeout."""
    manager.add_model("a")
    with manager.lease("a"):
        text = repr(manager)
    assert (
        text == "ModelManager(models=['a'], leases={'a': 1}, lifecycle_entries=0, lock_timeout=60)"
    )


def test_lifecycle_helper_is_reentrant_and_bounded(manager: ModelManager) -> None:
    """manager.lifecycle(id) can be nested with the manager's own operations."""
    with manager.lifecycle("a"):
        manager.add_model("a")
        assert manager.lifecycle_snapshot()["a"].held
        manager.remove("a")
    assert manager.lifecycle_snapshot() == {}
    assert manager.keys() == []


def test_lock_timeout_on_busy_id_counts(registry: FakeRegistry) -> None:
    """A timed-out wait raises LockTimeout and counts it; nothing changes."""
    import threading

    manager = ModelManager(registry, lock_timeout=0)
    entered, release = registry.gate("a")
    worker = threading.Thread(target=manager.add_model, args=("a",), daemon=True)
    worker.start()
    assert entered.wait(30)
    with pytest.raises(LockTimeout):
        manager.add_model("a")
    with pytest.raises(LockTimeout):
        manager.remove("a")
    assert manager.statistics().lock_timeouts == 2
    release.set()
    worker.join(30)
    assert manager.keys() == ["a"]
    assert len(registry.constructed) == 1
    assert manager.lifecycle_snapshot() == {}

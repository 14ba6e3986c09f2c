"""WithFixedSizeCache(delete_evicted_from_disk=...): what an eviction passes to clear_cache."""

from __future__ import annotations

import pytest

from modelmanager import (
    InvalidArgumentType,
    ModelManager,
    ScriptedMemoryProbe,
    WithFixedSizeCache,
)

from .helpers import FakeRegistry


def _clear_calls(registry: FakeRegistry, model_id: str) -> list[bool]:
    return [call for m in registry.constructed if m.model_id == model_id for call in m.clear_calls]


@pytest.mark.parametrize("delete", [False, True])
def test_capacity_eviction_passes_the_setting(registry: FakeRegistry, delete: bool) -> None:
    cache = WithFixedSizeCache(ModelManager(registry), 1, delete_evicted_from_disk=delete)
    assert cache.delete_evicted_from_disk is delete
    cache.add_model("a")
    cache.add_model("b")  # evicts a
    assert cache.keys() == ["b"]
    assert _clear_calls(registry, "a") == [delete]


@pytest.mark.parametrize("delete", [False, True])
def test_memory_eviction_passes_the_setting(registry: FakeRegistry, delete: bool) -> None:
    probe = ScriptedMemoryProbe([0.9, 0.05, 0.9])  # a, then b under pressure, then fine
    cache = WithFixedSizeCache(
        ModelManager(registry),
        8,
        memory_probe=probe,
        memory_free_threshold=0.1,
        delete_evicted_from_disk=delete,
    )
    cache.add_model("a")
    cache.add_model("b")
    assert cache.keys() == ["b"]
    assert _clear_calls(registry, "a") == [delete]


def test_an_explicit_remove_keeps_its_own_argument(registry: FakeRegistry) -> None:
    cache = WithFixedSizeCache(ModelManager(registry), 2, delete_evicted_from_disk=True)
    cache.add_model("a")
    cache.remove("a", delete_from_disk=False)
    assert _clear_calls(registry, "a") == [False]


@pytest.mark.parametrize("bad", [None, 0, 1, "yes"])
def test_a_non_bool_is_refused(registry: FakeRegistry, bad: object) -> None:
    with pytest.raises(InvalidArgumentType, match="delete_evicted_from_disk"):
        WithFixedSizeCache(ModelManager(registry), 2, delete_evicted_from_disk=bad)  # type: ignore[arg-type]

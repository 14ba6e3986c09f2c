"""Every public entry point rejects bad input precisely, with no state changed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from modelmanager import (
    InvalidArgument,
    InvalidArgumentType,
    ModelManager,
    ModelManagerDecorator,
    ScriptedMemoryProbe,
    WithFixedSizeCache,
)

from .helpers import FakeRegistry

BAD_IDS: list[tuple[object, type[Exception]]] = [
    ("", InvalidArgument),
    (None, InvalidArgumentType),
    (3, InvalidArgumentType),
    (b"a", InvalidArgumentType),
]
BAD_ALIASES: list[tuple[object, type[Exception]]] = [
    ("", InvalidArgument),
    (3, InvalidArgumentType),
]
BAD_SIZES: list[tuple[object, type[Exception]]] = [
    (0, InvalidArgument),
    (-3, InvalidArgument),
    (True, InvalidArgumentType),
    (1.5, InvalidArgumentType),
    ("2", InvalidArgumentType),
]
BAD_THRESHOLDS: list[tuple[object, type[Exception]]] = [
    (-0.1, InvalidArgument),
    (1.1, InvalidArgument),
    (float("nan"), InvalidArgument),
    (False, InvalidArgumentType),
    ("0.5", InvalidArgumentType),
]


def loaded_stack() -> WithFixedSizeCache:
    stack = WithFixedSizeCache(ModelManagerDecorator(ModelManager(FakeRegistry())), max_size=3)
    stack.add_model("a", pin=True)
    stack.add_model("b")
    return stack


def state(stack: WithFixedSizeCache) -> tuple[object, ...]:
    return (
        stack.keys(),
        stack.lru_order(),
        stack.pinned(),
        stack.statistics(),
        stack.lifecycle_snapshot(),
        stack.lease_counts(),
        stack.in_flight_loads(),
    )


def id_calls() -> list[tuple[str, Callable[[Any, object], object]]]:
    return [
        ("add_model", lambda s, v: s.add_model(v)),
        ("remove", lambda s, v: s.remove(v)),
        ("lease", lambda s, v: s.lease(v)),
        ("acquire", lambda s, v: s.acquire(v)),
        ("lifecycle", lambda s, v: s.lifecycle(v)),
        ("pin_model", lambda s, v: s.pin_model(v)),
        ("unpin_model", lambda s, v: s.unpin_model(v)),
        ("refresh", lambda s, v: s.refresh(v)),
        ("inner add_model", lambda s, v: s.manager.add_model(v)),
        ("inner remove", lambda s, v: s.manager.remove(v)),
        ("innermost acquire", lambda s, v: s.manager.manager.acquire(v)),
    ]


@pytest.mark.parametrize(("value", "error"), BAD_IDS)
@pytest.mark.parametrize(("label", "call"), id_calls(), ids=[label for label, _ in id_calls()])
def test_bad_model_id(
    label: str, call: Callable[[Any, object], object], value: object, error: type
) -> None:
    """Ids must be non-empty str; the message names the value; nothing changes."""
    stack = loaded_stack()
    before = state(stack)
    with pytest.raises(error, match="must be a non-empty str") as caught:
        call(stack, value)
    if value != "":
        assert repr(value) in str(caught.value)
    assert state(stack) == before


@pytest.mark.parametrize(("value", "error"), BAD_ALIASES)
@pytest.mark.parametrize("layer", ["cache", "manager"])
@pytest.mark.parametrize("method", ["add_model", "acquire"])
def test_bad_alias(value: object, error: type, layer: str, method: str) -> None:
    """model_id_alias must be None or a non-empty str."""
    stack = loaded_stack()
    target = stack if layer == "cache" else stack.manager.manager
    before = state(stack)
    with pytest.raises(error, match="model_id_alias"):
        getattr(target, method)("c", model_id_alias=value)
    assert state(stack) == before


@pytest.mark.parametrize("method", ["add_model", "acquire"])
def test_bad_api_key_and_pin(method: str) -> None:
    """api_key must be None or str; pin must be a bool."""
    stack = loaded_stack()
    before = state(stack)
    with pytest.raises(InvalidArgumentType, match="api_key"):
        getattr(stack, method)("c", api_key=5)
    with pytest.raises(InvalidArgumentType, match="pin must be a bool"):
        getattr(stack, method)("c", pin=1)
    assert state(stack) == before


@pytest.mark.parametrize("layer", ["cache", "manager"])
def test_bad_delete_from_disk(layer: str) -> None:
    """delete_from_disk must be a bool."""
    stack = loaded_stack()
    target = stack if layer == "cache" else stack.manager.manager
    before = state(stack)
    with pytest.raises(InvalidArgumentType, match="delete_from_disk must be a bool"):
        target.remove("b", delete_from_disk="yes")
    assert state(stack) == before


@pytest.mark.parametrize(("value", "error"), BAD_SIZES)
def test_bad_max_size(value: object, error: type) -> None:
    """max_size must be a positive int, not a bool."""
    with pytest.raises(error, match="max_size must be a positive int"):
        WithFixedSizeCache(ModelManager(FakeRegistry()), max_size=value)  # type: ignore[arg-type]


@pytest.mark.parametrize(("value", "error"), BAD_THRESHOLDS)
def test_bad_threshold(value: object, error: type) -> None:
    """memory_free_threshold must be a number in [0, 1]."""
    with pytest.raises(error, match=r"memory_free_threshold must be a number in \[0, 1\]"):
        WithFixedSizeCache(ModelManager(FakeRegistry()), memory_free_threshold=value)  # type: ignore[arg-type]


@pytest.mark.parametrize("probe", [object(), "probe", ScriptedMemoryProbe])
def test_bad_memory_probe(probe: object) -> None:
    """memory_probe must provide free_fraction() and release_cache()."""
    with pytest.raises(InvalidArgumentType, match="memory_probe must provide"):
        WithFixedSizeCache(ModelManager(FakeRegistry()), memory_probe=probe)  # type: ignore[arg-type]


@pytest.mark.parametrize("registry", [object(), 3, None, ["a"]])
def test_bad_registry(registry: object) -> None:
    """registry must have get_model or be a Mapping."""
    with pytest.raises(InvalidArgumentType, match="registry must have a get_model"):
        ModelManager(registry)


# Timeouts: tests/core/test_timeouts.py (every timeout parameter x every bad value).


@pytest.mark.parametrize(("value", "error"), BAD_IDS)
def test_bad_getitem_and_contains(value: object, error: type) -> None:
    """__getitem__ validates its id; __contains__ answers False for non-str."""
    stack = loaded_stack()
    with pytest.raises(error, match="must be a non-empty str"):
        stack[value]
    assert (value in stack) is False
    assert ([] in stack) is False


class _NoClearCache:
    pass


class _ClearCacheWithoutFlag:
    def clear_cache(self) -> None:
        pass


@pytest.mark.parametrize(
    ("product", "says"),
    [
        (None, "returned None"),
        (_NoClearCache(), "has no clear_cache method"),
        (_ClearCacheWithoutFlag(), "does not accept delete_from_disk="),
    ],
)
@pytest.mark.parametrize("layer", ["manager", "cache"])
def test_a_factory_that_returns_no_model_is_refused_at_add(
    product: object, says: str, layer: str
) -> None:
    """A factory returning None, or an object without clear_cache(delete_from_disk=...),
    is refused at add_model with a precise error; nothing stays registered or reserved."""
    manager = ModelManager({"m": lambda **_: product})
    stack: Any = manager if layer == "manager" else WithFixedSizeCache(manager, max_size=2)
    with pytest.raises(InvalidArgumentType, match=says) as raised:
        stack.add_model("m")
    assert "the factory of model 'm'" in str(raised.value)
    assert "clear_cache(delete_from_disk: bool)" in str(raised.value)
    assert stack.keys() == []
    assert "m" not in stack
    assert manager.lifecycle_snapshot() == {}
    if layer == "cache":
        assert list(stack.lru_order()) == []
    assert manager.statistics().load_failures == 1
    stack.remove("m")  # an unknown id: a no-op, no AttributeError from a half-added model


def test_a_huge_model_id_is_abbreviated_in_the_error() -> None:
    """A 100 KB model id does not end up whole in the message."""
    huge = "x" * 100_000
    manager = ModelManager({huge: lambda **_: None})
    with pytest.raises(InvalidArgumentType) as raised:
        manager.add_model(huge)
    assert len(str(raised.value)) < 500

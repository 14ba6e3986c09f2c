"""Decorator delegation at any depth (B4, B11, I8)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from modelmanager import (
    LockTimeout,
    ModelManager,
    ModelManagerDecorator,
    UnsupportedOperation,
    WithFixedSizeCache,
)
from modelmanager.errors import InvalidArgumentType

from .helpers import FakeRegistry, join, run_in_thread

Stack = Any
D = ModelManagerDecorator


def cache(inner: Stack) -> WithFixedSizeCache:
    return WithFixedSizeCache(inner, max_size=2)


STACKS: dict[str, Callable[[ModelManager], Stack]] = {
    "M": lambda m: m,
    "D(M)": D,
    "D(D(D(M)))": lambda m: D(D(D(m))),
    "C(M)": cache,
    "C(D(M))": lambda m: cache(D(m)),
    "D(C(M))": lambda m: D(cache(m)),
    "D(C(D(M)))": lambda m: D(cache(D(m))),
    "D(D(C(D(M))))": lambda m: D(D(cache(D(m)))),
}
CACHED = [name for name in STACKS if "C(" in name]
PLAIN = [name for name in STACKS if "C(" not in name]


def build(name: str, registry: FakeRegistry) -> tuple[Stack, ModelManager]:
    manager = ModelManager(registry)
    return STACKS[name](manager), manager


def exercise(stack: Stack) -> list[object]:
    """Run every core method; return what an observer would see."""
    seen: list[object] = []
    stack.add_model("a")
    stack.add_model("b", model_id_alias="bb")
    stack.add_model("a")
    seen.append(sorted(stack.keys()))
    seen.append(("a" in stack, "zz" in stack, len(stack)))
    seen.append(stack["bb"].model_id)
    seen.append([d.model_id for d in stack.describe_models()])
    with stack.lease("a") as model:
        seen.append(model is stack["a"])
        seen.append(stack.lease_counts())
    with stack.acquire("c") as model:
        seen.append(model.model_id)
    with stack.lifecycle("a"):
        seen.append(stack.lifecycle_snapshot()["a"].held)
    stack.remove("a", delete_from_disk=False)
    seen.append(sorted(stack.keys()))
    stack.clear()
    seen.append(stack.keys())
    seen.append(stack.lifecycle_snapshot())
    seen.append(stack.lease_counts())
    return seen


@pytest.mark.parametrize("name", list(STACKS))
def test_every_method_works_at_every_depth(name: str, registry: FakeRegistry) -> None:
    """The whole API works through any stack and leaves nothing behind (B11)."""
    stack, _ = build(name, registry)
    seen = exercise(stack)
    assert seen[0] == ["a", "bb"]
    assert seen[1] == (True, False, 2)
    assert seen[2] == "b"
    assert seen[4:8] == [True, {"a": 1}, "c", True]
    assert seen[-3:] == [[], {}, {}]
    assert registry.live() == []
    stats = stack.statistics()
    assert (stats.loads, stats.hits) == (3, 1)


@pytest.mark.parametrize("name", list(STACKS))
def test_pass_through_layers_do_not_change_behaviour(name: str, registry: FakeRegistry) -> None:
    """I8: a stack behaves like the same stack without its plain decorators."""
    reference_name = "C(M)" if "C(" in name else "M"
    stack, _ = build(name, registry)
    reference, _ = build(reference_name, FakeRegistry())
    assert exercise(stack) == exercise(reference)
    assert stack.statistics() == reference.statistics()


@pytest.mark.parametrize("name", list(STACKS))
def test_delete_from_disk_is_forwarded(name: str, registry: FakeRegistry) -> None:
    """remove(delete_from_disk=...) reaches clear_cache unchanged."""
    stack, _ = build(name, registry)
    stack.add_model("a")
    stack.add_model("b")
    stack.remove("a", delete_from_disk=False)
    stack.remove("b")
    assert [m.clear_calls for m in registry.constructed] == [[False], [True]]


@pytest.mark.parametrize("name", CACHED)
def test_cache_methods_reach_through_decorators(name: str, registry: FakeRegistry) -> None:
    """pin_model, lru_order, refresh, ... are delegated to the cache below."""
    stack, _ = build(name, registry)
    stack.pin_model("p")
    stack.add_model("p")
    stack.add_model("a")
    stack.add_model("b")
    assert stack.lru_order() == ["p", "b"]
    stack.refresh("p")
    assert stack.lru_order() == ["b", "p"]
    assert stack.pinned() == frozenset({"p"})
    stack.unpin_model("p")
    assert stack.pinned() == frozenset()
    assert stack.in_flight_loads() == 0
    stack.add_model("c", pin=True)
    assert stack.pinned() == frozenset({"c"})
    assert stack.statistics().evictions_capacity == 2


@pytest.mark.parametrize("name", [n for n in PLAIN if n != "M"])
def test_cache_methods_without_a_cache_are_unsupported(name: str, registry: FakeRegistry) -> None:
    """Without a cache, pin_model etc. raise UnsupportedOperation (an AttributeError)."""
    stack, _ = build(name, registry)
    with pytest.raises(UnsupportedOperation, match="pin_model"):
        stack.pin_model("a")
    assert not hasattr(stack, "lru_order")
    with pytest.raises(AttributeError):
        stack.no_such_method  # noqa: B018


@pytest.mark.parametrize("name", list(STACKS))
def test_decorator_has_no_unlocked_fast_path(registry: FakeRegistry, name: str) -> None:
    """While a removal of X is inside clear_cache, a warm add of X cannot answer (B4).

    With ``lock_timeout=0`` the add cannot wait for the removal either, so it
    must raise LockTimeout; answering "loaded" would be a hit on a model that
    is being torn down.
    """
    manager = ModelManager(registry, lock_timeout=0)
    stack = STACKS[name](manager)
    stack.add_model("x")
    entered, release = threading.Event(), threading.Event()
    registry.clear_gates["x"] = (entered, release)
    thread, outcome = run_in_thread(stack.remove, "x")
    assert entered.wait(30)
    with pytest.raises(LockTimeout):
        stack.add_model("x")
    assert stack.statistics().hits == 0
    release.set()
    join(thread)
    assert "error" not in outcome
    assert stack.keys() == []


def test_decorator_rejects_non_manager() -> None:
    """The wrapped object must provide the manager interface."""
    with pytest.raises(InvalidArgumentType, match="missing add_model"):
        D(object())  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentType):
        WithFixedSizeCache({})  # type: ignore[arg-type]


def test_decorator_exposes_wrapped_and_repr(registry: FakeRegistry) -> None:
    """.manager is the wrapped layer; repr nests."""
    manager = ModelManager(registry)
    stack = D(manager)
    assert stack.manager is manager
    assert repr(stack).startswith("ModelManagerDecorator(ModelManager(")


def test_optional_methods_are_class_descriptors_not_getattr() -> None:
    """Exactly OPTIONAL_METHODS are delegated, and the base defines no __getattr__.

    A class with ``__getattr__`` gets no specialised attribute loads on
    CPython, which would slow every ``self.x`` of every decorator (the cache's
    warm path included) several times over.
    """
    from modelmanager.decorators.base import OPTIONAL_METHODS, _OptionalMethod

    delegated = {name for name, value in vars(D).items() if isinstance(value, _OptionalMethod)}
    assert delegated == OPTIONAL_METHODS
    assert "__getattr__" not in vars(D)
    assert "__getattr__" not in vars(WithFixedSizeCache)
    assert isinstance(D.refresh, _OptionalMethod)  # class access returns the descriptor

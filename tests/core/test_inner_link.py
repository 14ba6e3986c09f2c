"""The seam between layers (``modelmanager.link``): what an outer layer may use of an inner one.

``CountingLayer`` below is a third-party decorator written only against the
public API (``ModelManagerDecorator``, ``InnerLink``, ``LayerLink``): it sees
every cold add through its own ``add_model`` and counts warm adds through the
``warm_hit`` it offers, so a cache stacked on it keeps its warm path.
"""

from __future__ import annotations

import pathlib
import re
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import pytest

import modelmanager.link
from modelmanager import (
    InnerLink,
    InvalidArgumentType,
    LayerLink,
    ModelManager,
    ModelManagerDecorator,
    WarmHit,
    WithFixedSizeCache,
    clear_each,
)

from .helpers import FakeRegistry

ROOT = pathlib.Path(__file__).resolve().parents[2]


class CountingLayer(ModelManagerDecorator):
    """Counts the adds of its stack: cold ones here, warm ones through its link."""

    def __init__(self, manager: Any) -> None:
        super().__init__(manager)
        self.cold_adds: list[str] = []
        self.warm_adds = 0

    def add_model(self, model_id: str, *args: Any, **kwargs: Any) -> None:
        self.cold_adds.append(model_id)
        super().add_model(model_id, *args, **kwargs)

    def inner_link(self) -> InnerLink:
        inner = self.manager.inner_link()
        inner_hit = inner.warm_hit
        if inner_hit is None:
            return LayerLink(try_lifecycle=inner.try_lifecycle, lease_steps=inner.lease_steps)

        def counted(resolved_id: str) -> bool:
            if inner_hit(resolved_id):
                self.warm_adds += 1
                return True
            return False

        warm_hit: WarmHit = counted
        return LayerLink(
            warm_hit=warm_hit, try_lifecycle=inner.try_lifecycle, lease_steps=inner.lease_steps
        )


class PlainOverride(ModelManagerDecorator):
    """Overrides ``add_model`` and ``lifecycle`` and offers nothing of its own."""

    def __init__(self, manager: Any) -> None:
        super().__init__(manager)
        self.adds: list[str] = []
        self.lifecycles: list[str] = []

    def add_model(self, model_id: str, *args: Any, **kwargs: Any) -> None:
        self.adds.append(model_id)
        super().add_model(model_id, *args, **kwargs)

    def lifecycle(self, resolved_id: str) -> AbstractContextManager[None]:
        self.lifecycles.append(resolved_id)
        return super().lifecycle(resolved_id)


def _watch_lifecycle(monkeypatch: pytest.MonkeyPatch, manager: ModelManager) -> list[str]:
    """The ids whose lifecycle ``manager`` is asked for from now on."""
    asked: list[str] = []
    original = manager.lifecycle

    def watched(resolved_id: str) -> AbstractContextManager[None]:
        asked.append(resolved_id)
        return original(resolved_id)

    monkeypatch.setattr(manager, "lifecycle", watched)
    return asked


def test_a_third_party_layer_keeps_the_cache_warm_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Warm adds through a cache over a third-party layer call no inner ``add_model``.

    The layer's own ``warm_hit`` counts them, the manager counts the hits, and
    no id's lifecycle is taken: the cache answered on its warm path.
    """
    manager = ModelManager(FakeRegistry())
    layer = CountingLayer(manager)
    cache = WithFixedSizeCache(layer, max_size=2)
    cache.add_model("a")
    assert layer.cold_adds == ["a"]
    asked = _watch_lifecycle(monkeypatch, manager)
    for _ in range(3):
        cache.add_model("a")
    assert (layer.cold_adds, layer.warm_adds, asked) == (["a"], 3, [])
    assert manager.statistics().hits == 3
    assert cache.lru_order() == ["a"]


def test_a_layer_that_overrides_add_model_sees_every_add() -> None:
    """A layer keeping the base ``inner_link`` but overriding ``add_model`` offers no warm
    hit, so a cache above it calls its ``add_model`` on every add (its override must run)."""
    manager = ModelManager(FakeRegistry())
    layer = PlainOverride(manager)
    link = layer.inner_link()
    assert (link.warm_view, link.warm_hit, link.try_lifecycle) == (None, None, None)
    cache = WithFixedSizeCache(layer, max_size=2)
    cache.add_model("a")
    cache.add_model("a")
    assert layer.adds == ["a", "a"]


def test_a_pass_through_layer_forwards_the_warm_hit_and_the_lifecycle_take() -> None:
    """A plain decorator forwards its inner manager's ``warm_hit`` and ``try_lifecycle``
    (never the ``warm_view``: the records are for the layer right above the manager)."""
    manager = ModelManager(FakeRegistry())
    own = manager.inner_link()
    assert own.warm_view is not None
    assert own.warm_view.records == {}
    link = ModelManagerDecorator(manager).inner_link()
    assert link.warm_view is None
    assert link.warm_hit == own.warm_hit
    assert link.try_lifecycle == own.try_lifecycle
    assert WithFixedSizeCache(manager).inner_link().warm_hit is None


def test_the_forwarded_lifecycle_take_never_waits() -> None:
    """``try_lifecycle`` through a layer: the id's lifecycle, held, or None while another
    thread holds it (nothing changed then: the id can be taken once it is free)."""
    manager = ModelManager(FakeRegistry(), lock_timeout=5)
    try_lifecycle = CountingLayer(manager).inner_link().try_lifecycle
    assert try_lifecycle is not None
    holding, done = threading.Event(), threading.Event()

    def hold() -> None:
        with manager.lifecycle("a"):
            holding.set()
            assert done.wait(timeout=30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(timeout=30)
        assert try_lifecycle("a") is None
    finally:
        done.set()
        holder.join(timeout=30)
    held = try_lifecycle("a")
    assert held is not None
    with held:
        assert manager.lifecycle_snapshot()["a"].held
    assert manager.lifecycle_snapshot() == {}


def test_a_layer_must_offer_a_link() -> None:
    """A would-be layer without ``inner_link`` is refused by the decorators, naming it."""

    @contextmanager
    def nothing() -> Iterator[None]:
        yield

    class NoLink:
        def __init__(self, inner: ModelManager) -> None:
            self.inner = inner

        def __getattr__(self, name: str) -> Any:
            if name == "inner_link":
                raise AttributeError(name)
            return getattr(self.inner, name)

    with pytest.raises(InvalidArgumentType, match="missing inner_link"):
        ModelManagerDecorator(NoLink(ModelManager(FakeRegistry())))


def test_clear_each_attempts_every_id_and_groups_the_failures() -> None:
    """Every id is attempted in order; failures carry a note and come back as one group."""
    done: list[str] = []
    broken = {"b": KeyError("b"), "d": ValueError("d")}

    def remove(resolved_id: str) -> None:
        done.append(resolved_id)
        if resolved_id in broken:
            raise broken[resolved_id]

    with pytest.raises(ExceptionGroup) as failed:
        clear_each(["a", "b", "c", "d"], remove)
    assert done == ["a", "b", "c", "d"]
    assert list(failed.value.exceptions) == [broken["b"], broken["d"]]
    assert "clear() failed for 2 model(s)" in str(failed.value)
    assert broken["b"].__notes__ == ["while clearing: removing model 'b' failed"]
    clear_each([], remove)


def test_clear_each_stops_at_a_base_exception() -> None:
    """A BaseException that is not an Exception (an interrupt) stops the clear at once."""
    done: list[str] = []

    def remove(resolved_id: str) -> None:
        done.append(resolved_id)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        clear_each(["a", "b"], remove)
    assert done == ["a"]


def test_the_interfaces_page_lists_the_seam() -> None:
    """docs/interfaces.md names every public name of ``modelmanager.link``."""
    page = (ROOT / "docs" / "interfaces.md").read_text(encoding="utf-8")
    missing = [name for name in modelmanager.link.__all__ if not re.search(rf"\b{name}\b", page)]
    assert missing == []
    assert "inner_link()" in page


class LifecycleWatchingManager(ModelManager):
    """A manager whose ``lifecycle`` override records every id it is asked for."""

    def __init__(self, registry: Any) -> None:
        super().__init__(registry)
        self.asked: list[str] = []

    def lifecycle(self, resolved_id: str) -> AbstractContextManager[None]:
        self.asked.append(resolved_id)
        return super().lifecycle(resolved_id)


def test_a_manager_that_overrides_lifecycle_offers_no_lifecycle_take() -> None:
    """Its ``try_lifecycle`` would bypass the override: not offered, so a cache's
    eviction takes the victim's lifecycle through the override."""
    manager = LifecycleWatchingManager(FakeRegistry())
    assert manager.inner_link().try_lifecycle is None
    cache = WithFixedSizeCache(manager, max_size=1)
    cache.add_model("a")
    manager.asked.clear()
    cache.add_model("b")  # evicts a
    assert cache.keys() == ["b"]
    assert "a" in manager.asked


class LeaseCountingManager(ModelManager):
    """A manager whose ``lease`` override counts the leases asked of it."""

    def __init__(self, registry: Any) -> None:
        super().__init__(registry)
        self.leases_asked = 0

    def lease(self, model_id: str) -> AbstractContextManager[Any]:
        self.leases_asked += 1
        return super().lease(model_id)


def test_lease_steps_are_offered_while_the_lease_is_the_managers_own() -> None:
    """A manager offers its lease's take and give-back; an override of ``lease`` withdraws
    them; a pass-through layer forwards them, a layer overriding ``lease`` and the cache
    (whose lease adds to the inner one) do not."""
    manager = ModelManager(FakeRegistry())
    steps = manager.inner_link().lease_steps
    assert steps is not None
    manager.add_model("a")
    model = steps.take("a")
    assert model is manager["a"]
    assert manager.lease_counts() == {"a": 1}
    steps.give_back("a")
    assert manager.lease_counts() == {}
    assert ModelManagerDecorator(manager).inner_link().lease_steps == steps
    assert LeaseCountingManager(FakeRegistry()).inner_link().lease_steps is None
    assert WithFixedSizeCache(manager).inner_link().lease_steps is None

    class LeaseOverride(ModelManagerDecorator):
        def lease(self, model_id: str) -> AbstractContextManager[Any]:
            return super().lease(model_id)

    assert LeaseOverride(manager).inner_link().lease_steps is None


def test_a_cache_over_an_overridden_lease_calls_it_once_per_lease() -> None:
    """Without lease steps the cache wraps the inner layer's own ``lease`` (created when the
    cache's lease is), so an override of it runs for every lease."""
    manager = LeaseCountingManager(FakeRegistry())
    cache = WithFixedSizeCache(manager, max_size=2)
    cache.add_model("a")
    lease = cache.lease("a")
    assert manager.leases_asked == 1
    with lease as model:
        assert model is manager["a"]
        assert manager.lease_counts() == {"a": 1}
    assert manager.lease_counts() == {}
    with cache.acquire("b"):
        assert manager.lease_counts() == {"b": 1}
    assert manager.leases_asked == 2


@pytest.mark.parametrize("manager_class", [ModelManager, LeaseCountingManager])
def test_a_cache_lease_is_entered_once_and_given_back_once(manager_class: type) -> None:
    """Through the steps or the inner lease alike: a second entry raises and changes nothing,
    an exit without an entry gives nothing back, and an exit after one gives one lease back."""
    manager = manager_class(FakeRegistry())
    cache = WithFixedSizeCache(manager, max_size=2)
    cache.add_model("a")
    lease = cache.lease("a")
    lease.__exit__(None, None, None)  # never entered: nothing to give back
    with lease:
        with pytest.raises(RuntimeError, match="entered twice"):
            lease.__enter__()
        assert manager.lease_counts() == {"a": 1}
    lease.__exit__(None, None, None)  # already given back
    assert manager.lease_counts() == {}

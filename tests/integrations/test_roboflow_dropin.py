"""The roboflow inference drop-in: upstream's API and errors, the core's behaviour.

Runs where ``inference`` is installed (the roboflow step of .ci/run); skipped,
saying why, elsewhere. Models and registry are small fakes shaped like
upstream's (a registry returning a model class; models with ``task_type``,
``clear_cache`` and ``infer_from_request``).
"""

from __future__ import annotations

import asyncio
import sys
import threading
from typing import Any

import pytest

from models_spec.adapter import TargetUnavailable

try:
    from models_spec.targets.roboflow_inference._environment import import_upstream

    import_upstream()
except TargetUnavailable as error:  # pragma: no cover - depends on the environment
    pytest.skip(f"inference is not installed: {error}", allow_module_level=True)

import inference.core.exceptions as upstream_errors
from inference.core.managers import base as upstream_base
from inference.core.managers.decorators import fixed_size_cache as upstream_cache

from modelmanager.integrations import roboflow_inference as dropin
from modelmanager.integrations.roboflow_inference import _classes

WAIT = 30.0  # bound of every event wait (a hang fails, never a slow machine)


class Request:
    """The attributes upstream's request path reads."""

    api_key = "key"
    disable_model_monitoring = True


class FakeModel:
    task_type = "object-detection"

    def __init__(self, registry: Registry, model_id: str, **kwargs: Any) -> None:
        self.registry = registry
        self.model_id = model_id
        self.kwargs = kwargs
        self.clear_calls: list[bool] = []
        self.running = 0

    def clear_cache(self, delete_from_disk: bool = True) -> None:
        assert self.running == 0, "clear_cache ran while an inference was running"
        self.registry.events.append(("clear", self.model_id))
        error = self.registry.clear_errors.get(self.model_id)
        if error is not None:
            raise error
        self.clear_calls.append(delete_from_disk)

    def infer_from_request(self, request: Any) -> Any:
        self.running += 1
        try:
            self.registry.events.append(("infer", self.model_id))
            hook = self.registry.during_infer.get(self.model_id)
            if hook is not None:
                hook()
            return ("result", self.model_id)
        finally:
            self.running -= 1


class Registry:
    """Upstream's registry protocol: ``get_model(id, api_key, **kw) -> model class``."""

    def __init__(self) -> None:
        self.models: list[FakeModel] = []
        self.events: list[tuple[str, str]] = []
        self.clear_errors: dict[str, BaseException] = {}
        self.during_infer: dict[str, Any] = {}
        self.lookups: list[str] = []

    def get_model(self, model_id: str, api_key: str | None, **kwargs: Any) -> Any:
        self.lookups.append(model_id)
        registry = self

        def model_class(*, model_id: str, api_key: str | None, **kwargs: Any) -> FakeModel:
            model = FakeModel(registry, model_id, **kwargs)
            registry.models.append(model)
            return model

        return model_class


@pytest.fixture
def registry() -> Registry:
    return Registry()


def stack(registry: Registry, max_size: int = 2) -> Any:
    return dropin.WithFixedSizeCache(dropin.ModelManager(registry), max_size=max_size)


# ------------------------------------------------------------------ the API


def test_upstream_api_and_errors(registry: Registry) -> None:
    manager = stack(registry)
    manager.add_model("a/1", "key")
    manager.add_model("a/1", "key")  # warm: no second construction
    assert len(registry.models) == 1
    assert "a/1" in manager
    assert manager.keys() == ["a/1"]
    assert manager["a/1"] is registry.models[0]
    assert manager.get_task_type("a/1") == "object-detection"
    assert manager.infer_from_request_sync("a/1", Request()) == ("result", "a/1")
    assert asyncio.run(manager.infer_from_request("a/1", Request())) == ("result", "a/1")
    with pytest.raises(upstream_errors.InferenceModelNotFound):
        manager.infer_from_request_sync("b/1", Request())
    with pytest.raises(upstream_errors.InferenceModelNotFound):
        manager["b/1"]
    [description] = manager.describe_models()
    assert description.model_id == "a/1"
    manager.remove("a/1")
    manager.remove("a/1")  # unknown id: a no-op
    assert manager.keys() == []
    assert registry.models[0].clear_calls == [True]


def test_the_alias_is_the_key(registry: Registry) -> None:
    manager = stack(registry)
    manager.add_model("project/3", "key", model_id_alias="my-alias")
    assert manager.keys() == ["my-alias"]
    assert registry.lookups == ["my-alias"]  # upstream asks its registry for the alias
    assert registry.models[0].model_id == "project/3"  # and builds the canonical id
    [description] = manager.describe_models()
    assert description.request_aliases == ["project/3"]


def test_models_given_at_construction_are_adopted(registry: Registry) -> None:
    model = FakeModel(registry, "pre/1")
    manager = dropin.WithFixedSizeCache(dropin.ModelManager(registry, models={"pre/1": model}))
    assert manager["pre/1"] is model
    assert manager.core.lru_order() == ["pre/1"]
    with pytest.raises(AttributeError, match="add_model"):
        manager.model_manager._models = {}
    assert dict(manager.model_manager._models) == {"pre/1": model}


def test_a_decorator_over_a_stock_manager_is_refused(registry: Registry) -> None:
    with pytest.raises(dropin.IntegrationError, match="drop-in managers only"):
        dropin.WithFixedSizeCache(_classes.UPSTREAM_MANAGER(registry))


# ------------------------------------------------------------ LRU, bound, disk


def test_lru_eviction_and_disk_cache_cleanup(
    registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(upstream_cache, "DISK_CACHE_CLEANUP", False)
    manager = stack(registry, max_size=2)
    manager.add_model("a/1", "key")
    manager.add_model("b/1", "key")
    manager.infer_from_request_sync("a/1", Request())  # a is now the most recent
    manager.add_model("c/1", "key")  # evicts b, one model for one slot
    assert sorted(manager.keys()) == ["a/1", "c/1"]
    assert manager.core.lru_order() == ["a/1", "c/1"]
    evicted = next(m for m in registry.models if m.model_id == "b/1")
    assert evicted.clear_calls == [False]  # DISK_CACHE_CLEANUP=False keeps the weights


def test_pinned_models_are_not_evicted(registry: Registry) -> None:
    manager = stack(registry, max_size=1)
    manager.add_model("a/1", "key")
    manager.pin_model("a/1")
    manager.add_model("b/1", "key")  # over the bound: every other model is pinned
    assert sorted(manager.keys()) == ["a/1", "b/1"]
    manager.unpin_model("a/1")  # the bound comes back, least recent first
    assert manager.keys() == ["b/1"]


def test_clear_tries_every_model(registry: Registry) -> None:
    manager = stack(registry, max_size=4)
    for model_id in ("a/1", "b/1", "c/1"):
        manager.add_model(model_id, "key")
    failure = RuntimeError("disk busy")
    registry.clear_errors["a/1"] = failure
    with pytest.raises(RuntimeError) as raised:
        manager.clear()
    assert raised.value is failure
    assert manager.keys() == ["a/1"]  # b and c went although a failed first


# ------------------------------------------------------------------- leases


def test_an_async_request_holds_a_lease_across_its_awaits(registry: Registry) -> None:
    manager = stack(registry)
    manager.add_model("a/1", "key")
    seen: list[dict[str, int]] = []
    registry.during_infer["a/1"] = lambda: seen.append(manager.core.lease_counts())

    async def request() -> Any:
        return await manager.infer_from_request("a/1", Request())

    asyncio.run(request())
    assert seen == [{"a/1": 1}]  # one lease, taken once for the whole stack
    assert manager.core.lease_counts() == {}


def test_remove_waits_for_a_running_request(registry: Registry) -> None:
    """B17 on the real path: no clear_cache while the model runs (FakeModel asserts it)."""
    manager = stack(registry)
    manager.add_model("a/1", "key")
    running, finish = threading.Event(), threading.Event()

    def block() -> None:
        running.set()
        assert finish.wait(WAIT)

    registry.during_infer["a/1"] = block
    request = threading.Thread(target=manager.infer_from_request_sync, args=("a/1", Request()))
    request.start()
    assert running.wait(WAIT)
    removal = threading.Thread(target=manager.remove, args=("a/1",))
    removal.start()
    finish.set()
    request.join(WAIT)
    removal.join(WAIT)
    assert registry.events == [("infer", "a/1"), ("clear", "a/1")]
    assert manager.keys() == []


def test_a_lease_timeout_is_upstreams_lock_error(
    registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(upstream_base, "MODEL_LOCK_ACQUIRE_TIMEOUT", 0.0)
    manager = stack(registry)
    manager.add_model("a/1", "key")
    errors: list[BaseException] = []

    def remove_while_running() -> None:
        try:
            manager.remove("a/1")
        except BaseException as error:
            errors.append(error)

    registry.during_infer["a/1"] = remove_while_running
    manager.infer_from_request_sync("a/1", Request())
    [error] = errors
    assert isinstance(error, upstream_errors.ModelManagerLockAcquisitionError)
    assert manager.keys() == ["a/1"]  # nothing changed


# ------------------------------------------------------- memory reclamation


def test_memory_is_reclaimed_outside_every_lock(
    registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = stack(registry, max_size=1)
    held_at_collect: list[dict[str, Any]] = []
    now = [100.0]

    class RecordingGC:
        @staticmethod
        def collect() -> int:
            held_at_collect.append(manager.core.lifecycle_snapshot())
            return 0

    monkeypatch.setattr(_classes, "gc", RecordingGC)
    monkeypatch.setattr(_classes, "_SURVIVORS", [])
    monkeypatch.setattr(_classes, "_clock", lambda: now[0])
    manager.add_model("a/1", "key")
    assert held_at_collect == []  # nothing unloaded, nothing to reclaim
    manager.add_model("b/1", "key")  # evicts a, which the registry keeps alive
    assert held_at_collect == []  # a reader may still hold it for a moment
    now[0] += _classes.SURVIVOR_GRACE / 2
    manager.add_model("c/1", "key")  # evicts b; a alive for less than the grace
    assert held_at_collect == []
    now[0] += _classes.SURVIVOR_GRACE / 2
    manager.add_model("d/1", "key")  # evicts c; a still alive after the grace (a cycle)
    assert held_at_collect == [{}]  # once, with no lifecycle held by anyone
    manager.add_model("e/1", "key")  # evicts d: the collection forgot every survivor
    assert held_at_collect == [{}]


def test_an_evicted_model_freed_by_reference_counting_costs_no_collection(
    registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = stack(registry, max_size=1)
    collections: list[int] = []

    class RecordingGC:
        @staticmethod
        def collect() -> int:
            collections.append(len(registry.models))
            return 0

    monkeypatch.setattr(_classes, "gc", RecordingGC)
    monkeypatch.setattr(_classes, "_SURVIVORS", [])
    for model_id in ("a/1", "b/1", "c/1", "d/1"):
        manager.add_model(model_id, "key")
        registry.models.clear()  # the registry forgets: an evicted model dies when unloaded
    assert collections == []  # three evictions, nothing left for a collection to free


# ----------------------------------------------------------------- install


def test_install_points_upstreams_module_paths_at_the_drop_in() -> None:
    names = (
        (upstream_base, "ModelManager"),
        (upstream_cache, "WithFixedSizeCache"),
        (sys.modules["inference.core.managers.decorators.base"], "ModelManagerDecorator"),
    )
    originals = [getattr(module, name) for module, name in names]
    if any(name in sys.modules for name in dropin.SUBCLASS_MODULES):
        pytest.skip("a subclass module was imported earlier in this session")
    dropin.install()
    try:
        assert dropin.installed()
        for module, name in names:
            assert getattr(module, name) is getattr(dropin, name)
        dropin.install()  # idempotent
    finally:
        dropin.uninstall()
    assert [getattr(module, name) for module, name in names] == originals
    assert not dropin.installed()


def test_install_refuses_after_a_subclass_module_was_imported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    early = dropin.SUBCLASS_MODULES[0]
    monkeypatch.setitem(sys.modules, early, sys.modules[__name__])
    with pytest.raises(dropin.IntegrationError, match=early):
        dropin.install()
    assert not dropin.installed()


def test_clear_raises_several_failures_as_a_group(registry: Registry) -> None:
    manager = stack(registry, max_size=4)
    for model_id in ("a/1", "b/1", "c/1"):
        manager.add_model(model_id, "key")
    registry.clear_errors["a/1"] = RuntimeError("a")
    registry.clear_errors["c/1"] = RuntimeError("c")
    with pytest.raises(ExceptionGroup) as raised:
        manager.clear()
    assert [str(error) for error in raised.value.exceptions] == ["a", "c"]
    assert sorted(manager.keys()) == ["a/1", "c/1"]


def test_a_decorator_loads_an_alias_whose_model_id_is_loaded(registry: Registry) -> None:
    """B10 at upstream's decorator: it tested the model id, not the key, and returned."""
    manager = dropin.ModelManagerDecorator(stack(registry))
    manager.add_model("c/1", "key")
    manager.add_model("c/1", "key", model_id_alias="alias")
    assert sorted(manager.keys()) == ["alias", "c/1"]
    manager.pin_model("alias")  # passes through to the cache beneath
    assert manager.model_manager.core.pinned() == frozenset({"alias"})


def test_lease_and_acquire(registry: Registry) -> None:
    manager = stack(registry)
    with manager.acquire("a/1", "key") as model:
        assert model is manager["a/1"]
        assert manager.core.lease_counts() == {"a/1": 1}
        # a request inside reuses the lease
        registry.during_infer["a/1"] = lambda: registry.events.append(
            ("leases", str(manager.core.lease_counts()))
        )
        manager.infer_from_request_sync("a/1", Request())
    assert ("leases", "{'a/1': 1}") in registry.events
    assert manager.core.lease_counts() == {}
    with pytest.raises(upstream_errors.InferenceModelNotFound), manager.lease("b/1"):
        pass

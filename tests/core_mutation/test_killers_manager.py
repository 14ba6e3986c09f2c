"""Killers for mutants of `modelmanager.manager` (docs/mutation.md)."""

from __future__ import annotations

from typing import Any

import pytest

import modelmanager.manager as manager_module
from modelmanager import (
    InvalidArgumentType,
    LockTimeout,
    ModelManager,
    ModelManagerDecorator,
    WithFixedSizeCache,
)
from modelmanager.lifecycle import LifecycleTable
from models_spec.fakes import Script, ScriptedRegistry, ScriptedUnloadError


def _spy_on_lifecycle(monkeypatch: pytest.MonkeyPatch, manager: ModelManager) -> list[str]:
    """Record every id whose lifecycle ``manager`` is asked for (the list returned)."""
    entered: list[str] = []
    original = manager.lifecycle

    def spy(resolved_id: str) -> Any:
        entered.append(resolved_id)
        return original(resolved_id)

    monkeypatch.setattr(manager, "lifecycle", spy)
    return entered


@pytest.mark.parametrize(
    "kwargs",
    [{"model_id": 5}, {"api_key": 5}, {"model_id_alias": 5}],
    ids=["int-id", "int-api-key", "int-alias"],
)
def test_acquire_rejects_bad_arguments_at_the_call(kwargs: dict[str, Any]) -> None:
    """``acquire`` validates its arguments when called, not when the context is entered.

    Kills ``acquire`` passing ``None`` to one of its checks (the add inside
    the context would only raise later, on entry).
    """
    manager = ModelManager(ScriptedRegistry())
    with pytest.raises(InvalidArgumentType):
        manager.acquire(**{"model_id": "a", **kwargs})


class _CountingManager(ModelManager):
    """A manager whose own ``add_model`` must see every add (it overrides it)."""

    def __init__(self, registry: Any) -> None:
        super().__init__(registry)
        self.adds: list[str] = []

    def add_model(self, model_id: str, *args: Any, **kwargs: Any) -> None:
        self.adds.append(model_id)
        super().add_model(model_id, *args, **kwargs)


def test_a_manager_offers_its_warm_step_unless_add_model_is_overridden(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``inner_link().warm_hit``: the plain manager's warm hit; None under an override.

    Through a pass-through decorator, a cache's warm add of a plain manager
    records the hit without entering the id's lifecycle; over a subclass that
    overrides ``add_model``, every add reaches the override.
    """
    manager = ModelManager(ScriptedRegistry())
    assert manager.inner_link().warm_hit is not None
    cache = WithFixedSizeCache(ModelManagerDecorator(manager), max_size=2)
    cache.add_model("a")
    entered = _spy_on_lifecycle(monkeypatch, manager)
    cache.add_model("a")
    assert entered == []
    assert manager.describe_models()[0].hits == 1

    counting = _CountingManager(ScriptedRegistry())
    assert counting.inner_link().warm_hit is None
    over_counting = WithFixedSizeCache(ModelManagerDecorator(counting), max_size=2)
    over_counting.add_model("a")
    over_counting.add_model("a")
    assert counting.adds == ["a", "a"]


class _GuardedDict(dict[str, Any]):
    """A dict refusing any change made while ``lock`` is free (what it holds is guarded by it)
    and, given a lifecycle table, while the key's lifecycle is not held."""

    def __init__(self, lock: Any, what: str, lifecycle: LifecycleTable | None = None) -> None:
        super().__init__()
        self._lock = lock
        self._what = what
        self._lifecycle = lifecycle

    def _check(self, key: str) -> None:
        assert self._lock.locked(), f"{self._what} of {key!r} changed without the state lock"
        if self._lifecycle is not None:
            held = self._lifecycle.held_locked(key)
            assert held, f"{self._what} of {key!r} changed outside its lifecycle"

    def __setitem__(self, key: str, value: Any) -> None:
        self._check(key)
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self._check(key)
        super().__delitem__(key)

    def pop(self, key: str, *default: Any) -> Any:
        self._check(key)
        return super().pop(key, *default)

    def values(self) -> Any:  # the manager sums the hits over its records with it
        assert self._lock.locked(), f"{self._what}s summed without the state lock"
        return super().values()


class _GuardedRecord(manager_module._Loaded):
    """A registered model's record whose hits and unloading mark change under ``lock``."""

    __slots__ = ()
    lock: Any

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("hits", "unloading") and hasattr(self, name):  # set once unguarded: new
            assert self.lock.locked(), f"{name} of a record changed without the state lock"
        super().__setattr__(name, value)


def _guarded_manager(monkeypatch: pytest.MonkeyPatch) -> ModelManager:
    manager = ModelManager(ScriptedRegistry(Script(unload_failures={"a": [1]})))
    lock = manager._state_lock
    manager._models = _GuardedDict(lock, "the registration", manager._lifecycle)
    manager._leases._counts = _GuardedDict(lock, "the lease count")
    monkeypatch.setattr(_GuardedRecord, "lock", lock, raising=False)
    monkeypatch.setattr(manager_module, "_Loaded", _GuardedRecord)
    return manager


def test_registrations_and_leases_change_under_the_state_lock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The registry, the records' hits and unloading marks and the lease counts change
    only under the state lock, on every path.

    The warm paths read them under the state lock alone, so a registration
    or a lease count written outside it could be seen half-made, and a hit
    counted outside it lost (at CPython's preemption points); a registration
    is also made under the id's lifecycle (else a second add of the id could
    construct it again before it is registered, I2). Kills ``add_model``
    registering after its lifecycle ends, ``_register``, ``_unregister`` and
    ``_warm_hit`` without the state lock (dropped, or the write moved past
    its release), ``remove`` marking or unmarking a record without it,
    ``statistics`` summing the hits without it (a hit moving from a record to
    the unregistered total meanwhile would count twice), and ``_take_lease``
    without it, on the warm path (the acquire/release pair dropped) and on
    the path under the id's lifecycle (the state lock dropped from the
    ``with``).
    """
    manager = _guarded_manager(monkeypatch)
    manager.add_model("a")  # _register
    manager.add_model("a")  # a warm hit
    cache = WithFixedSizeCache(manager, max_size=4)
    cache.add_model("a")  # the cache's warm hit, counted on the manager's record
    assert manager.statistics().hits == 2
    with manager.lease("a") as model:  # the warm lease path
        assert model is manager["a"]
    with manager.lifecycle("a"), manager.lease("a") as held:  # lifecycle held: the locked path
        assert held is manager["a"]
    with manager.acquire("b") as acquired:  # load and lease under b's lifecycle
        assert acquired is manager["b"]
    assert manager.lease_counts() == {}
    with pytest.raises(ScriptedUnloadError):
        manager.remove("a")  # marked unloading, then unmarked
    manager.remove("a")  # _unregister
    assert manager.keys() == ["b"]
    assert manager.statistics().hits == 2


def test_a_cache_clear_removes_without_restoring_in_between() -> None:
    """A cache's ``clear`` removes every id itself; no restoration evicts one midway.

    Over its bound (``on_full="proceed"`` admitted ``b`` while ``a`` is
    leased), a clear whose first removal fails (``a`` is still leased) goes
    on to remove ``b``. Kills ``clear_each`` ignoring the ``remove`` it is
    given (the cache's public ``remove``, which restores the bound after
    each removal, would evict ``b`` instead of removing it).
    """
    manager = ModelManager(ScriptedRegistry(), lock_timeout=0)
    cache = WithFixedSizeCache(manager, max_size=1, on_full="proceed")
    cache.add_model("a")
    with cache.lease("a"):
        cache.add_model("b")  # over the bound: a is leased
        assert cache.keys() == ["a", "b"]
        with pytest.raises(ExceptionGroup) as failed:
            cache.clear()
    assert [type(e) for e in failed.value.exceptions] == [LockTimeout]
    assert cache.keys() == ["a"]
    stats = cache.statistics()
    assert (stats.removals, stats.evictions_restore) == (1, 0)


def test_a_lease_on_a_live_model_takes_the_warm_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lease of a registered model whose lifecycle nobody holds is taken under the
    state lock alone, never entering the id's lifecycle (the module's warm-path
    contract); with the lifecycle held, it takes the locked path.

    Kills ``_take_lease`` refusing the warm path for live models (the record
    looked up as None or under another key, or "live" inverted): the locked
    path gives the same lease, but waits behind any lifecycle holder.
    """
    manager = ModelManager(ScriptedRegistry())
    manager.add_model("a")
    original = manager.lifecycle
    entered = _spy_on_lifecycle(monkeypatch, manager)
    with manager.lease("a") as model:
        assert model is manager["a"]
        assert manager.lease_counts() == {"a": 1}
    assert entered == []
    with original("a"), manager.lease("a"):
        assert entered == ["a"]
    assert manager.lease_counts() == {}


class _WarmCountingManager(ModelManager):
    """A manager whose own warm step must see every warm add (it overrides it)."""

    def __init__(self, registry: Any) -> None:
        super().__init__(registry)
        self.warm: list[str] = []

    def _warm_hit(self, resolved_id: str) -> bool:
        self.warm.append(resolved_id)
        return super()._warm_hit(resolved_id)


def test_a_cache_directly_over_a_manager_runs_its_overrides_on_warm_adds() -> None:
    """A manager offers its state lock and records (``inner_link().warm_view``) only while it
    keeps both ``add_model`` and ``_warm_hit``; a cache over a subclass that
    overrides either one reaches the override on every warm add.

    Kills ``inner_link`` offering them when only one of the two is overridden.
    """
    counting = _CountingManager(ScriptedRegistry())
    assert counting.inner_link().warm_view is None
    cache = WithFixedSizeCache(counting, max_size=2)
    cache.add_model("a")
    cache.add_model("a")
    assert counting.adds == ["a", "a"]

    warm = _WarmCountingManager(ScriptedRegistry())
    assert warm.inner_link().warm_view is None
    over_warm = WithFixedSizeCache(warm, max_size=2)
    over_warm.add_model("a")
    warm.warm.clear()
    over_warm.add_model("a")
    assert warm.warm == ["a"]
    assert warm.describe_models()[0].hits == 1


@pytest.mark.parametrize("alias", [None, "x"], ids=["no-alias", "alias"])
def test_add_model_refuses_a_model_id_that_is_not_a_str_naming_it(alias: str | None) -> None:
    """``add_model(5)`` raises InvalidArgumentType naming ``model_id``, also with a valid
    alias (the key would be fine, the canonical id is not), and loads nothing.

    Kills the fast pre-check letting a non-str ``model_id`` skip the full
    checks (the alias's factory would be called with ``model_id=5``).
    """
    registry = ScriptedRegistry()
    manager = ModelManager(registry)
    with pytest.raises(InvalidArgumentType, match=r"^model_id must be a non-empty str"):
        manager.add_model(5, model_id_alias=alias)  # type: ignore[arg-type]
    assert manager.keys() == []
    assert manager.statistics().loads == 0


def test_lifecycle_refuses_a_bad_id_naming_its_parameter() -> None:
    """``lifecycle(5)`` raises InvalidArgumentType naming ``resolved_id`` (what was
    wrong), and changes nothing.

    Kills ``lifecycle`` validating under another parameter name.
    """
    manager = ModelManager(ScriptedRegistry())
    with pytest.raises(InvalidArgumentType, match=r"^resolved_id must be a non-empty str"):
        manager.lifecycle(5)  # type: ignore[arg-type]
    assert manager.lifecycle_snapshot() == {}


class _UnloadRecordingManager(ModelManager):
    """Records what its ``_unload`` extension point is given."""

    def __init__(self, registry: Any) -> None:
        super().__init__(registry)
        self.unloads: list[tuple[str, bool]] = []

    def _unload(self, resolved_id: str, model: Any, delete_from_disk: bool) -> None:
        self.unloads.append((resolved_id, delete_from_disk))
        super()._unload(resolved_id, model, delete_from_disk)


def test_the_unload_extension_point_is_given_the_id_being_removed() -> None:
    """``_unload(resolved_id, model, delete_from_disk)`` receives the id being removed
    (a known-bug variant overriding one step relies on it).

    Kills ``remove`` passing None as the id.
    """
    manager = _UnloadRecordingManager(ScriptedRegistry())
    manager.add_model("a")
    manager.remove("a", delete_from_disk=False)
    assert manager.unloads == [("a", False)]


def test_a_lease_gives_back_once_even_if_exited_twice() -> None:
    """Exiting a lease context a second time gives nothing back: another holder's
    lease on the same model still protects it.

    Kills ``_Lease.__exit__`` leaving itself marked as entered (the second
    exit would drop the other holder's lease, and the model could be
    removed under it).
    """
    manager = ModelManager(ScriptedRegistry(), lock_timeout=0)
    manager.add_model("a")
    first, second = manager.lease("a"), manager.lease("a")
    with second:
        with first:
            assert manager.lease_counts() == {"a": 2}
        first.__exit__(None, None, None)
        assert manager.lease_counts() == {"a": 1}
        with pytest.raises(LockTimeout):
            manager.remove("a")
    assert manager.lease_counts() == {}


def test_an_acquire_whose_body_raises_gives_its_lease_back_and_raises() -> None:
    """The body's error leaves the ``with`` unchanged, and the lease is given back.

    Kills ``_give_back_after_raise`` doing nothing (B19: the lease outlives
    its context, so the model can never be removed) and the acquire's
    ``except`` branch swallowing the error.
    """
    manager = ModelManager(ScriptedRegistry(), lock_timeout=0)
    failure = RuntimeError("inference failed")
    held: list[dict[str, int]] = []

    def infer() -> None:
        with manager.acquire("a"):
            held.append(manager.lease_counts())
            raise failure

    with pytest.raises(RuntimeError) as raised:
        infer()
    assert raised.value is failure
    assert held == [{"a": 1}]
    assert manager.lease_counts() == {}
    manager.remove("a")
    assert manager.keys() == []

"""Tests written to kill mutants that survived the invariant suite (docs/mutation.md).

Each test pins down one documented behaviour of the core that the rest of the
fast suite did not observe; the mutants each kills are named in its
docstring.  Concurrency is ordered by lockstep (exhaustive DFS over a small
scenario, no timeouts while some thread can run), never by sleeping.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import lockstep
from modelmanager import (
    InvalidArgumentType,
    LockTimeout,
    ModelManager,
    ModelManagerDecorator,
    ModelNotFound,
    ScriptedMemoryProbe,
    WithFixedSizeCache,
)
from modelmanager.decorators._cache_book import IdState
from modelmanager.leases import LeaseTable
from modelmanager.lifecycle import LifecycleTable
from models_spec.adapter import CoreAdapter
from models_spec.fakes import (
    UNLOAD,
    Script,
    ScriptedLoadError,
    ScriptedRegistry,
    ScriptedUnloadError,
)

CORE_MODULES = CoreAdapter(0).patch_modules()


def _stack(
    max_size: int = 4, *, outer: bool = False, script: Script | None = None, **cache: Any
) -> tuple[Any, WithFixedSizeCache, ModelManager, ScriptedRegistry]:
    registry = ScriptedRegistry(script)
    manager = ModelManager(registry)
    cache_layer = WithFixedSizeCache(manager, max_size=max_size, **cache)
    stack: Any = ModelManagerDecorator(cache_layer) if outer else cache_layer
    return stack, cache_layer, manager, registry


class _LifecycleSpy:
    """Counts entries into the manager's per-id lifecycle."""

    def __init__(self, manager: ModelManager, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[str] = []
        original = manager.lifecycle

        def spy(resolved_id: str) -> Any:
            self.calls.append(resolved_id)
            return original(resolved_id)

        monkeypatch.setattr(manager, "lifecycle", spy)


# ------------------------------------------------------------- the warm path


@pytest.mark.parametrize("outer", [False, True], ids=["cache", "decorator-over-cache"])
def test_warm_add_answers_without_the_lifecycle(
    outer: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warm add answers under the LRU lock alone (module doc, "The warm path").

    Kills the mutants that disable or break the fast path (``_fast_warm_hit``
    conditions, ``inner_link``, ``_fast_warm_hit_unpinned``): the
    full protocol would give the same result, but through the lifecycle.
    """
    stack, cache, manager, _ = _stack(outer=outer)
    stack.add_model("a")
    stack.add_model("b")
    spy = _LifecycleSpy(manager, monkeypatch)
    stack.add_model("a")
    assert spy.calls == []
    assert cache.lru_order() == ["b", "a"]
    assert cache.pinned() == frozenset()  # the unpinned hook never pins


def test_warm_path_is_kept_by_a_subclass_that_overrides_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``__init_subclass__`` keeps the warm path for subclasses that keep its steps."""

    class Plain(WithFixedSizeCache):
        pass

    manager = ModelManager(ScriptedRegistry())
    cache = Plain(manager, max_size=2)
    cache.add_model("a")
    spy = _LifecycleSpy(manager, monkeypatch)
    cache.add_model("a")
    assert spy.calls == []


def test_warm_add_with_pin_pins_the_resolved_id() -> None:
    """``add_model(..., pin=True)`` of a loaded id pins it (warm path)."""
    stack, cache, _, _ = _stack()
    stack.add_model("a", model_id_alias="x")
    stack.add_model("a", model_id_alias="x", pin=True)
    assert cache.pinned() == frozenset({"x"})


@pytest.mark.parametrize("outer", [False, True], ids=["cache", "decorator-over-cache"])
def test_a_use_rescues_a_chosen_victim(outer: bool) -> None:
    """A warm hit on a chosen-but-uncommitted victim rescues it (EVICTING -> COMMITTED)."""
    stack, cache, _, _ = _stack(outer=outer)
    stack.add_model("a")
    cache._book.choose("a", "z")  # chosen by an eviction that has not committed yet
    stack.add_model("a")
    assert cache._book.state("a") is IdState.COMMITTED
    assert not cache._book.evictions_undecided()


# ------------------------------------------------------------------ acquire


def test_acquire_passes_alias_pin_and_api_key_through() -> None:
    """``acquire`` loads under the alias, pins when asked and hands the api key over."""
    stack, cache, _, registry = _stack()
    with stack.acquire("a", api_key="k", model_id_alias="x", pin=True) as model:
        assert model.resolved_id == "x"
        assert model.model_id == "a"
        assert model.api_key == "k"
        assert stack.lease_counts() == {"x": 1}
    assert cache.pinned() == frozenset({"x"})
    assert registry.ghost.construct_attempts == {"x": 1}


# ------------------------------------------------------------ memory rounds


def test_free_fraction_at_the_threshold_is_no_pressure() -> None:
    """Pressure means *below* the threshold: a reading equal to it evicts nothing."""
    probe = ScriptedMemoryProbe([0.5, 0.5, 0.5])
    stack, cache, _, _ = _stack(memory_probe=probe, memory_free_threshold=0.5)
    stack.add_model("a")
    stack.add_model("b")
    assert cache.lru_order() == ["a", "b"]


def test_a_memory_round_evicts_at_most_three() -> None:
    """Memory pressure evicts in rounds of up to 3, re-measuring in between."""
    readings = [None] * 5 + [0.1, 0.9]  # five quiet loads, then one round of pressure
    probe = ScriptedMemoryProbe(readings)
    stack, cache, _, _ = _stack(max_size=8, memory_probe=probe, memory_free_threshold=0.5)
    for model_id in "abcde":
        stack.add_model(model_id)
    stack.add_model("f")
    assert cache.lru_order() == ["d", "e", "f"]


# ------------------------------------------------------- secondary failures


def test_failed_rollback_is_attached_to_the_eviction_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A failing rollback never replaces the eviction's error; it is attached as a note (I16)."""
    script = Script(unload_failures={"a": [1]})
    stack, cache, _, _ = _stack(max_size=1, script=script)
    stack.add_model("a")

    def broken_rollback(victims: list[str], batch: object) -> None:
        raise RuntimeError("rollback broke")

    monkeypatch.setattr(cache, "_rollback_eviction", broken_rollback)
    with pytest.raises(ScriptedUnloadError) as caught:
        stack.add_model("b")
    notes = "\n".join(getattr(caught.value, "__notes__", []))
    assert "rolling back a failed eviction" in notes
    assert "rollback broke" in notes


# ----------------------------------------------------------------- leases


def test_lease_table_count() -> None:
    """``LeaseTable.count`` is the number of leases held on one id (0 when none)."""
    table = LeaseTable()
    assert table.count("a") == 0
    table.take("a")
    table.take("a")
    assert table.count("a") == 2
    table.give_back("a")
    assert table.count("a") == 1
    assert table.count("b") == 0


# ------------------------------------------------ concurrency, under lockstep


def _explore(scenario: Callable[[], None], *, budget: int = 2000) -> lockstep.ExploreResult:
    return lockstep.explore(
        scenario,
        strategy=lockstep.DFSStrategy(preemption_bound=2, timeouts=False),
        budget=budget,
        patch=CORE_MODULES,
        progress=False,
    )


@pytest.mark.parametrize("outer", [False, True], ids=["cache", "decorator-over-cache"])
def test_warm_paths_wait_for_a_busy_lru_lock(outer: bool) -> None:
    """A warm add and a refresh wait (bounded) for a busy LRU lock, then succeed.

    Kills mutants of the "try, then wait with the timeout" acquisitions in
    ``_fast_warm_hit`` and ``refresh`` (a wait that succeeds reported as a
    timeout, a non-blocking call given a timeout).
    """

    def scenario() -> None:
        stack, cache, _, _ = _stack(queue_lock_timeout=5.0, outer=outer)
        stack.add_model("a")
        stack.add_model("b")

        def hold() -> None:
            with cache._lru_lock:
                lockstep.checkpoint("holding the LRU lock")

        holder = lockstep.spawn(hold, name="holder")
        stack.add_model("a")
        stack.refresh("b")
        holder.join()
        assert cache.lru_order() == ["a", "b"]

    result = _explore(scenario)
    assert result.failure is None, str(result.failure)
    assert result.exhausted


@pytest.mark.parametrize("outer", [False, True], ids=["cache", "decorator-over-cache"])
def test_warm_paths_time_out_on_a_held_lru_lock(outer: bool) -> None:
    """A warm add gives up with LockTimeout when the LRU lock stays held (I14)."""

    def scenario() -> None:
        stack, cache, _, _ = _stack(queue_lock_timeout=1.0, outer=outer)
        stack.add_model("a")
        done = lockstep.threading.Event()

        def hold() -> None:
            with cache._lru_lock:
                done.wait()

        holder = lockstep.spawn(hold, name="holder")
        lockstep.checkpoint("let the holder take the lock")
        if cache._lru_lock.locked():
            with pytest.raises(LockTimeout):
                stack.add_model("a")
            with pytest.raises(LockTimeout):
                stack.refresh("a")
        done.set()
        holder.join()

    result = _explore(scenario)
    assert result.failure is None, str(result.failure)


def test_admission_waits_for_an_in_flight_load_then_proceeds() -> None:
    """A cold add finding the cache full of in-flight loads waits and then succeeds.

    Kills ``_wait_locked`` mutants that give up early (any remaining time
    below a second treated as none) or never give up.
    """

    def scenario() -> None:
        stack, cache, _, _ = _stack(max_size=1, queue_lock_timeout=0.5)
        other = lockstep.spawn(stack.add_model, "a", name="adder")
        stack.add_model("b")
        other.join()
        assert len(cache.lru_order()) == 1

    result = _explore(scenario, budget=3000)
    assert result.failure is None, str(result.failure)


def test_admission_gives_up_when_the_in_flight_load_never_ends() -> None:
    """The bounded wait for a slot raises LockTimeout instead of waiting forever (I14)."""

    def scenario() -> None:
        release = lockstep.threading.Event()
        script = Script()
        registry = ScriptedRegistry(script)

        def slow_factory(model_id: str | None = None, api_key: object = None, **kw: Any) -> Any:
            release.wait()
            return registry.get_model("a")(model_id=model_id, api_key=api_key)

        manager = ModelManager({"a": slow_factory, "b": registry.get_model("b")})
        cache = WithFixedSizeCache(manager, max_size=1, queue_lock_timeout=0.5)
        loader = lockstep.spawn(cache.add_model, "a", name="slow loader")
        lockstep.checkpoint("let the slow load start")
        if cache.in_flight_loads():
            with pytest.raises(LockTimeout):
                cache.add_model("b")
        release.set()
        loader.join()

    result = _explore(scenario, budget=3000)
    assert result.failure is None, str(result.failure)


def test_eviction_never_unloads_a_model_leased_meanwhile() -> None:
    """A lease taken after a victim was chosen stops its eviction (I13).

    Kills the mutants that break the final lease check in ``_evict_one``.
    """

    def scenario() -> None:
        script = Script()
        stack, _cache, _, registry = _stack(max_size=1, script=script)
        stack.add_model("a")
        ghost = registry.ghost

        def lease_a() -> None:
            try:
                with stack.lease("a") as model, ghost.use(model):
                    lockstep.checkpoint("using a")
            except KeyError:
                pass  # evicted first: nothing to lease

        user = lockstep.spawn(lease_a, name="user")
        stack.add_model("b")
        user.join()
        assert not ghost.cleared_in_use, ghost.cleared_in_use

    result = _explore(scenario, budget=3000)
    assert result.failure is None, str(result.failure)


def test_unload_failure_script_is_used() -> None:
    """Sanity check of the fakes these tests rely on."""
    script = Script(unload_failures={"a": [1]})
    assert script.fails(UNLOAD, "a", 1)


# ------------------------------------------------- second round of killers


def test_failed_slot_release_is_attached_to_the_load_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A failing slot release after a failed load is attached to the load's error (I16)."""
    stack, cache, _, _ = _stack(script=Script(load_failures={"a": [1]}))

    def broken_release(resolved_id: str) -> None:
        raise RuntimeError("release broke")

    monkeypatch.setattr(cache, "_release_slot", broken_release)
    with pytest.raises(ScriptedLoadError) as caught:
        stack.add_model("a")
    notes = "\n".join(getattr(caught.value, "__notes__", []))
    assert "releasing the slot of 'a'" in notes
    assert "release broke" in notes


@pytest.mark.parametrize("layer", ["manager", "cache"])
@pytest.mark.parametrize(
    "kwargs",
    [{"model_id": 5}, {"model_id": b"a"}, {"api_key": 5}, {"model_id_alias": 5}],
    ids=["int-id", "bytes-id", "int-api-key", "int-alias"],
)
def test_bad_arguments_are_rejected_by_add_and_acquire(layer: str, kwargs: dict[str, Any]) -> None:
    """Wrongly typed ids, api keys and aliases raise InvalidArgumentType, nothing loaded.

    Kills the mutants of the inline "common case" argument checks that would
    let a wrongly typed value skip the full validation.
    """
    stack, _, manager, registry = _stack()
    target: Any = manager if layer == "manager" else stack
    arguments = {"model_id": "a", **kwargs}
    with pytest.raises(InvalidArgumentType):
        target.add_model(**arguments)
    with pytest.raises(InvalidArgumentType):
        target.acquire(**arguments).__enter__()
    assert registry.ghost.construct_attempts == {}
    assert manager.keys() == []


def test_model_not_found_names_the_id() -> None:
    """ModelNotFound carries the id: from a mapping registry without it, and from a lease."""
    manager = ModelManager({})
    with pytest.raises(ModelNotFound) as missing_factory:
        manager.add_model("zz")
    assert missing_factory.value.model_id == "zz"
    assert "zz" in str(missing_factory.value)
    with pytest.raises(ModelNotFound) as missing_model:
        manager.lease("yy").__enter__()
    assert missing_model.value.model_id == "yy"


def test_cold_add_times_out_on_a_held_lru_lock() -> None:
    """Admission's LRU-lock wait is bounded: LockTimeout, nothing loaded (I14)."""

    def scenario() -> None:
        stack, cache, _, registry = _stack(queue_lock_timeout=1.0)
        done = lockstep.threading.Event()

        def hold() -> None:
            with cache._lru_lock:
                done.wait()

        holder = lockstep.spawn(hold, name="holder")
        lockstep.checkpoint("let the holder take the lock")
        if cache._lru_lock.locked():
            with pytest.raises(LockTimeout):
                stack.add_model("a")
            assert registry.ghost.construct_attempts == {}
        done.set()
        holder.join()

    result = _explore(scenario)
    assert result.failure is None, str(result.failure)


def test_no_lease_on_a_model_being_unloaded() -> None:
    """A lease taken while the model is being removed never gets the model being torn down (I13)."""

    def scenario() -> None:
        stack, _, _, registry = _stack()
        stack.add_model("a")
        ghost = registry.ghost
        remover = lockstep.spawn(stack.remove, "a", name="remover")
        try:
            with stack.lease("a") as model, ghost.use(model):
                assert not model.torn_down
                lockstep.checkpoint("using a")
        except KeyError:
            pass  # removed first
        remover.join()
        assert not ghost.cleared_in_use, ghost.cleared_in_use

    result = _explore(scenario)
    assert result.failure is None, str(result.failure)


class _NoTimeouts:
    """Wraps a strategy; records whether progress ever needed a timeout to fire."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.capabilities = lockstep.strategies.Capabilities(name="no-timeouts")
        self.needed_timeout = False

    def begin_execution(self) -> None:
        self.inner.begin_execution()

    def choose(self, choices: Any, step: Any) -> Any:
        if all(c.kind == "timeout" for c in choices):
            self.needed_timeout = True
        return self.inner.choose(choices, step)

    def end_execution(self, outcome: Any) -> bool:
        return bool(self.inner.end_execution(outcome))


def test_remove_is_woken_by_the_lease_release_not_by_its_timeout() -> None:
    """``remove`` waiting for a lease is woken when the lease is given back.

    Kills the mutants of the drain-waiter count (``give_back`` notifies only
    when someone waits): with a lost wake-up the remove would sit out its
    whole ``lock_timeout``.
    """

    def scenario() -> None:
        stack, _, _, _ = _stack()
        stack.add_model("a")
        lease = stack.lease("a")
        lease.__enter__()
        remover = lockstep.spawn(stack.remove, "a", name="remover")
        lockstep.checkpoint("the remover may start waiting")
        lease.__exit__(None, None, None)
        remover.join()
        assert "a" not in stack

    strategy = _NoTimeouts(lockstep.DFSStrategy(preemption_bound=2, timeouts=False))
    result = lockstep.explore(
        scenario, strategy=strategy, budget=2000, patch=CORE_MODULES, progress=False
    )
    assert result.failure is None, str(result.failure)
    assert not strategy.needed_timeout, "a waiting remove was only woken by its timeout"


def test_held_locked_and_snapshot_report_holders_only() -> None:
    """``held_locked`` is true exactly inside a ``hold`` block; ``snapshot().held`` agrees.

    ``held_locked`` is otherwise only inlined in the core (no caller), so
    nothing else exercised it.
    """
    table = LifecycleTable()
    with table.state_lock:
        assert not table.held_locked("a")
    with table.hold("a", 1.0):
        with table.state_lock:
            assert table.held_locked("a")
            assert not table.held_locked("b")
        assert table.snapshot()["a"].held
        with table.hold("a", 1.0):  # re-entrant: still held, once the inner block ends
            pass
        with table.state_lock:
            assert table.held_locked("a")
    with table.state_lock:
        assert not table.held_locked("a")
    assert table.snapshot() == {}


# -------------------------------------------------- third round of killers


def test_cache_defaults_and_statistics() -> None:
    """``max_size`` defaults to 8; ``statistics().lifecycle_entries`` counts holds in flight."""
    manager = ModelManager(ScriptedRegistry())
    assert WithFixedSizeCache(manager).max_size == 8
    with manager.lifecycle("a"):
        assert manager.statistics().lifecycle_entries == 1
    assert manager.statistics().lifecycle_entries == 0


def test_cold_add_through_the_cache_forwards_api_key_and_load_kwargs() -> None:
    """The cache passes the api key and extra load arguments to the constructor."""
    stack, _, manager, _ = _stack()
    stack.add_model("a", api_key="k", model_id_alias="x", flavour="small")
    model = manager["x"]
    assert (model.model_id, model.api_key, model.load_kwargs) == ("a", "k", {"flavour": "small"})


def test_manager_warm_add_answers_without_the_lifecycle(monkeypatch: pytest.MonkeyPatch) -> None:
    """The manager's own warm path: a loaded id is a hit without entering the lifecycle."""
    manager = ModelManager(ScriptedRegistry())
    manager.add_model("a")
    spy = _LifecycleSpy(manager, monkeypatch)
    manager.add_model("a")
    assert spy.calls == []
    assert manager.describe_models()[0].hits == 1


def test_locked_warm_hit_pins() -> None:
    """With the fast path off (a subclass replaces a step), a warm add still pins and refreshes."""

    class Custom(WithFixedSizeCache):
        def _load(self, request: Any) -> None:
            super()._load(request)

    cache = Custom(ModelManager(ScriptedRegistry()), max_size=2)
    cache.add_model("a")
    cache.add_model("b")
    cache.add_model("a", pin=True)
    assert cache.pinned() == frozenset({"a"})
    assert cache.lru_order() == ["b", "a"]  # the hit is a use


def test_concurrent_adds_of_one_id_share_a_slot_and_the_pin() -> None:
    """Two concurrent cold adds of one id share one capacity slot; a joined add pins.

    Kills ``_reserve_or_select_locked`` sharing a slot only when the id is
    both reserved *and* listed, and the joined hit dropping the pin.
    """

    def scenario() -> None:
        stack, cache, _, _ = _stack(max_size=2)
        stack.add_model("b")
        other = lockstep.spawn(stack.add_model, "a", name="adder")
        stack.add_model("a", pin=True)
        other.join()
        assert sorted(cache.lru_order()) == ["a", "b"], cache.lru_order()
        assert cache.pinned() == frozenset({"a"})

    result = _explore(scenario, budget=3000)
    assert result.failure is None, str(result.failure)


def test_cache_over_cache_takes_the_full_protocol(monkeypatch: pytest.MonkeyPatch) -> None:
    """An outer cache over a cache answers a warm add through its full protocol.

    A cache offers no warm step to an outer layer (``inner_link().warm_hit`` is
    None), so the outer add takes the id's lifecycle and its inner add is the
    inner cache's warm path: the inner LRU moves, a victim the inner cache
    had chosen is rescued, the hit is counted once, only the outer pins.
    """
    manager = ModelManager(ScriptedRegistry())
    inner = WithFixedSizeCache(manager, max_size=4)
    outer = WithFixedSizeCache(inner, max_size=4)
    assert inner.inner_link().warm_hit is None
    outer.add_model("a")
    outer.add_model("b")
    inner._book.choose("a", "z")  # chosen by an inner eviction that has not committed yet
    spy = _LifecycleSpy(manager, monkeypatch)
    outer.add_model("a", pin=True)
    assert spy.calls == ["a"]
    assert inner._book.state("a") is IdState.COMMITTED
    assert inner.lru_order() == ["b", "a"]
    assert outer.lru_order() == ["b", "a"]
    assert outer.pinned() == frozenset({"a"})
    assert inner.pinned() == frozenset()
    assert outer.statistics().hits == 1


def test_cache_over_cache_warm_path_waits_for_the_inner_lru_lock() -> None:
    """The inner cache's warm path waits for its busy LRU lock, then answers (lockstep)."""

    def scenario() -> None:
        manager = ModelManager(ScriptedRegistry())
        # Over a decorator, the inner cache has an LRU lock of its own (directly
        # over the manager it would be the manager's state lock).
        inner = WithFixedSizeCache(
            ModelManagerDecorator(manager), max_size=4, queue_lock_timeout=5.0
        )
        outer = WithFixedSizeCache(inner, max_size=4, queue_lock_timeout=5.0)
        outer.add_model("a")
        outer.add_model("b")

        def hold() -> None:
            with inner._lru_lock:
                lockstep.checkpoint("holding the inner LRU lock")

        holder = lockstep.spawn(hold, name="holder")
        outer.add_model("a")
        holder.join()
        assert inner.lru_order() == ["b", "a"]

    result = _explore(scenario)
    assert result.failure is None, str(result.failure)


def test_cache_over_cache_warm_path_times_out_on_a_held_inner_lru_lock() -> None:
    """The inner cache's wait on its LRU lock is bounded: LockTimeout (I14)."""

    def scenario() -> None:
        manager = ModelManager(ScriptedRegistry())
        inner = WithFixedSizeCache(
            ModelManagerDecorator(manager), max_size=4, queue_lock_timeout=1.0
        )
        outer = WithFixedSizeCache(inner, max_size=4, queue_lock_timeout=1.0)
        outer.add_model("a")
        done = lockstep.threading.Event()

        def hold() -> None:
            with inner._lru_lock:
                done.wait()

        holder = lockstep.spawn(hold, name="holder")
        lockstep.checkpoint("let the holder take the inner lock")
        if inner._lru_lock.locked():
            with pytest.raises(LockTimeout):
                outer.add_model("a")
        done.set()
        holder.join()

    result = _explore(scenario)
    assert result.failure is None, str(result.failure)

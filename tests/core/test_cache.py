"""WithFixedSizeCache, single-threaded semantics (and two ordered-thread cases)."""

from __future__ import annotations

import logging
import threading
from typing import ClassVar

import pytest

from modelmanager import (
    LockTimeout,
    ModelManager,
    ModelManagerDecorator,
    ScriptedMemoryProbe,
    WithFixedSizeCache,
)

from .helpers import FakeRegistry, join, run_in_thread


def make_cache(registry: FakeRegistry, max_size: int = 3, **kwargs: object) -> WithFixedSizeCache:
    return WithFixedSizeCache(ModelManager(registry), max_size, **kwargs)  # type: ignore[arg-type]


def assert_quiescent(cache: WithFixedSizeCache) -> None:
    """I4 + I9: LRU holds exactly the registered ids, no entries, no slots."""
    # The inner layer's registry: the cache's own keys() is its committed
    # view (in the LRU and registered), so it could not show a desync.
    assert sorted(cache.lru_order()) == sorted(cache.manager.keys())
    assert sorted(cache.keys()) == sorted(cache.manager.keys())
    assert len(set(cache.lru_order())) == len(cache.lru_order())
    assert cache.lifecycle_snapshot() == {}
    assert cache.in_flight_loads() == 0


def test_lru_order_follows_use(registry: FakeRegistry) -> None:
    """Loads append; warm adds and refresh move to the most-recent end."""
    cache = make_cache(registry)
    for model_id in "abc":
        cache.add_model(model_id)
    assert cache.lru_order() == ["a", "b", "c"]
    cache.add_model("a")
    assert cache.lru_order() == ["b", "c", "a"]
    cache.refresh("b")
    assert cache.lru_order() == ["c", "a", "b"]
    assert cache.statistics().hits == 1
    assert_quiescent(cache)


def test_refresh_of_unregistered_id_is_noop(registry: FakeRegistry) -> None:
    """refresh never creates a phantom entry (B13)."""
    cache = make_cache(registry)
    cache.add_model("a")
    cache.refresh("ghost")
    assert cache.lru_order() == ["a"]
    assert_quiescent(cache)


def test_capacity_evicts_only_as_many_as_needed(registry: FakeRegistry) -> None:
    """A full cache of 2 evicts just the least-recent model to admit one (semantics 6)."""
    cache = make_cache(registry, max_size=2)
    cache.add_model("a")
    cache.add_model("b")
    cache.add_model("c")
    assert cache.lru_order() == ["b", "c"]
    assert registry.constructed[0].clear_calls == [False]  # evictions keep files on disk
    stats = cache.statistics()
    assert (stats.evictions_capacity, stats.evictions, stats.removals) == (1, 1, 1)
    assert_quiescent(cache)


def test_warm_add_on_full_cache_evicts_nothing(registry: FakeRegistry) -> None:
    """A hit never evicts, even when the cache is full."""
    cache = make_cache(registry, max_size=2)
    cache.add_model("a")
    cache.add_model("b")
    cache.add_model("a")
    assert cache.lru_order() == ["b", "a"]
    assert cache.statistics().evictions == 0


def test_alias_is_the_lru_key(registry: FakeRegistry) -> None:
    """With C loaded, add(C, alias=A) loads A; LRU, keys and model agree (B10)."""
    cache = make_cache(registry)
    cache.add_model("c")
    cache.add_model("c", model_id_alias="a")
    assert cache.lru_order() == ["c", "a"]
    assert cache["a"].model_id == "c"  # type: ignore[attr-defined]
    cache.remove("a")
    assert cache.lru_order() == ["c"]
    assert_quiescent(cache)


def test_pins_skip_eviction_and_survive_remove(registry: FakeRegistry) -> None:
    """Pinned ids are never evicted; pins are configuration (semantics 10)."""
    cache = make_cache(registry, max_size=2)
    cache.pin_model("a")  # before the load
    cache.add_model("a")
    cache.add_model("b")
    cache.add_model("c")
    assert cache.lru_order() == ["a", "c"]
    cache.remove("a")
    assert cache.pinned() == frozenset({"a"})
    cache.clear()
    assert cache.pinned() == frozenset({"a"})
    cache.unpin_model("a")
    cache.unpin_model("never-pinned")
    assert cache.pinned() == frozenset()
    assert_quiescent(cache)


def test_pin_on_add_is_atomic_with_success(registry: FakeRegistry) -> None:
    """add_model(pin=True) pins only if the load succeeded; a warm add can pin too."""
    cache = make_cache(registry)
    registry.load_errors["a"] = ValueError("bad")
    with pytest.raises(ValueError, match="bad"):
        cache.add_model("a", pin=True)
    assert cache.pinned() == frozenset()
    del registry.load_errors["a"]
    cache.add_model("a", pin=True)
    cache.add_model("b")
    cache.add_model("b", pin=True)
    assert cache.pinned() == frozenset({"a", "b"})


def test_only_pinned_left_overflows_with_warning(
    registry: FakeRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    """on_full="proceed": when only pinned models remain, the add proceeds over capacity."""
    cache = make_cache(registry, max_size=1, on_full="proceed")
    cache.add_model("a", pin=True)
    with caplog.at_level(logging.WARNING, logger="modelmanager.decorators.fixed_size_cache"):
        cache.add_model("b")
    assert cache.lru_order() == ["a", "b"]
    assert cache.statistics().pinned_overflow == 1
    assert "over the bound (max_size=1)" in caplog.text
    cache.add_model("c")  # b is evictable again
    assert cache.lru_order() == ["a", "c"]


def test_failed_remove_keeps_exact_order(registry: FakeRegistry) -> None:
    """[A, X, B] stays [A, X, B] when remove(X) fails (B5, B6, I5)."""
    cache = make_cache(registry)
    for model_id in "axb":
        cache.add_model(model_id)
    registry.clear_errors["x"] = OSError("busy")
    with pytest.raises(OSError, match="busy"):
        cache.remove("x")
    assert cache.lru_order() == ["a", "x", "b"]
    assert cache.keys() == ["a", "x", "b"]
    del registry.clear_errors["x"]
    cache.remove("x")
    assert cache.lru_order() == ["a", "b"]
    assert_quiescent(cache)


def test_failed_eviction_keeps_positions(registry: FakeRegistry) -> None:
    """[P(pinned), A, B] full, evicting A fails: P and A keep their places (B9, I6)."""
    cache = make_cache(registry, max_size=3)
    cache.add_model("p", pin=True)
    cache.add_model("a")
    cache.add_model("b")
    registry.clear_errors["a"] = RuntimeError("cannot unload a")
    with pytest.raises(RuntimeError, match="cannot unload a"):
        cache.add_model("n")
    assert cache.lru_order() == ["p", "a", "b"]
    assert cache.keys() == ["p", "a", "b"]
    assert "n" not in registry.requested
    stats = cache.statistics()
    assert (stats.eviction_failures, stats.evictions) == (1, 0)
    assert_quiescent(cache)


def test_failed_eviction_keeps_earlier_victims_evicted(registry: FakeRegistry) -> None:
    """LRU [A, P(pinned), C], two victims needed: A goes, C fails -> [P, C] (I6)."""
    cache = make_cache(registry, max_size=2, on_full="proceed")
    cache.add_model("a", pin=True)
    cache.add_model("p", pin=True)
    cache.add_model("c")  # over capacity: a and p are pinned
    registry.clear_errors["a"] = RuntimeError("a busy")
    cache.unpin_model("a")  # the restoration cannot unload a: it stays, counted
    assert cache.lru_order() == ["a", "p", "c"]
    assert cache.statistics().restoration_failures == 1
    del registry.clear_errors["a"]
    registry.clear_errors["c"] = RuntimeError("c stuck")
    with pytest.raises(RuntimeError, match="c stuck"):
        cache.add_model("n")
    assert cache.lru_order() == ["p", "c"]
    assert cache.keys() == ["p", "c"]
    assert [m.model_id for m in registry.live()] == ["p", "c"]
    stats = cache.statistics()
    assert (stats.evictions_capacity, stats.eviction_failures) == (1, 2)
    assert "n" not in registry.requested
    assert_quiescent(cache)


def test_failed_multi_eviction_exact_state(registry: FakeRegistry) -> None:
    """Needing two victims [A, B]: A goes, B fails -> A stays evicted, B keeps its place."""
    cache = make_cache(registry, max_size=1, on_full="proceed")
    cache.add_model("p", pin=True)
    cache.add_model("a")  # overflow
    cache.add_model("b")  # evicts a (needs 2, only a evictable) -> overflow [p, b]
    cache.add_model("a")  # evicts b -> [p, a]
    registry.clear_errors["p"] = RuntimeError("p busy")
    cache.unpin_model("p")  # the restoration cannot unload p: over capacity stays
    assert cache.lru_order() == ["p", "a"]
    del registry.clear_errors["p"]
    registry.clear_errors["a"] = RuntimeError("stuck")
    with pytest.raises(RuntimeError, match="stuck"):
        cache.add_model("n")  # needs 2: p goes, a fails
    assert cache.lru_order() == ["a"]
    assert cache.keys() == ["a"]
    assert registry.live()[0].model_id == "a"
    assert cache.statistics().eviction_failures == 2
    assert_quiescent(cache)


def test_failed_load_leaves_no_residue(registry: FakeRegistry) -> None:
    """A failed cold add leaves no LRU entry, slot or lifecycle entry (I10)."""
    cache = make_cache(registry)
    cache.add_model("a")
    registry.load_errors["b"] = KeyboardInterrupt()
    with pytest.raises(KeyboardInterrupt):
        cache.add_model("b")
    assert cache.lru_order() == ["a"]
    assert_quiescent(cache)


def test_memory_pressure_evicts_in_rounds_of_three(registry: FakeRegistry) -> None:
    """Under pressure: rounds of up to 3, gc + release + re-measure between rounds."""
    # One "unknown" (None) measurement per preload, then the script under test.
    probe = ScriptedMemoryProbe([None] * 7 + [0.05, 0.1, 0.5])
    cache = make_cache(registry, max_size=10, memory_probe=probe, memory_free_threshold=0.2)
    for model_id in "abcdefg":
        cache.add_model(model_id)
    assert (probe.measurements, probe.release_calls) == (7, 0)
    cache.add_model("new")
    assert cache.lru_order() == ["g", "new"]
    assert probe.measurements == 10
    assert probe.release_calls == 2
    stats = cache.statistics()
    assert (stats.evictions_memory, stats.evictions_capacity) == (6, 0)
    assert_quiescent(cache)


def test_memory_eviction_skips_pinned_without_using_budget(registry: FakeRegistry) -> None:
    """Pinned ids are skipped; the round still evicts three others."""
    probe = ScriptedMemoryProbe([None] * 6 + [0.0, 0.9])
    cache = make_cache(registry, max_size=10, memory_probe=probe, memory_free_threshold=0.5)
    for model_id in "pqabcd":
        cache.add_model(model_id, pin=model_id in "pq")
    cache.add_model("n")
    assert cache.lru_order() == ["p", "q", "d", "n"]
    assert cache.statistics().evictions_memory == 3


def test_memory_pressure_with_nothing_evictable_proceeds(registry: FakeRegistry) -> None:
    """Only pinned models under pressure: the add proceeds, nothing evicted."""
    probe = ScriptedMemoryProbe(then=0.0)
    cache = make_cache(registry, memory_probe=probe, memory_free_threshold=0.5)
    cache.add_model("a", pin=True)  # nothing to evict for the first one either
    cache.add_model("b")
    assert cache.lru_order() == ["a", "b"]
    cache.add_model("c")
    assert cache.lru_order() == ["a", "c"]  # b evicted for memory, then stop
    assert cache.statistics().evictions_memory == 1


def test_probe_errors_count_as_no_pressure(registry: FakeRegistry) -> None:
    """A probe that raises means "no pressure": logged, counted, add succeeds."""
    probe = ScriptedMemoryProbe([RuntimeError("nvml down")], then=0.9)
    cache = make_cache(registry, memory_probe=probe, memory_free_threshold=0.5)
    cache.add_model("a")
    assert cache.lru_order() == ["a"]
    assert cache.statistics().memory_probe_errors == 1
    assert cache.statistics().evictions == 0


def test_release_cache_errors_are_counted(registry: FakeRegistry) -> None:
    """release_cache raising between rounds is counted and does not fail the add."""
    probe = ScriptedMemoryProbe([None, 0.0, 0.9], release_error=OSError("driver"))
    cache = make_cache(registry, max_size=10, memory_probe=probe, memory_free_threshold=0.5)
    cache.add_model("a")
    cache.add_model("b")
    assert cache.lru_order() == ["b"]
    assert cache.statistics().memory_probe_errors == 1
    assert probe.release_calls == 1


def test_threshold_zero_never_asks_the_probe(registry: FakeRegistry) -> None:
    """memory_free_threshold=0 disables the probe entirely."""
    probe = ScriptedMemoryProbe(then=0.0)
    cache = make_cache(registry, max_size=2, memory_probe=probe)
    for model_id in "abc":
        cache.add_model(model_id)
    assert probe.measurements == 0


def test_default_probe_is_created_lazily(registry: FakeRegistry) -> None:
    """Without a probe, the cache creates the default one on first use."""
    from modelmanager import TorchCudaMemoryProbe

    cache = make_cache(registry)
    assert cache._memory_probe is None
    assert isinstance(cache.memory_probe, TorchCudaMemoryProbe)


def test_clear_goes_through_the_cache(registry: FakeRegistry) -> None:
    """clear removes everything and empties the LRU; failures are grouped."""
    cache = make_cache(registry)
    for model_id in "abc":
        cache.add_model(model_id)
    registry.clear_errors["b"] = OSError("busy")
    with pytest.raises(ExceptionGroup):
        cache.clear()
    assert cache.lru_order() == ["b"]
    assert cache.keys() == ["b"]


def test_admission_times_out_while_slots_are_in_flight(registry: FakeRegistry) -> None:
    """A full cache of in-flight loads: a second cold add times out, nothing changed (B14)."""
    cache = make_cache(registry, max_size=1, queue_lock_timeout=0)
    entered, release = registry.gate("a")
    worker, outcome = run_in_thread(cache.add_model, "a")
    assert entered.wait(30)
    assert cache.in_flight_loads() == 1
    with pytest.raises(LockTimeout, match="free slot for model 'b'"):
        cache.add_model("b")
    assert cache.in_flight_loads() == 1
    assert "b" not in registry.requested
    release.set()
    join(worker)
    assert "error" not in outcome
    assert cache.lru_order() == ["a"]
    assert cache.statistics().lock_timeouts == 1
    assert_quiescent(cache)


def test_admission_waits_for_in_flight_load_then_evicts(registry: FakeRegistry) -> None:
    """A second cold add waits for the in-flight load, then evicts it: never 2 loaded (I11)."""
    cache = make_cache(registry, max_size=1, queue_lock_timeout=30)
    entered, release = registry.gate("a")
    first, first_outcome = run_in_thread(cache.add_model, "a")
    assert entered.wait(30)
    second, second_outcome = run_in_thread(cache.add_model, "b")
    release.set()
    join(first)
    join(second)
    assert "error" not in first_outcome
    assert "error" not in second_outcome
    assert cache.lru_order() == ["b"]
    assert [m.model_id for m in registry.live()] == ["b"]
    assert_quiescent(cache)


def test_same_id_concurrent_adds_share_one_slot(registry: FakeRegistry) -> None:
    """Two cold adds of one id: one constructor, one slot, nothing evicted (I2)."""
    cache = make_cache(registry, max_size=2, queue_lock_timeout=30)
    cache.add_model("z")
    entered, release = registry.gate("a")
    first, first_outcome = run_in_thread(cache.add_model, "a")
    assert entered.wait(30)
    second, second_outcome = run_in_thread(cache.add_model, "a")
    release.set()
    join(first)
    join(second)
    assert "error" not in first_outcome
    assert "error" not in second_outcome
    assert len([m for m in registry.constructed if m.model_id == "a"]) == 1
    assert cache.lru_order() == ["z", "a"]
    assert cache.statistics().evictions == 0
    assert_quiescent(cache)


def test_repr_and_settings(registry: FakeRegistry) -> None:
    """repr shows size, LRU, pins, in-flight loads and the inner stack."""
    cache = WithFixedSizeCache(ModelManagerDecorator(ModelManager(registry)), max_size=2)
    cache.add_model("a", pin=True)
    assert repr(cache) == (
        "WithFixedSizeCache(max_size=2, lru=['a'], pinned=['a'], in_flight_loads=0, "
        "memory_free_threshold=0, manager=ModelManagerDecorator(ModelManager(models=['a'], "
        "leases={}, lifecycle_entries=0, lock_timeout=60)))"
    )
    assert (cache.max_size, cache.memory_free_threshold, cache.queue_lock_timeout) == (2, 0.0, 5.0)


def test_pin_waits_on_lifecycle_bounded(registry: FakeRegistry) -> None:
    """pin_model takes the id's lifecycle: while the id loads, it times out (lock_timeout=0)."""
    cache = WithFixedSizeCache(ModelManager(registry, lock_timeout=0))
    entered, release = registry.gate("a")
    worker, _ = run_in_thread(cache.add_model, "a")
    assert entered.wait(30)
    with pytest.raises(LockTimeout):
        cache.pin_model("a")
    assert cache.pinned() == frozenset()
    release.set()
    join(worker)
    assert threading.active_count() >= 1


def test_stale_entry_removed_behind_the_cache_is_dropped(registry: FakeRegistry) -> None:
    """A model removed on the inner manager directly is dropped from the LRU on eviction."""
    inner = ModelManager(registry)
    cache = WithFixedSizeCache(inner, max_size=2)
    cache.add_model("a")
    cache.add_model("b")
    inner.remove("a")  # bypasses the cache
    assert cache.lru_order() == ["a", "b"]
    cache.add_model("c")
    assert cache.lru_order() == ["b", "c"]
    assert cache.keys() == ["b", "c"]
    assert cache.statistics().evictions == 0
    assert_quiescent(cache)


def test_clear_goes_least_recent_first(registry: FakeRegistry) -> None:
    """clear removes in LRU order (the order the sequential spec uses)."""
    cache = make_cache(registry)
    for model_id in "abc":
        cache.add_model(model_id)
    cache.refresh("a")
    for model in registry.constructed:
        registry.clear_errors[model.model_id] = RuntimeError(model.model_id)
    with pytest.raises(ExceptionGroup) as caught:
        cache.clear()
    order = [str(error) for error in caught.value.exceptions]
    assert order == ["b", "c", "a"]
    assert cache.lru_order() == ["b", "c", "a"]


def test_occupancy_is_exact_between_registration_and_lru_insert(registry: FakeRegistry) -> None:
    """Just before the LRU insert, the new id counts as registered inside, not in flight.

    The cache layer itself does not show it yet (it is loaded there from the
    commit on), so inner ``keys()`` + ``in_flight_loads()`` is the occupancy.
    """
    seen: list[tuple[list[str], list[str], int, list[str]]] = []

    class Observed(WithFixedSizeCache):
        def _commit_load(self, resolved_id: str, pin: bool) -> None:
            seen.append(
                (self.manager.keys(), self.keys(), self.in_flight_loads(), self.lru_order())
            )
            super()._commit_load(resolved_id, pin)

    cache = Observed(ModelManager(registry), max_size=2)
    cache.add_model("a")
    assert seen == [(["a"], [], 0, [])]
    assert cache.lru_order() == ["a"]


class _UseBeforeEvicting(WithFixedSizeCache):
    """Simulates another thread using a victim between its choice and its unload."""

    use: str = "refresh"
    to_use: set[str]
    used: list[str]

    def _evict_one(self, victim: str) -> bool:
        if victim in self.to_use:
            self.to_use.discard(victim)
            self.used.append(victim)
            if self.use == "refresh":
                self.refresh(victim)
            else:
                self.add_model(victim)
        return super()._evict_one(victim)


@pytest.mark.parametrize("use", ["refresh", "warm add"])
def test_use_of_a_chosen_victim_rescues_it(registry: FakeRegistry, use: str) -> None:
    """A victim used after it was chosen is skipped; the next least-recent goes (I15)."""
    cache = _UseBeforeEvicting(ModelManager(registry), max_size=2)
    cache.use, cache.to_use, cache.used = use, {"a"}, []
    cache.add_model("a")
    cache.add_model("b")
    cache.add_model("c")
    # As if the use came first: [a, b] -> use a -> [b, a] -> add c evicts b.
    assert cache.used == ["a"]
    assert cache.lru_order() == ["a", "c"]
    assert cache.statistics().evictions_capacity == 1
    assert_quiescent(cache)


def test_memory_round_replaces_rescued_victims(registry: FakeRegistry) -> None:
    """A rescued victim does not use the round's budget: three others still go."""
    probe = ScriptedMemoryProbe([None] * 5 + [0.0, 0.9])
    cache = _UseBeforeEvicting(
        ModelManager(registry), max_size=10, memory_probe=probe, memory_free_threshold=0.5
    )
    cache.to_use, cache.used = {"a"}, []
    for model_id in "abcde":
        cache.add_model(model_id)
    cache.add_model("n")
    assert cache.lru_order() == ["e", "a", "n"]
    assert cache.statistics().evictions_memory == 3
    assert probe.release_calls == 1


def test_remove_never_reports_failure_after_the_unload(registry: FakeRegistry) -> None:
    """Bookkeeping after a successful unload waits for the LRU lock instead of timing out (B16)."""
    reached = threading.Event()

    class Signalling(WithFixedSizeCache):
        def _forget(self, resolved_id: str) -> None:
            reached.set()
            super()._forget(resolved_id)

    # Over a decorator, the cache has a lock of its own: held here, it blocks
    # only the cache's bookkeeping (directly over a ModelManager the lock is
    # the manager's state lock, and the inner unregistration would wait too).
    cache = Signalling(ModelManagerDecorator(ModelManager(registry)), queue_lock_timeout=0)
    assert cache._lru_lock is not cache.manager.manager._state_lock
    cache.add_model("a")
    unloading, release = registry.clear_gates["a"] = (threading.Event(), threading.Event())
    remover, outcome = run_in_thread(cache.remove, "a")
    assert unloading.wait(30)  # past the removal mark, inside clear_cache
    assert cache._lru_lock.acquire(timeout=30)  # stands in for a short LRU critical section
    try:
        release.set()
        assert reached.wait(30)
        assert registry.constructed[0].cleared
    finally:
        cache._lru_lock.release()
    join(remover)
    assert "error" not in outcome
    assert cache.lru_order() == []
    assert_quiescent(cache)


def test_keyboard_interrupt_in_clear_cache_changes_nothing(registry: FakeRegistry) -> None:
    """A BaseException from clear_cache: model still loaded, LRU order kept, table empty."""
    cache = make_cache(registry)
    for model_id in "abc":
        cache.add_model(model_id)
    registry.clear_errors["b"] = KeyboardInterrupt()
    with pytest.raises(KeyboardInterrupt):
        cache.remove("b")
    assert cache.lru_order() == ["a", "b", "c"]
    assert_quiescent(cache)


def test_admission_waits_for_an_undecided_eviction(registry: FakeRegistry) -> None:
    """While another add's victim is being unloaded, a second add waits instead of
    choosing around it; with queue_lock_timeout=0 it times out having changed nothing."""
    cache = make_cache(registry, max_size=2, queue_lock_timeout=0)
    cache.add_model("a")
    cache.add_model("b")
    entered, release = (threading.Event(), threading.Event())
    registry.clear_gates["a"] = (entered, release)
    evictor, outcome = run_in_thread(cache.add_model, "c")
    assert entered.wait(30)
    with pytest.raises(LockTimeout, match="free slot for model 'd'"):
        cache.add_model("d")
    assert cache.keys() == ["a", "b"]
    assert registry.constructed[1].clear_calls == []  # b untouched
    release.set()
    join(evictor)
    assert "error" not in outcome
    assert cache.lru_order() == ["b", "c"]
    assert_quiescent(cache)


def test_joined_add_does_not_move_the_id_again(registry: FakeRegistry) -> None:
    """An add that finds its id loaded by a concurrent add takes effect right after
    that load: later uses keep their LRU positions (I15)."""

    class Racing(WithFixedSizeCache):
        raced = False

        def _admit(self, resolved_id: str) -> None:
            super()._admit(resolved_id)
            if not self.raced:
                self.raced = True
                self.add_model(resolved_id)  # a concurrent add of the same id wins
                self.refresh("y")  # then another model is used

    cache = Racing(ModelManager(registry), max_size=3)
    cache.raced = True
    cache.add_model("y")
    cache.raced = False
    cache.add_model("x")
    assert cache.lru_order() == ["x", "y"]
    assert [m.model_id for m in registry.constructed] == ["y", "x"]
    assert cache.statistics().hits == 1
    assert_quiescent(cache)


def test_an_add_keeps_its_slot_across_eviction_rounds(registry: FakeRegistry) -> None:
    """The room an add's victims free is its own (I15 on B17): a victim reloaded
    between the add's rounds makes room of its own, and the add evicts once.

    Without the held slot the reload took the freed room (``z`` still loaded
    when it returned) and the add's next round evicted ``z`` for the same load.
    """

    class Reloading(WithFixedSizeCache):
        seen: ClassVar[list[tuple[list[str], int]]] = []

        def _evict(self, victims: list[str], cause: str, batch: object) -> int:
            evicted = super()._evict(victims, cause, batch)
            if cause == "evictions_capacity" and not self.seen:
                self.seen.append((list(victims), self.in_flight_loads()))
                self.add_model("x")  # the first victim comes back between rounds
                self.seen.append((self.lru_order(), self.in_flight_loads()))
            return evicted

    cache = Reloading(ModelManager(registry), max_size=2)  # type: ignore[arg-type]
    cache.add_model("x")
    cache.add_model("z")
    cache.add_model("y")
    # y's first round evicted x holding its slot (not counted as a load in
    # flight while y is still making room); x's reload had to evict z itself.
    assert Reloading.seen == [(["x"], 0), (["x"], 0)]
    assert cache.lru_order() == ["x", "y"]
    assert [m.model_id for m in registry.constructed] == ["x", "z", "x", "y"]
    assert cache.statistics().evictions_capacity == 2  # x for y, z for x: one each
    assert_quiescent(cache)

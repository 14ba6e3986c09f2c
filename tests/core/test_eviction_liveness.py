"""An add never waits, even indirectly, for a lease (B17, I17).

The cycle these tests pin (found by lockstep once it switched at watched data
accesses): in a full cache, add T chooses X as a capacity victim while X is
not leased yet; U then takes a lease on X (``lease``, or the lease at the end
of ``acquire``); R's ``remove("X")`` takes X's lifecycle and waits for U's
lease to be given back; T's eviction of X needs X's lifecycle; and U, still
holding the lease, adds Y, which waits because T's eviction is undecided.
U waits for T, T for R, R for U: only a timeout (``queue_lock_timeout`` or
the manager's ``lock_timeout``) could end it, as a ``LockTimeout`` for
requests that should succeed.

The core breaks it at T: an eviction never waits for a victim's lifecycle
while it holds a choice. A victim whose lifecycle another thread holds is
skipped (the batch's choices are dropped) and the add decides again, where
the now leased X is not evictable: T admits over capacity and U's add goes
through at once, while R still waits for the lease.

The interleaving is pinned with events: T pauses as it starts evicting
(its victims chosen), R signals when it starts waiting for the leases, and
U's ``acquire`` pauses just before taking its lease. Timeouts are 30 s, far
beyond what any step needs: U's add must return while R is still waiting.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import pytest

from modelmanager import Model, ModelManager, WithFixedSizeCache
from modelmanager.decorators._cache_admission import AdmissionControl
from modelmanager.decorators._cache_book import IdState

from .helpers import FakeRegistry, join, run_in_thread

GATE = 30.0


class _Manager(ModelManager):
    """Signals when a removal starts waiting for leases; may pause one thread's lease."""

    def __init__(self, registry: Any) -> None:
        super().__init__(registry, lock_timeout=GATE)
        self.draining = threading.Event()
        self.lease_paused_in: str | None = None
        self.lease_reached, self.lease_resume = threading.Event(), threading.Event()

    def _wait_for_leases(self, resolved_id: str) -> None:
        self.draining.set()
        super()._wait_for_leases(resolved_id)

    def _take_lease(self, resolved_id: str) -> Model:
        if threading.current_thread().name == self.lease_paused_in:
            self.lease_reached.set()
            assert self.lease_resume.wait(GATE), "test never resumed the lease"
        return super()._take_lease(resolved_id)


class _Admission(AdmissionControl):
    """Reports each wait for a busy victim's lifecycle to its cache."""

    def await_lifecycle(self, victim: str) -> None:
        owner = self._owner
        assert isinstance(owner, _Cache)
        owner.awaiting_lifecycle()
        super().await_lifecycle(victim)


class _Cache(WithFixedSizeCache):
    """Pauses the thread named ``T`` as its first eviction starts (victims chosen)."""

    admission_class = _Admission

    def __init__(self, manager: ModelManager, max_size: int, **options: Any) -> None:
        super().__init__(manager, max_size=max_size, queue_lock_timeout=GATE, **options)
        self.evicting, self.evict_resume = self.gate("T")
        self.awaiting = threading.Event()
        self._waits: dict[str, threading.Event] = {}
        self._lru_changed = _WatchedCondition(self._lru_lock, self.waiting)
        self._admission._changed = self._lru_changed
        self._evictions._changed = self._lru_changed

    def waiting(self, name: str) -> threading.Event:
        """Set once thread ``name`` waits on the cache's condition or for a lifecycle."""
        return self._waits.setdefault(name, threading.Event())

    def gate(self, name: str) -> tuple[threading.Event, threading.Event]:
        """Pause thread ``name`` as its first eviction starts; returns (reached, resume)."""
        pair = (threading.Event(), threading.Event())
        self.__dict__.setdefault("_gates", {})[name] = pair
        return pair

    def _evict_one(self, victim: str) -> bool:
        pair = self.__dict__["_gates"].pop(threading.current_thread().name, None)
        if pair is not None:
            pair[0].set()
            assert pair[1].wait(GATE), "test never resumed the eviction"
        return super()._evict_one(victim)

    def awaiting_lifecycle(self) -> None:
        """The current thread is about to wait for a busy victim's lifecycle."""
        if threading.current_thread().name == "T":
            self.awaiting.set()
        self.waiting(threading.current_thread().name).set()


class _WatchedCondition(threading.Condition):
    """The cache's condition; reports which threads wait on it."""

    def __init__(self, lock: Any, waiting: Callable[[str], threading.Event]) -> None:
        super().__init__(lock)
        self._waiting = waiting

    def wait(self, timeout: float | None = None) -> bool:
        self._waiting(threading.current_thread().name).set()
        return super().wait(timeout)


class _Pressure:
    """A memory probe under pressure until switched off."""

    def __init__(self) -> None:
        self.on = True

    def free_fraction(self) -> float:
        return 0.1 if self.on else 0.9

    def release_cache(self) -> None:
        """Nothing to release."""


def _named(name: str, fn: Any, *args: Any) -> tuple[threading.Thread, dict[str, Any]]:
    """run_in_thread, with the thread renamed before it can reach a gate."""
    started = threading.Event()

    def target() -> Any:
        assert started.wait(GATE)
        return fn(*args)

    thread, outcome = run_in_thread(target)
    thread.name = name
    started.set()
    return thread, outcome


class _User:
    """U: holds a lease on X (by ``lease`` or ``acquire``), then adds Y inside it."""

    def __init__(self, cache: WithFixedSizeCache, how: str) -> None:
        self.cache, self.how = cache, how
        self.leased, self.go, self.added = threading.Event(), threading.Event(), threading.Event()
        self.go_out = threading.Event()
        self.error: BaseException | None = None

    def _lease(self) -> AbstractContextManager[Model]:
        return self.cache.lease("X") if self.how == "lease" else self.cache.acquire("X")

    def run(self) -> None:
        with self._lease():
            self.leased.set()
            assert self.go.wait(GATE), "test never let U add"
            try:
                self.cache.add_model("Y")
            except BaseException as error:
                self.error = error
                raise
            finally:
                self.added.set()
            assert self.go_out.wait(GATE), "test never let U give the lease back"


class _UnrestoredCache(_Cache):
    """Stays over its bound after pins end (restoration off): a batch of two victims."""

    def _restore(self, exclude: str | None = None) -> None:
        pass


def _full_cache(
    max_size: int, *preload: str, cache_class: type[_Cache] = _Cache, **options: Any
) -> tuple[_Manager, _Cache]:
    manager = _Manager(FakeRegistry())
    cache = cache_class(manager, max_size, **options)
    for model_id in preload:
        cache.add_model(model_id)
    return manager, cache


def _play(manager: _Manager, cache: _Cache, how: str, chosen: tuple[str, ...]) -> Iterator[str]:
    """Drive the interleaving; yields once U's add has returned (or failed)."""
    user = _User(cache, how)
    threads: list[tuple[threading.Thread, dict[str, Any]]] = []
    if how == "acquire":
        # U's acquire uses X under X's lifecycle, then pauses before its lease.
        manager.lease_paused_in = "U"
        threads.append(_named("U", user.run))
        assert manager.lease_reached.wait(GATE)
    # T chooses its victims (X not leased yet) and pauses before evicting.
    threads.append(_named("T", cache.add_model, "Z"))
    assert cache.evicting.wait(GATE), "T never started an eviction"
    assert all(cache._book.chosen(victim) for victim in chosen), cache._book
    if how == "acquire":
        manager.lease_resume.set()
    else:
        threads.append(_named("U", user.run))
    assert user.leased.wait(GATE)
    # R removes X: it takes X's lifecycle, keeps T's choice, waits for U's lease.
    remover = _named("R", cache.remove, "X")
    assert manager.draining.wait(GATE), "R never started waiting for the lease"
    assert cache._book.state("X") is IdState.REMOVING
    # T goes on with the eviction of X; U adds Y while holding the lease.
    cache.evict_resume.set()
    user.go.set()
    assert user.added.wait(2 * GATE), "U's add never returned"
    assert user.error is None, f"U's add failed: {user.error!r}"
    yield "added"
    user.go_out.set()
    for thread, outcome in [*threads, remover]:
        join(thread)
        assert "error" not in outcome, outcome


@pytest.mark.parametrize("how", ["lease", "acquire"])
def test_an_add_inside_a_lease_never_waits_for_an_eviction_blocked_by_that_lease(
    how: str,
) -> None:
    """Cache of 1 holding X: U's add of Y returns while R still waits for U's lease."""
    manager, cache = _full_cache(1, "X")
    steps = _play(manager, cache, how, ("X",))
    next(steps)
    timeouts = cache.statistics().lock_timeouts
    assert timeouts == 0, "a wait timed out: the add waited (indirectly) for the lease"
    assert "X" in manager, "U's add returned only after R's removal"
    assert manager.lease_counts().get("X") == 1
    for _ in steps:
        pass
    assert "X" not in manager
    assert cache.statistics().lock_timeouts == 0
    assert manager.lifecycle_snapshot() == {}


def test_a_batch_whose_first_victim_is_busy_does_not_hold_the_others() -> None:
    """T chooses X and W; X's lifecycle is busy (R waits for U's lease on it).

    T must not wait for X holding W's choice either: it drops both, evicts W
    (X is leased now) and admits over capacity (``on_full="proceed"``: the
    default would wait for U's lease to end); U's add of Y goes through.
    Restoration is off so that the unpins leave the cache over its bound.
    """
    manager, cache = _full_cache(2, "X", "W", cache_class=_UnrestoredCache, on_full="proceed")
    cache.pin_model("X")
    cache.pin_model("W")
    cache.add_model("P", pin=True)  # over capacity: X, W, P loaded
    cache.unpin_model("X")
    cache.unpin_model("W")
    steps = _play(manager, cache, "lease", ("X", "W"))
    next(steps)
    assert cache.statistics().lock_timeouts == 0
    assert "X" in manager, "U's add returned only after R's removal"
    assert manager.lease_counts().get("X") == 1
    for _ in steps:
        pass
    assert "X" not in manager
    assert cache.statistics().lock_timeouts == 0


def test_a_memory_round_whose_first_victim_is_busy_does_not_hold_the_others() -> None:
    """The same cycle through memory pressure: T's round chooses X and W.

    T drops both choices when X is busy, evicts W (X is leased now), and
    U's add of Y, itself under pressure, goes through while R still waits.
    """
    pressure = _Pressure()
    pressure.on = False
    manager, cache = _full_cache(10, "X", "W", memory_probe=pressure, memory_free_threshold=0.5)
    pressure.on = True
    steps = _play(manager, cache, "lease", ("X", "W"))
    next(steps)
    assert cache.statistics().lock_timeouts == 0
    assert "W" not in manager
    assert "X" in manager, "U's add returned only after R's removal"
    assert manager.lease_counts().get("X") == 1
    for _ in steps:
        pass
    assert "X" not in manager
    assert cache.statistics().lock_timeouts == 0


def test_a_busy_victim_chosen_again_is_awaited_holding_no_choice(
    registry: FakeRegistry,
) -> None:
    """X's lifecycle is held by a removal running clear_cache (no lease): T's add
    chooses X again after dropping it, and then waits for X's lifecycle with
    nothing of its own undecided, so no other add waits for it meanwhile."""
    manager = _Manager(registry)
    cache = _Cache(manager, 1)
    cache.add_model("X")
    entered, release = threading.Event(), threading.Event()
    registry.clear_gates["X"] = (entered, release)
    adder, added = _named("T", cache.add_model, "Z")
    assert cache.evicting.wait(GATE), "T never started an eviction"
    remover, removed = _named("R", cache.remove, "X")
    assert entered.wait(GATE), "R never reached clear_cache"
    cache.evict_resume.set()
    assert cache.awaiting.wait(GATE), "T never waited for X's lifecycle"
    assert not cache._book.evictions_undecided(), cache._book
    release.set()
    join(remover)
    join(adder)
    assert "error" not in removed, removed
    assert "error" not in added, added
    assert cache.lru_order() == ["Z"]
    assert cache.statistics().lock_timeouts == 0


def test_a_busy_victim_committed_by_another_eviction_keeps_its_unload_mark(
    registry: FakeRegistry,
) -> None:
    """A's choice of X is rescued by a use; B chooses X again; A's eviction then
    commits X under B's choice (it revalidates as if choosing now) and unloads it.
    B finds X busy: dropping its choices must leave that UNLOADING mark alone (the
    unload that set it resolves it), or X would look loaded while torn down.

    A holds its slot while it evicts, so B needs two victims (W, then X): with
    a cache of one, B would wait for A's load instead of choosing X."""
    manager = _Manager(registry)
    cache = _Cache(manager, 2)
    cache.add_model("X")
    cache.add_model("W")
    a_reached, a_resume = cache.gate("A")
    b_reached, b_resume = cache.gate("B")
    entered, release = threading.Event(), threading.Event()
    registry.clear_gates["X"] = (entered, release)
    adder_a, added_a = _named("A", cache.add_model, "a")
    assert a_reached.wait(GATE), "A never started an eviction"
    cache.refresh("X")  # a use rescues A's victim: nothing is undecided now
    adder_b, added_b = _named("B", cache.add_model, "b")
    assert b_reached.wait(GATE), "B never started an eviction"
    a_resume.set()
    assert entered.wait(GATE), "A never unloaded X"
    assert cache._book.state("X") is IdState.UNLOADING
    b_resume.set()
    assert cache.waiting("B").wait(GATE), "B neither waited nor awaited X's lifecycle"
    assert cache._book.state("X") is IdState.UNLOADING, cache._book
    release.set()
    join(adder_a)
    join(adder_b)
    assert "error" not in added_a, added_a
    assert "error" not in added_b, added_b
    assert "X" not in manager
    assert cache.statistics().lock_timeouts == 0

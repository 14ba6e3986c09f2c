"""Uses of a committed eviction victim wait for its unload instead of being lost (I15).

Once an eviction has committed to its victim (``_evicting`` to
``_unloading``), the victim is fixed: a ``refresh`` can no longer rescue it.
Such a use must not return before the unload's outcome is known, or it would
be lost (the model becomes most recent, then is evicted anyway). So a
``refresh`` or ``__getitem__`` of that id waits, without the LRU lock, for the
unload: gone, the refresh is a no-op and getitem raises ModelNotFound; the
unload failed, the use applies. Uses of other ids never wait (B15).

Each test parks the victim's ``clear_cache`` on events and watches the
cache's condition: a use that waits calls its ``wait``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from modelmanager import LockTimeout, ModelManager, ModelNotFound, WithFixedSizeCache
from modelmanager.decorators._cache_book import IdState

from .helpers import FakeRegistry, join, run_in_thread


class _UnloadFailed(Exception):
    """clear_cache's scripted failure."""


class _WatchedCondition(threading.Condition):
    """The cache's LRU condition; sets ``waiting`` (and ``progress``) when a thread waits."""

    def __init__(self, lock: Any, progress: threading.Event) -> None:
        super().__init__(lock)
        self.waiting = threading.Event()
        self.progress = progress

    def wait(self, timeout: float | None = None) -> bool:
        self.waiting.set()
        self.progress.set()
        return super().wait(timeout)


class _Eviction:
    """max_size=2 holding ``b`` (least recent) and ``a``; ``add_model("c")`` evicts b.

    ``start()`` runs the add in a thread and returns once b's ``clear_cache``
    has been entered (b is then a committed victim, still registered).
    """

    def __init__(
        self, registry: FakeRegistry, *, fail: bool = False, queue_lock_timeout: float = 30.0
    ) -> None:
        self.registry = registry
        self.cache = WithFixedSizeCache(
            ModelManager(registry), max_size=2, queue_lock_timeout=queue_lock_timeout
        )
        self.cache.add_model("b")
        self.cache.add_model("a")
        self.model_b = self.cache["b"]
        self.progress = threading.Event()
        self.condition = _WatchedCondition(self.cache._lru_lock, self.progress)
        self.cache._lru_changed = self.condition
        self.cache._admission._changed = self.condition
        self.cache._evictions._changed = self.condition
        self.entered, self.release = threading.Event(), threading.Event()
        registry.clear_gates["b"] = (self.entered, self.release)
        if fail:
            registry.clear_errors["b"] = _UnloadFailed("b")
        self.adder: threading.Thread | None = None
        self.add_outcome: dict[str, Any] = {}

    def start(self) -> None:
        self.adder, self.add_outcome = run_in_thread(self.cache.add_model, "c")
        assert self.entered.wait(30), "the eviction of b never reached clear_cache"
        assert self.cache._book.state("b") is IdState.UNLOADING

    def use_in_thread(self, use: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
        """Run ``use`` in a thread; wait until it waits on the condition or returns."""

        def tracked() -> Any:
            try:
                return use()
            finally:
                self.progress.set()

        thread, outcome = run_in_thread(tracked)
        assert self.progress.wait(30), "the use neither waited nor returned"
        return thread, outcome

    def finish(self) -> None:
        self.release.set()
        assert self.adder is not None
        join(self.adder)


def test_refresh_of_a_committed_victim_waits_then_is_a_no_op(registry: FakeRegistry) -> None:
    """refresh(b) during b's eviction returns only after b is gone; the eviction stands."""
    setup = _Eviction(registry)
    setup.start()
    user, outcome = setup.use_in_thread(lambda: setup.cache.refresh("b"))
    assert setup.condition.waiting.is_set(), "refresh(b) returned during b's unload"
    assert user.is_alive()
    setup.finish()
    join(user)
    assert outcome == {"result": None}
    assert "error" not in setup.add_outcome
    assert setup.cache.lru_order() == ["a", "c"]
    assert "b" not in setup.cache
    assert setup.cache._book.order() == ["a", "c"]  # no phantom (B13)


def test_refresh_of_a_victim_whose_unload_fails_applies_after_it(
    registry: FakeRegistry,
) -> None:
    """The unload fails: b stays (I6), and the waiting refresh then makes it most recent."""
    setup = _Eviction(registry, fail=True)
    setup.start()
    user, outcome = setup.use_in_thread(lambda: setup.cache.refresh("b"))
    assert setup.condition.waiting.is_set(), "refresh(b) returned during b's unload"
    assert user.is_alive()
    setup.finish()
    join(user)
    assert outcome == {"result": None}
    assert isinstance(setup.add_outcome.get("error"), _UnloadFailed)
    assert setup.cache.lru_order() == ["a", "b"]
    assert setup.cache["b"] is setup.model_b


def test_getitem_of_a_committed_victim_waits_then_raises_model_not_found(
    registry: FakeRegistry,
) -> None:
    """cache[b] during b's eviction never hands out the model being torn down."""
    setup = _Eviction(registry)
    setup.start()
    user, outcome = setup.use_in_thread(lambda: setup.cache["b"])
    assert setup.condition.waiting.is_set(), "cache['b'] returned during b's unload"
    assert user.is_alive()
    setup.finish()
    join(user)
    assert isinstance(outcome.get("error"), ModelNotFound), outcome
    assert setup.cache.lru_order() == ["a", "c"]


def test_getitem_of_a_victim_whose_unload_fails_returns_it(registry: FakeRegistry) -> None:
    """The unload fails: the waiting cache[b] returns the (still loaded) model."""
    setup = _Eviction(registry, fail=True)
    setup.start()
    user, outcome = setup.use_in_thread(lambda: setup.cache["b"])
    assert setup.condition.waiting.is_set(), "cache['b'] returned during b's unload"
    setup.finish()
    join(user)
    assert outcome == {"result": setup.model_b}
    assert setup.cache.lru_order() == ["b", "a"]  # the failed eviction kept b's position


@pytest.mark.parametrize("use", ["refresh", "getitem"])
def test_use_of_a_committed_victim_times_out_with_nothing_changed(
    registry: FakeRegistry, use: str
) -> None:
    """With queue_lock_timeout=0 the wait ends at once in LockTimeout; nothing changed."""
    setup = _Eviction(registry, queue_lock_timeout=0)
    setup.start()
    cache = setup.cache
    call: Callable[[], object] = (
        (lambda: cache.refresh("b")) if use == "refresh" else (lambda: cache["b"])
    )
    with pytest.raises(LockTimeout, match="eviction of model 'b'"):
        call()
    assert setup.cache._book.order() == ["b", "a"]  # b not moved
    assert setup.cache.statistics().lock_timeouts == 1
    setup.finish()
    assert "error" not in setup.add_outcome
    assert setup.cache.lru_order() == ["a", "c"]


def test_uses_of_other_ids_never_wait_for_an_unload(registry: FakeRegistry) -> None:
    """During b's eviction, a's refresh, hit, getitem and lease and `b in cache` answer
    at once, without waiting on the condition (B15: the LRU lock is free too)."""
    setup = _Eviction(registry)
    cache = setup.cache
    setup.start()
    model_a = cache["a"]
    cache.refresh("a")
    cache.add_model("a")
    with cache.lease("a") as leased:
        assert leased is model_a
    assert "a" in cache
    assert "b" in cache  # still registered: answered now, without waiting
    assert cache._lru_lock.acquire(blocking=False)  # nobody holds it across clear_cache
    cache._lru_lock.release()
    assert not setup.condition.waiting.is_set()
    setup.finish()
    assert "error" not in setup.add_outcome
    assert cache.lru_order() == ["a", "c"]

"""A failed eviction rolls back only its own choices, never another eviction's.

Evictions run one at a time while a victim is undecided (chosen or
unloading). But once a failed batch has put its failed victim back and its
other victims were rescued by uses, nothing is undecided: the next eviction
may choose the same ids before the failed batch gets the lock back for its
rollback. The rollback must then leave the newer eviction's marks alone: an
``UNLOADING`` mark belongs to the unload that set it (which always resolves it
itself) and a choice to the batch that made it. Found by the real-thread
stress test (``tests/core_threads/test_stress.py``) as a ``BookError`` from the
newer eviction's failure path.

The interleaving is pinned with events: the first batch's ``clear_cache`` is
gated, and its failure counter is held between the failed unload and the
rollback while the second batch chooses and starts unloading.
"""

from __future__ import annotations

import threading
from typing import Any

from modelmanager import ModelManager, WithFixedSizeCache
from modelmanager.decorators._cache_book import IdState

from .helpers import FakeRegistry, join, run_in_thread


class _UnloadFailed(Exception):
    """clear_cache's scripted failure."""


class _Pressure:
    """A memory probe the test switches on and off."""

    def __init__(self) -> None:
        self.on = False

    def free_fraction(self) -> float:
        return 0.1 if self.on else 0.9

    def release_cache(self) -> None:
        """Nothing to release."""


class _HeldFailureCount:
    """The cache's counters; ``eviction_failures`` pauses until the test resumes it."""

    def __init__(self, counters: Any) -> None:
        self._counters = counters
        self.paused, self.resume = threading.Event(), threading.Event()

    def increment(self, name: str, amount: int = 1) -> None:
        if name == "eviction_failures" and not self.resume.is_set():
            self.paused.set()
            assert self.resume.wait(30), "test never resumed the rollback"
        self._counters.increment(name, amount)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._counters, name)


def test_a_rollback_leaves_a_newer_evictions_marks_alone() -> None:
    registry = FakeRegistry()
    pressure = _Pressure()
    cache = WithFixedSizeCache(
        ModelManager(registry), max_size=10, memory_probe=pressure, memory_free_threshold=0.5
    )
    for model_id in ("m1", "m2", "m3"):
        cache.add_model(model_id)
    held = _HeldFailureCount(cache._counters)
    cache._counters = held  # type: ignore[assignment]
    cache._evictions._counters = held  # type: ignore[assignment]
    registry.clear_errors["m1"] = _UnloadFailed("m1")
    first_entered, first_release = threading.Event(), threading.Event()
    registry.clear_gates["m1"] = (first_entered, first_release)
    pressure.on = True

    # Batch 1 (add x) chooses m1, m2, m3 and parks in m1's clear_cache.
    first, first_outcome = run_in_thread(cache.add_model, "x")
    assert first_entered.wait(30)
    assert cache._book.state("m1") is IdState.UNLOADING
    cache.refresh("m2")  # uses rescue the other two victims
    cache.refresh("m3")
    assert not cache._book.chosen("m2")
    assert not cache._book.chosen("m3")
    # m1's unload fails; batch 1 stops between putting m1 back and its rollback.
    second_entered, second_release = threading.Event(), threading.Event()
    first_release.set()
    assert held.paused.wait(30)
    registry.clear_gates["m1"] = (second_entered, second_release)

    # Batch 2 (add y): nothing is undecided, so it chooses m1, m2, m3 afresh.
    second, second_outcome = run_in_thread(cache.add_model, "y")
    assert second_entered.wait(30)
    assert cache._book.state("m1") is IdState.UNLOADING
    assert cache._book.chosen("m2")
    assert cache._book.chosen("m3")

    # Batch 1's rollback runs now: it must not touch batch 2's marks.
    held.resume.set()
    join(first)
    assert isinstance(first_outcome.get("error"), _UnloadFailed), first_outcome
    assert cache._book.state("m1") is IdState.UNLOADING
    assert cache._book.chosen("m2")
    assert cache._book.chosen("m3")

    # Batch 2's unload of m1 fails too: its own failure path finds its own marks.
    second_release.set()
    join(second)
    assert isinstance(second_outcome.get("error"), _UnloadFailed), second_outcome
    assert not cache._book.marks
    assert sorted(cache.lru_order()) == sorted(cache.keys()) == ["m1", "m2", "m3"]

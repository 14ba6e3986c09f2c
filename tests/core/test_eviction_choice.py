"""An eviction's choice must still hold when it takes effect (I15).

A capacity eviction chooses its victim under the LRU lock, then unloads it
later. A use of the victim in between rescues it; any other change (a
removal of another id, a failed load releasing its slot, an unpin, a lease
given back) is caught when the eviction commits its victim: the cache
re-checks that its add still needs room and that the victim is still the
least-recent evictable id, and otherwise drops it and chooses again.
"""

from __future__ import annotations

import threading

from modelmanager import ModelManager, WithFixedSizeCache

from .helpers import FakeRegistry, join, run_in_thread


def _parking(parked: threading.Event, resume: threading.Event) -> type[WithFixedSizeCache]:
    """A cache whose first eviction parks after the choice, before its commit."""

    class Parking(WithFixedSizeCache):
        def _evict_one(self, victim: str) -> bool:
            if not parked.is_set():
                parked.set()
                assert resume.wait(30), "the test never resumed the eviction"
            return super()._evict_one(victim)

    return Parking


def test_a_removal_after_the_choice_makes_the_eviction_unnecessary(
    registry: FakeRegistry,
) -> None:
    """max_size=2 holding a (least recent) and b; add(c) chooses a and is parked;
    remove(b) returns, cache[a] still returns a: the add then needs no room, so a stays."""
    parked, resume = threading.Event(), threading.Event()

    cache = _parking(parked, resume)(ModelManager(registry), max_size=2)
    cache.add_model("a")
    cache.add_model("b")
    adder, outcome = run_in_thread(cache.add_model, "c")
    assert parked.wait(30)
    cache.remove("b")
    assert cache["a"].model_id == "a"  # so the add's admission is after this read
    resume.set()
    join(adder)
    assert "error" not in outcome
    assert sorted(cache.keys()) == ["a", "c"]


def test_the_eviction_still_happens_when_still_needed(registry: FakeRegistry) -> None:
    """Same start; while add(c) is parked, b is used (not the victim) and an
    absent id is removed: a is still the least recent and room is still
    needed, so a goes and the cache keeps b and c."""
    parked, resume = threading.Event(), threading.Event()
    cache = _parking(parked, resume)(ModelManager(registry), max_size=2)
    cache.add_model("a")
    cache.add_model("b")
    adder, outcome = run_in_thread(cache.add_model, "c")
    assert parked.wait(30)
    assert cache["b"].model_id == "b"
    cache.remove("zzz")  # a no-op removal changes nothing
    resume.set()
    join(adder)
    assert "error" not in outcome
    assert sorted(cache.keys()) == ["b", "c"]
    assert cache.lru_order() == ["b", "c"]
    assert cache.statistics().evictions_capacity == 1


def test_an_unpin_after_the_choice_changes_the_victim(registry: FakeRegistry) -> None:
    """max_size=2 holding p (pinned, least recent) and a; add(c) chooses a and
    is parked; p is unpinned and a is still readable: p is now the least-recent
    evictable model, so p goes instead and the cache keeps a and c."""
    parked, resume = threading.Event(), threading.Event()
    cache = _parking(parked, resume)(ModelManager(registry), max_size=2)
    cache.add_model("p", pin=True)
    cache.add_model("a")
    adder, outcome = run_in_thread(cache.add_model, "c")
    assert parked.wait(30)
    cache.unpin_model("p")
    resume.set()
    join(adder)
    assert "error" not in outcome
    assert sorted(cache.keys()) == ["a", "c"]
    assert cache.lru_order() == ["a", "c"]

"""An eviction's choice must still hold when it takes effect (I15; a known open finding).

A capacity eviction chooses its victim under the LRU lock, then unloads it
later. A use of the victim in between rescues it, but other changes do not
re-open the choice: a removal of another id (or a failed load releasing its
slot, an unpin, a lease given back) can make the eviction unnecessary or
choose a different victim, and an observer can see the victim still loaded
after such a change. No sequential order then explains the history. This
test pins the simplest case down; it is expected to fail until the choice is
revalidated (see the cache's module doc).
"""

from __future__ import annotations

import threading

import pytest

from modelmanager import ModelManager, WithFixedSizeCache

from .helpers import FakeRegistry, join, run_in_thread


@pytest.mark.xfail(
    strict=True,
    reason="I15 open: a chosen victim is evicted although a removal made room meanwhile",
)
def test_a_removal_after_the_choice_makes_the_eviction_unnecessary(
    registry: FakeRegistry,
) -> None:
    """max_size=2 holding a (least recent) and b; add(c) chooses a and is parked;
    remove(b) returns, cache[a] still returns a: the add then needs no room, so a stays."""
    parked, resume = threading.Event(), threading.Event()

    class Parking(WithFixedSizeCache):
        def _evict_one(self, victim: str) -> bool:
            parked.set()
            assert resume.wait(30), "the test never resumed the eviction"
            return super()._evict_one(victim)

    cache = Parking(ModelManager(registry), max_size=2)
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

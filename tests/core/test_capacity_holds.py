"""Issue 14: the bound comes back, a chosen policy for a full cache, quiet logs.

Each test would fail on the cache before it (admitted over the bound and
stayed there until the next cold add; one warning per call; no policy).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import lockstep
from modelmanager import (
    CacheFull,
    InvalidArgument,
    InvalidArgumentType,
    LockTimeout,
    ModelManager,
    ModelManagerDecorator,
    WithFixedSizeCache,
)
from modelmanager._quiet_log import QuietLog
from modelmanager.errors import swallowed
from models_spec.adapter import CoreAdapter
from models_spec.fakes import ScriptedRegistry

from .helpers import FakeRegistry, join, run_in_thread

CACHE_LOGGER = "modelmanager.decorators.fixed_size_cache"


def cache_of(registry: Any, max_size: int = 2, **kwargs: Any) -> WithFixedSizeCache:
    return WithFixedSizeCache(ModelManager(registry), max_size=max_size, **kwargs)


# ------------------------------------------------------- the issue's snippet


@pytest.mark.parametrize("on_full", ["wait", "proceed"])
def test_issue_snippet_ends_with_two_models(registry: FakeRegistry, on_full: str) -> None:
    """Cache of 2, two leases, add C, give back: two models registered, not three."""
    cache = cache_of(registry, on_full=on_full)
    with cache.acquire("A"), cache.acquire("B"):
        cache.add_model("C")  # every model leased (by this thread): admitted over the bound
        assert len(cache.manager) == 3
    assert len(cache.manager) == 2
    assert cache.lru_order() == ["A", "C"]  # B, released first and least recent, went
    cache.add_model("A")  # warm hit
    assert len(cache.manager) == 2
    cache.add_model("D")
    assert len(cache.manager) == 2
    stats = cache.statistics()
    assert (stats.pinned_overflow, stats.evictions_restore) == (1, 1)
    assert stats.restoration_failures == 0


def test_issue_snippet_with_refuse_changes_nothing(registry: FakeRegistry) -> None:
    """on_full="refuse": the add over a full cache raises CacheFull at once."""
    cache = cache_of(registry, on_full="refuse")
    with cache.acquire("A"), cache.acquire("B"):
        with pytest.raises(CacheFull, match="every model in the cache") as caught:
            cache.add_model("C")
        assert caught.value.model_id == "C"
    assert cache.lru_order() == ["A", "B"]
    assert "C" not in registry.requested
    stats = cache.statistics()
    assert (stats.full_refusals, stats.pinned_overflow, stats.loads) == (1, 0, 2)


def test_default_policy_is_wait(registry: FakeRegistry) -> None:
    """The default full-cache policy is the bounded wait."""
    assert cache_of(registry).on_full == "wait"


# ------------------------------------------------------------ restoration


def test_unpin_brings_the_bound_back(registry: FakeRegistry) -> None:
    """Pins over the bound: unpinning evicts least recent first, down to the bound."""
    cache = cache_of(registry, on_full="proceed")
    cache.add_model("a", pin=True)
    cache.add_model("b", pin=True)
    cache.add_model("c")  # over the bound: a and b are pinned
    assert cache.lru_order() == ["a", "b", "c"]
    cache.unpin_model("b")
    assert cache.lru_order() == ["a", "c"]  # b was the least recent evictable model
    cache.unpin_model("a")
    assert cache.lru_order() == ["a", "c"]  # within the bound: nothing goes
    assert cache.statistics().evictions_restore == 1


def test_restoration_never_evicts_a_leased_or_pinned_model(registry: FakeRegistry) -> None:
    """Giving back one lease while another model is leased and one pinned."""
    cache = cache_of(registry, max_size=1, on_full="proceed")
    cache.add_model("p", pin=True)
    with cache.lease("p"):
        pass
    with cache.acquire("a"):
        with cache.acquire("b"):
            pass  # b given back: over by 2; a leased and p pinned stay; b goes
        assert cache.lru_order() == ["p", "a"]
    assert cache.lru_order() == ["p"]  # a given back: it goes too
    assert cache.statistics().evictions_restore == 2


def test_a_cold_add_restores_without_evicting_what_it_loaded(registry: FakeRegistry) -> None:
    """An add over the bound keeps its own model; the next lease end restores."""
    cache = cache_of(registry, max_size=1, on_full="proceed")
    with cache.acquire("a"):
        cache.add_model("b")  # a leased: b admitted over the bound, and kept
        assert cache.lru_order() == ["a", "b"]
    assert cache.lru_order() == ["b"]


def test_restoration_failure_is_counted_and_keeps_the_model(
    registry: FakeRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    """An unload that fails during restoration: the model stays, counted, logged once."""
    cache = cache_of(registry, max_size=1, on_full="proceed")
    registry.clear_errors["a"] = RuntimeError("a busy")
    with caplog.at_level(logging.WARNING, logger=CACHE_LOGGER):
        with cache.acquire("a"):
            cache.add_model("b")
        with cache.lease("b"):
            pass  # tries a again: fails again, held back in the log
    assert cache.lru_order() == ["a", "b"]
    stats = cache.statistics()
    assert (stats.restoration_failures, stats.eviction_failures) == (2, 2)
    assert caplog.text.count("could not bring the cache back") == 1
    # Raised to nobody: the error says so, for whoever logs or inspects it.
    assert swallowed(registry.clear_errors["a"])
    assert "restoration of its bound (max_size=1)" in registry.clear_errors["a"].__notes__[0]
    del registry.clear_errors["a"]
    with cache.lease("b"):
        pass
    assert cache.lru_order() == ["b"]


def _lease_ends_while_y_unloads(
    registry: FakeRegistry, *, failing: str
) -> tuple[WithFixedSizeCache, dict[str, Any]]:
    """A cache of 1 (proceed) holds x leased and y over the bound; a thread adds z,
    choosing y, and x's lease ends while y's unload is held. ``failing``'s unload
    raises. Returns the cache and the add's outcome once y's unload is let go."""
    cache = cache_of(registry, max_size=1, on_full="proceed")
    entered, release = threading.Event(), threading.Event()
    registry.clear_gates["y"] = (entered, release)
    registry.clear_errors[failing] = RuntimeError(f"{failing} busy")
    with cache.acquire("x"):
        cache.add_model("y")  # x leased: y over the bound
        adder, outcome = run_in_thread(cache.add_model, "z")
        assert entered.wait(timeout=30), "the add never evicted y"
    release.set()  # x's lease ended with y's eviction undecided: left to the add
    join(adder)
    return cache, outcome


def test_a_lease_given_back_mid_admission_is_the_restorations_not_the_adds(
    registry: FakeRegistry,
) -> None:
    """An add admitted over the bound with what could go evicts no more once a lease ends.

    x leased, y loaded over the bound: an add of z chooses y (all it can)
    and is admitted over the bound. x's lease ends while y unloads; x is
    then the restoration's to evict after z loads, not a second victim of
    the add, so x's failing unload is a counted restoration failure and
    the add succeeds (before: the add evicted x and failed with its error).
    """
    cache, outcome = _lease_ends_while_y_unloads(registry, failing="x")
    assert "error" not in outcome, repr(outcome.get("error"))
    assert cache.lru_order() == ["x", "z"]  # x's unload failed: it stays, counted
    stats = cache.statistics()
    assert (stats.evictions_capacity, stats.restoration_failures) == (1, 1)
    assert stats.pinned_overflow == 2  # y, then z
    del registry.clear_errors["x"]
    with cache.lease("z"):
        pass  # the next lease end brings the bound back
    assert cache.lru_order() == ["z"]


def test_a_restoration_left_to_an_add_fails_with_its_eviction_counted(
    registry: FakeRegistry,
) -> None:
    """A lease ends while an add's victim unloads: the bound is left to that add.

    When the victim's unload then fails, the add fails with that error and
    restores nothing (the spec's failed admission), so the restoration left
    to it failed too: it is counted as one, as if it had run itself (before:
    not counted, and I11 read the models over the bound as a lost bound).
    """
    cache, outcome = _lease_ends_while_y_unloads(registry, failing="y")
    assert isinstance(outcome.get("error"), RuntimeError), outcome
    assert not swallowed(outcome["error"])  # the add raised it: not marked as swallowed
    assert cache.lru_order() == ["x", "y"]
    stats = cache.statistics()
    assert (stats.eviction_failures, stats.restoration_failures) == (1, 1)
    del registry.clear_errors["y"]
    with cache.lease("y"):
        pass  # the next lease end brings the bound back
    assert cache.lru_order() == ["y"]


def test_restoration_through_decorators_and_inner_leases(registry: FakeRegistry) -> None:
    """A decorator over the cache reaches its lease; a lease on the inner manager does not."""
    cache = WithFixedSizeCache(
        ModelManagerDecorator(ModelManager(registry)), max_size=1, on_full="proceed"
    )
    stack = ModelManagerDecorator(cache)
    with stack.acquire("a"):
        stack.add_model("b")
    assert cache.lru_order() == ["b"]
    with cache.manager.lease("b"):  # bypasses the cache: documented, nothing to restore
        pass
    assert cache.lru_order() == ["b"]


# ------------------------------------------------------- the wait policy


def test_wait_times_out_with_nothing_changed(registry: FakeRegistry) -> None:
    """Every model leased by another thread for longer than the bound: LockTimeout."""
    cache = cache_of(registry, max_size=1, queue_lock_timeout=0.05)
    cache.add_model("a")
    with _leased_in_another_thread(cache, "a"):
        with pytest.raises(LockTimeout, match="every model in the cache"):
            cache.add_model("b")
        assert cache.lru_order() == ["a"]
        assert "b" not in registry.requested
        stats = cache.statistics()
        assert (stats.full_waits, stats.pinned_overflow) == (1, 0)
        assert stats.lock_timeouts >= 1


@contextlib.contextmanager
def _leased_in_another_thread(cache: WithFixedSizeCache, model_id: str) -> Iterator[None]:
    """While the block runs, another thread holds a lease on ``model_id``."""
    entered, release = threading.Event(), threading.Event()

    def hold() -> None:
        with cache.lease(model_id):
            entered.set()
            assert release.wait(30)

    holder, outcome = run_in_thread(hold)
    assert entered.wait(30)
    try:
        yield
    finally:
        release.set()
        join(holder)
    assert outcome == {"result": None}


def _ended_elsewhere(cache: WithFixedSizeCache, model_id: str) -> None:
    """This thread takes a lease on ``model_id``; another thread ends it."""
    lease = cache.lease(model_id)
    lease.__enter__()
    ender, outcome = run_in_thread(lambda: lease.__exit__(None, None, None))
    join(ender)
    assert outcome == {"result": None}


def test_a_lease_ended_by_another_thread_leaves_its_takers_count(
    registry: FakeRegistry,
) -> None:
    """The taker holds nothing once another thread ended its lease: its next add of a
    full cache waits (and times out) like anyone's, never admitted over the bound."""
    cache = cache_of(registry, max_size=1, queue_lock_timeout=0.05)
    cache.add_model("a")
    _ended_elsewhere(cache, "a")
    with _leased_in_another_thread(cache, "a"):
        with pytest.raises(LockTimeout, match="every model in the cache"):
            cache.add_model("b")  # before: counted as a lease holder, admitted over
        assert cache.lru_order() == ["a"]
        assert cache.statistics().pinned_overflow == 0


def test_a_thread_that_ended_anothers_lease_still_counts_its_own(
    registry: FakeRegistry,
) -> None:
    """Ending someone else's lease takes nothing off the ender's own count: holding a
    lease of its own, its add of a full cache is admitted over the bound at once
    rather than made to wait for room its own lease keeps taken (hold-and-wait)."""
    cache = cache_of(registry, max_size=1, queue_lock_timeout=0.05)
    cache.add_model("a")
    lease = cache.lease("a")
    taker, outcome = run_in_thread(lease.__enter__)
    join(taker)
    assert "result" in outcome  # taken there
    lease.__exit__(None, None, None)  # ended here, taken there
    with cache.lease("a"):
        cache.add_model("b")  # before: this thread counted 0, waited, timed out
        assert sorted(cache.lru_order()) == ["a", "b"]
    assert cache.statistics().pinned_overflow == 1
    assert cache.lru_order() == ["b"]


def _lockstep_stack(max_size: int, **kwargs: Any) -> tuple[WithFixedSizeCache, ScriptedRegistry]:
    registry = ScriptedRegistry()
    cache = WithFixedSizeCache(ModelManager(registry), max_size=max_size, **kwargs)
    return cache, registry


class _ReleaseOnly:
    """A gate's release whose wait ignores its timeout: only ``set`` ends it (so the
    one timeout lockstep can fire is the cache's own)."""

    def __init__(self) -> None:
        self._event = lockstep.threading.Event()

    def set(self) -> None:
        self._event.set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._event.wait()


def test_a_failed_remove_restores_the_bound_a_timed_out_restoration_left() -> None:
    """A restoration that times out waiting for a removal's lifecycle leaves the bound to
    that removal: when the removal fails, it evicts what must go before it returns.

    Deterministic: the removal holds ``a``'s lifecycle inside ``a``'s unload until the
    restoration (an unpin) has given up, so the lifecycle wait's timeout is the only
    choice lockstep has.  Without ``remove``'s own restoration the cache keeps ``a`` and
    ``b`` over a bound of 1 with nothing pinned or leased, and nothing brings it back.
    """

    def scenario() -> None:
        registry = FakeRegistry()
        entered, release = lockstep.threading.Event(), _ReleaseOnly()
        cache = WithFixedSizeCache(
            ModelManager(registry, lock_timeout=5.0), max_size=1, on_full="proceed"
        )
        cache.add_model("a", pin=True)
        cache.add_model("b")  # a pinned: b admitted over the bound
        registry.clear_gates["a"] = (entered, release)
        registry.clear_errors["a"] = RuntimeError("a's unload fails")

        def remove_a() -> None:
            with contextlib.suppress(RuntimeError):
                cache.remove("a")

        remover = lockstep.spawn(remove_a, name="remover")
        entered.wait()  # the remover holds a's lifecycle, inside a's unload
        unpinner = lockstep.spawn(lambda: cache.unpin_model("a"), name="unpinner")
        unpinner.join()  # its restoration chose a and timed out on a's lifecycle
        assert cache.statistics().restoration_failures == 1
        release.set()
        remover.join()  # the remove failed: a stays, and the bound is the remove's
        assert cache.lru_order() == ["a"]
        assert len(cache.manager) == 1

    result = lockstep.explore(
        scenario,
        strategy=lockstep.DFSStrategy(preemption_bound=2, timeouts=True),
        budget=50,
        patch=CoreAdapter(0).patch_modules(),
        progress=False,
    )
    assert result.failure is None, str(result.failure)
    assert result.exhausted


def test_wait_is_woken_by_a_lease_given_back_on_every_schedule() -> None:
    """A waiting add is woken when the other thread gives its lease back (no lost wake-up)."""

    def scenario() -> None:
        cache, _ = _lockstep_stack(1, queue_lock_timeout=30.0)
        cache.add_model("a")
        leased = lockstep.threading.Event()

        def hold() -> None:
            with cache.lease("a"):
                leased.set()
                lockstep.checkpoint("holding a")

        holder = lockstep.spawn(hold, name="holder")
        leased.wait()
        cache.add_model("b")  # waits for the lease if it is still held, never times out
        holder.join()
        assert cache.lru_order() == ["b"]
        assert len(cache.manager) == 1
        assert cache.statistics().lock_timeouts == 0

    result = lockstep.explore(
        scenario,
        strategy=lockstep.DFSStrategy(preemption_bound=2, timeouts=False),
        budget=400,
        patch=CoreAdapter(0).patch_modules(),
        progress=False,
    )
    assert result.failure is None, str(result.failure)
    assert result.executions > 1


def test_wait_is_woken_by_an_unpin_on_every_schedule() -> None:
    """A pin ending also wakes a waiting add (unpin notifies), whenever the add starts."""

    def scenario() -> None:
        cache, _ = _lockstep_stack(1, queue_lock_timeout=30.0)
        cache.add_model("p", pin=True)
        adder = lockstep.spawn(lambda: cache.add_model("x"), name="adder")
        lockstep.checkpoint("before unpin")
        cache.unpin_model("p")
        adder.join()
        assert cache.lru_order() == ["x"]
        assert len(cache.manager) == 1
        stats = cache.statistics()
        assert (stats.lock_timeouts, stats.pinned_overflow) == (0, 0)

    result = lockstep.explore(
        scenario,
        strategy=lockstep.DFSStrategy(preemption_bound=2, timeouts=False),
        budget=400,
        patch=CoreAdapter(0).patch_modules(),
        progress=False,
    )
    assert result.failure is None, str(result.failure)
    assert result.executions > 1


# -------------------------------------------------------------- arguments


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"on_full": "block"}, InvalidArgument, r"on_full must be one of 'wait', 'proceed'"),
        ({"on_full": None}, InvalidArgumentType, "on_full must be one of"),
        ({"max_weight": 10}, InvalidArgument, "max_weight and weigher go together"),
        ({"weigher": lambda rid, m: 1}, InvalidArgument, "pass max_weight="),
        ({"max_weight": 0, "weigher": lambda rid, m: 1}, InvalidArgument, "max_weight"),
        ({"max_weight": 1.5, "weigher": lambda rid, m: 1}, InvalidArgumentType, "max_weight"),
        ({"max_weight": 1, "weigher": "bytes"}, InvalidArgumentType, "weigher must be"),
        ({"max_size": None}, InvalidArgument, "max_size=None bounds the cache by weight only"),
    ],
)
def test_bad_capacity_arguments(
    registry: FakeRegistry, kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    """Every new constructor argument is checked, the message says what to do."""
    manager = ModelManager(registry)
    manager.add_model("a")
    with pytest.raises(error, match=match):
        WithFixedSizeCache(manager, **kwargs)
    assert manager.keys() == ["a"]


# ------------------------------------------------------------- quiet logs


def test_overflow_is_logged_once_per_id_and_counted_exactly(
    registry: FakeRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    """1,000 adds over the bound: 1,000 counted, one line per id."""
    cache = cache_of(registry, max_size=1, on_full="proceed")
    cache.add_model("p", pin=True)
    with caplog.at_level(logging.WARNING, logger=CACHE_LOGGER):
        for _ in range(500):
            cache.add_model("x")
            cache.remove("x")
            cache.add_model("y")
            cache.remove("y")
    assert cache.statistics().pinned_overflow == 1000
    overflow_lines = [r for r in caplog.records if "over the bound" in r.getMessage()]
    assert [r.args[0] for r in overflow_lines] == ["x", "y"]  # type: ignore[index]


def test_quiet_log_reports_what_it_held_back() -> None:
    """First occurrence logged, repeats held back for the interval, then counted."""
    now = [0.0]
    records: list[str] = []

    class Capture(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    logger = logging.getLogger("tests.quiet")
    logger.propagate = False
    logger.addHandler(Capture())
    quiet = QuietLog(logger, interval=60.0, max_keys=2, clock=lambda: now[0])
    assert quiet.warning("k", "event %s", 1) is True
    assert quiet.warning("k", "event %s", 2) is False
    assert quiet.warning("k", "event %s", 3) is False
    assert quiet.held_back() == 2
    now[0] = 61.0
    assert quiet.warning("k", "event %s", 4) is True
    assert records == ["event 1", "event 4 (2 more since the last report)"]
    quiet.warning("a", "a")
    quiet.warning("b", "b")  # max_keys=2: "k" is forgotten
    now[0] = 62.0
    assert quiet.warning("k", "again") is True
    assert quiet.held_back() == 0


# ------------------------------------------- a room taken meanwhile (issue 35)

_WEIGHTS = {"a": 2, "b": 2, "x": 2, "z": 2}


class _HeavyLoadCommitsMeanwhile(WithFixedSizeCache):
    """While the first eviction of an add runs, z's load (admitted earlier with its
    first-load estimate of 0) commits at its real weight, 2: the room the add's
    victims made is taken, with no load in flight any more."""

    committed = False

    def _evict(self, victims: list[str], cause: str, batch: object) -> int:
        went = super()._evict(victims, cause, batch)
        if not self.committed:
            self.committed = True
            self._manager.add_model("z")
            self._commit_load("z", "z" in self.pinned(), _WEIGHTS["z"])
        return went


def _room_taken_cache(on_full: str, *, pinned: tuple[str, ...] = ()) -> WithFixedSizeCache:
    """max_weight 4 holding a and b (2 each); x's estimate is 2, z is in flight at 0."""
    cache = _HeavyLoadCommitsMeanwhile(
        ModelManager(ScriptedRegistry()),
        max_size=None,
        max_weight=4,
        weigher=lambda resolved_id, model: _WEIGHTS[resolved_id],
        on_full=on_full,  # type: ignore[arg-type]
        queue_lock_timeout=0,
    )
    cache.add_model("x")
    cache.remove("x")  # its weight is known now: its next load counts 2
    cache.add_model("a")
    cache.add_model("b")
    for resolved_id in pinned:
        cache.pin_model(resolved_id)
    with cache._lru_changed:  # z's add reserved its slot (first load: estimate 0)
        cache._book.reserve("z")
    return cache


@pytest.mark.parametrize("on_full", ["wait", "refuse"])
def test_an_add_whose_room_was_taken_decides_again_under_a_safe_policy(on_full: str) -> None:
    """x evicted a for its estimate; z, heavier than its estimate, took that room. Under
    "wait" and "refuse" x is not admitted over the bound: it decides again and evicts b."""
    cache = _room_taken_cache(on_full)
    cache.add_model("x")
    stats = cache.statistics()
    assert sorted(cache.keys()) == ["x", "z"]
    assert (stats.pinned_overflow, stats.evictions_capacity, stats.evictions_restore) == (0, 2, 0)


def test_an_add_whose_room_was_taken_is_admitted_over_under_proceed() -> None:
    """Under "proceed" the same add loads over the bound (counted), and its restoration
    brings the cache back, never evicting what it loaded."""
    cache = _room_taken_cache("proceed")
    cache.add_model("x")
    stats = cache.statistics()
    assert sorted(cache.keys()) == ["x", "z"]
    assert (stats.pinned_overflow, stats.evictions_capacity, stats.evictions_restore) == (1, 1, 1)


@pytest.mark.parametrize(("on_full", "error"), [("refuse", CacheFull), ("wait", LockTimeout)])
def test_an_add_whose_room_was_taken_by_pinned_models_waits_or_is_refused(
    on_full: str, error: type[Exception]
) -> None:
    """With b and z pinned nothing else can go: x is refused (or its wait times out)
    holding no slot, never loaded over the bound; its first victim stays evicted."""
    cache = _room_taken_cache(on_full, pinned=("b", "z"))
    with pytest.raises(error):
        cache.add_model("x")
    stats = cache.statistics()
    assert sorted(cache.keys()) == ["b", "z"]
    assert stats.pinned_overflow == 0
    assert cache.in_flight_loads() == 0
    assert not cache._book.slots

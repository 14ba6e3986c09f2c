"""The cache's admission protocol alone: AdmissionControl over a real book and policy.

:class:`AdmissionControl` owns the tickets, eviction batches, full-waiters,
restoration deferral and weight estimates of one cache. Here it runs
sequentially, in one thread, against a :class:`CacheBook`, the real
:class:`CapacityPolicy` and a scripted owner and inner layer: the owner's
``_evict`` unloads the chosen victims as the cache's evictions do (or fails,
or finds a victim busy), so each step of the protocol (reserve, choose,
evict, decide again, give back, restore) is checked by its effect on the
book and the counters, without threads or timing.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator

import pytest

from modelmanager import CacheFull, LockTimeout
from modelmanager._quiet_log import QuietLog
from modelmanager.decorators._cache_admission import AdmissionControl, VictimBusy, remaining
from modelmanager.decorators._cache_book import CacheBook, IdState
from modelmanager.decorators._cache_options import CacheOptions, CacheParts
from modelmanager.decorators._cache_policy import RESTORATION, CapacityPolicy
from modelmanager.statistics import Counters


class _Inner:
    """The inner layer as the admission sees it: registration, leases, lifecycles."""

    def __init__(self) -> None:
        self.registered: set[str] = set()
        self.leases: dict[str, int] = {}
        self.lifecycles: list[str] = []

    def __contains__(self, resolved_id: object) -> bool:
        return resolved_id in self.registered

    def lease_counts(self) -> dict[str, int]:
        return dict(self.leases)

    @contextlib.contextmanager
    def lifecycle(self, resolved_id: str) -> Iterator[None]:
        self.lifecycles.append(resolved_id)
        yield


class _Probe:
    """A memory probe whose free fraction rises by ``step`` with every release."""

    def __init__(self, fraction: float, step: float = 0.0) -> None:
        self.fraction, self.step, self.releases = fraction, step, 0

    def free_fraction(self) -> float:
        return self.fraction

    def release_cache(self) -> None:
        self.releases += 1
        self.fraction += self.step


class _Owner:
    """The cache around the admission: a bounded lock, and evictions that unload."""

    def __init__(self, book: CacheBook, inner: _Inner, lock: threading.Lock) -> None:
        self.book, self.inner, self.lock = book, inner, lock
        self.evicted: list[tuple[list[str], str]] = []
        self.busy: list[str] = []  # victims found busy, one each, in order
        self.rescue: list[str] = []  # victims rescued by a use before their commit
        self.fail: set[str] = set()  # victims whose unload fails
        self.restores: list[str | None] = []
        self.admission: AdmissionControl | None = None
        self.over_room_taken = False

    @contextlib.contextmanager
    def _lru_guard(self, deadline: float | None = None) -> Iterator[None]:
        with self.lock:
            yield

    def _evict(self, victims: list[str], cause: str, batch: object) -> int:
        self.evicted.append((list(victims), cause))
        went = 0
        for victim in victims:
            if self.rescue and self.rescue[0] == victim:  # used meanwhile: skipped
                self.rescue.pop(0)
                with self.lock:
                    self.book.use(victim)
                continue
            if self.busy and self.busy[0] == victim:
                self.busy.pop(0)
                with self.lock:
                    for rest in victims[victims.index(victim) :]:
                        if self.book.owned_by(rest, batch) and self.book.chosen(rest):
                            self.book.unchoose(rest)
                busy = VictimBusy(victim)
                busy.evicted = went
                raise busy
            with self.lock:
                self.book.start_unload(victim)
            if victim in self.fail:
                with self.lock:
                    self.book.fail_unload(victim)
                    assert self.admission is not None
                    self.admission.unload_failed_locked(batch)
                raise RuntimeError(f"unloading {victim} failed")
            self.inner.registered.discard(victim)
            with self.lock:
                self.book.forget(victim)
            went += 1
        return went

    def _restore(self, exclude: str | None = None) -> None:
        self.restores.append(exclude)

    def _admits_over_room_taken(self, resolved_id: str) -> bool:
        return self.over_room_taken


def _admission(
    max_size: int | None = 2,
    *,
    on_full: str = "wait",
    loaded: tuple[str, ...] = (),
    max_weight: int | None = None,
    estimates: dict[str, int] | None = None,
    probe: _Probe | None = None,
    threshold: float = 0.0,
    holds_lease: bool = False,
) -> tuple[AdmissionControl, _Owner, Counters]:
    book, inner, lock = CacheBook(), _Inner(), threading.Lock()
    book.adopt(loaded)
    inner.registered.update(loaded)
    owner = _Owner(book, inner, lock)
    counters = Counters()
    options = CacheOptions.validated(
        max_size=max_size,
        max_weight=max_weight,
        weigher=(lambda rid, model: 1) if max_weight is not None else None,
        on_full=on_full,
        queue_lock_timeout=0,
        memory_free_threshold=threshold,
        memory_probe=probe,
        delete_evicted_from_disk=False,
    )
    parts = CacheParts(book, inner, threading.Condition(lock), counters, options)  # type: ignore[arg-type]
    admission = AdmissionControl(
        owner,
        parts,
        CapacityPolicy,
        QuietLog(logging.getLogger("test_admission")),
        estimates or {},
        lambda: probe,  # type: ignore[arg-type,return-value]
        lambda: holds_lease,
    )
    owner.admission = admission
    return admission, owner, counters


def _count(counters: Counters, name: str) -> int:
    return int(getattr(counters.snapshot(), name))


def test_an_add_with_room_reserves_a_slot_and_holds_no_ticket() -> None:
    admission, owner, _ = _admission(2, loaded=("a",))
    admission.admit("x")
    assert owner.book.slots == {"x": 1}
    assert admission.admitting() == {}
    assert owner.evicted == []


def test_a_full_cache_evicts_the_least_recent_and_the_slot_is_held_on_return() -> None:
    admission, owner, counters = _admission(2, loaded=("a", "b"))
    admission.admit("x")
    assert owner.evicted == [(["a"], "evictions_capacity")]
    assert owner.book.order() == ["b"]
    assert owner.book.slots == {"x": 1}
    assert admission.admitting() == {}  # the ticket ended: x's load is in flight
    assert admission._batch_tickets == {}
    assert not admission.maybe_over
    assert owner.restores == []  # admitted within the bound: nothing to restore
    assert _count(counters, "pinned_overflow") == 0


def test_a_busy_victim_gives_the_slot_back_waits_for_its_lifecycle_and_decides_again() -> None:
    admission, owner, _ = _admission(1, loaded=("a",))
    owner.busy = ["a"]
    admission.admit("x")
    assert owner.inner.lifecycles == ["a"]  # waited for the busy victim, holding nothing
    assert [victims for victims, _ in owner.evicted] == [["a"], ["a"]]
    assert owner.book.slots == {"x": 1}
    assert admission.admitting() == {}


def test_a_failed_unload_gives_the_slot_back_in_the_same_step_and_restores_nothing() -> None:
    admission, owner, counters = _admission(1, loaded=("a",))
    owner.fail = {"a"}
    with pytest.raises(RuntimeError, match="unloading a failed"):
        admission.admit("x")
    assert owner.book.slots == {}
    assert owner.book.state("a") is IdState.COMMITTED
    assert admission.admitting() == {}
    assert admission._batch_tickets == {}
    assert owner.restores == []  # the spec's failed admission restores nothing
    assert _count(counters, "restoration_failures") == 0


def test_refuse_raises_cache_full_with_nothing_held() -> None:
    admission, owner, counters = _admission(1, on_full="refuse", loaded=("a",))
    owner.book.pin("a")
    with pytest.raises(CacheFull):
        admission.admit("x")
    assert owner.book.slots == {}
    assert _count(counters, "full_refusals") == 1
    assert not admission.maybe_over


def test_wait_times_out_with_nothing_held_and_the_waiter_uncounted() -> None:
    admission, owner, counters = _admission(1, on_full="wait", loaded=("a",))
    owner.inner.leases["a"] = 1
    with pytest.raises(LockTimeout):
        admission.admit("x")
    assert owner.book.slots == {}
    assert admission.full_waiters == 0
    assert (_count(counters, "full_waits"), _count(counters, "lock_timeouts")) == (1, 1)


def test_wait_proceeds_for_a_thread_that_holds_a_lease() -> None:
    admission, owner, counters = _admission(1, loaded=("a",), holds_lease=True)
    owner.inner.leases["a"] = 1
    admission.admit("x")
    assert owner.book.slots == {"x": 1}
    assert admission.maybe_over
    assert _count(counters, "pinned_overflow") == 1
    assert _count(counters, "full_waits") == 0


def test_proceed_admits_over_the_bound_and_marks_the_cache_maybe_over() -> None:
    admission, owner, counters = _admission(1, on_full="proceed", loaded=("a",))
    owner.book.pin("a")
    admission.admit("x")
    assert owner.book.slots == {"x": 1}
    assert admission.maybe_over
    assert _count(counters, "pinned_overflow") == 1


@pytest.mark.parametrize(
    ("on_full", "holds", "oversized", "expected"),
    [
        ("proceed", False, False, True),
        ("wait", True, False, True),
        ("wait", False, False, False),
        ("refuse", True, False, False),
        ("refuse", False, True, True),
    ],
)
def test_may_overflow(on_full: str, holds: bool, oversized: bool, expected: bool) -> None:
    estimates = {"x": 9} if oversized else {}
    admission, _, _ = _admission(
        2, on_full=on_full, max_weight=8, estimates=estimates, holds_lease=holds
    )
    assert admission.may_overflow("x") is expected


def test_a_weighted_commit_sets_the_estimate_and_the_hint() -> None:
    admission, _, _ = _admission(2, max_weight=8)
    admission.loaded_weight_locked("x", 5)
    assert admission.policy.estimates["x"] == 5
    assert admission.maybe_over


def test_restore_skips_when_never_over_and_evicts_back_within_the_bounds() -> None:
    admission, owner, counters = _admission(1, loaded=("a", "b", "c"))
    admission.restore()
    assert owner.evicted == []  # the hint is off: one read, nothing else
    admission.maybe_over = True
    admission.restore(exclude="a")
    assert owner.evicted == [(["b", "c"], "evictions_restore")]
    assert owner.book.order() == ["a"]
    admission.restore()
    assert not admission.maybe_over  # within the bounds: the hint goes off
    assert _count(counters, "restoration_failures") == 0


def test_a_restoration_leaves_the_bound_to_an_add_whose_eviction_is_undecided() -> None:
    admission, owner, _ = _admission(1, loaded=("a", "b"))
    admission.maybe_over = True
    owner.book.choose("a", "x", object())  # an add's choice, undecided
    admission.restore()
    assert owner.evicted == []
    assert admission._restorations_deferred == 1
    owner.book.unchoose("a")
    owner.book.choose("a", RESTORATION, object())  # another restoration's: waited for
    admission.restore()
    assert admission._restorations_deferred == 1  # it timed out (timeout 0) instead


def test_a_failed_restoration_is_counted_logged_and_never_raises(
    caplog: pytest.LogCaptureFixture,
) -> None:
    admission, owner, counters = _admission(1, loaded=("a", "b"))
    admission.maybe_over = True
    owner.fail = {"a"}
    with caplog.at_level(logging.WARNING, logger="test_admission"):
        admission.restore()
    assert _count(counters, "restoration_failures") == 1
    assert owner.book.order() == ["a", "b"]
    assert "RuntimeError('unloading a failed')" in caplog.text  # the error, named


def test_the_restorations_exclusion_is_kept_for_the_revalidation() -> None:
    admission, _, _ = _admission(1, loaded=("a", "b"))
    admission.maybe_over = True
    admission.restore(exclude="a")
    assert admission.restoring_exclude == "a"


def test_memory_pressure_evicts_round_by_round_until_the_probe_is_satisfied() -> None:
    probe = _Probe(0.1, step=0.5)
    admission, owner, counters = _admission(
        10, loaded=("a", "b", "c", "d"), probe=probe, threshold=0.5
    )
    admission.admit("x")
    assert owner.evicted[0] == (["a", "b", "c"], "evictions_memory")
    assert probe.releases == 1
    assert owner.book.slots == {"x": 1}
    assert _count(counters, "memory_probe_errors") == 0


def test_memory_pressure_with_nothing_evictable_gives_up_quietly() -> None:
    probe = _Probe(0.1)
    admission, owner, _ = _admission(10, loaded=("a",), probe=probe, threshold=0.5)
    owner.book.pin("a")
    admission.admit("x")
    assert owner.evicted == []
    assert probe.releases == 0


def test_a_failing_probe_counts_as_no_pressure() -> None:
    class Broken(_Probe):
        def free_fraction(self) -> float:
            raise OSError("no probe")

        def release_cache(self) -> None:
            raise OSError("no release")

    admission, _, counters = _admission(2, probe=Broken(0.0), threshold=0.5)
    assert admission.measure_free_fraction() is None
    admission.release_memory()
    assert _count(counters, "memory_probe_errors") == 2


def test_an_add_of_an_id_still_making_room_waits_for_it() -> None:
    admission, owner, counters = _admission(1, loaded=("a",))
    admission._admitting["x"] = 1  # another add of x holds its slot, making room
    with pytest.raises(LockTimeout):
        admission.admit("x")
    assert _count(counters, "lock_timeouts") == 1
    assert owner.book.slots == {}


def test_wake_full_waiters_notifies_under_the_lock() -> None:
    admission, owner, _ = _admission(1)
    admission.wake_full_waiters()  # takes and releases the lock
    assert not owner.lock.locked()


def test_remaining_is_clamped() -> None:
    assert remaining(0.0) == 0.0
    assert remaining(float("inf")) == threading.TIMEOUT_MAX


def test_bounds_name_both_bounds() -> None:
    admission, _, _ = _admission(2, max_weight=8)
    assert admission.bounds() == "max_size=2, max_weight=8"


def test_a_deferral_during_a_failed_add_is_seen_whatever_the_count_was() -> None:
    """A restoration that defers to an add counts one more deferral, so an add that then
    fails having evicted nothing still sees it (it restores) even when deferrals had been
    counted before it chose (kills counting by assignment instead of increment)."""
    admission, owner, _ = _admission(1, loaded=("a",))
    admission._restorations_deferred = 1  # an earlier restoration deferred to an earlier add
    _timing_out_at(owner, 3)  # the add's second pass: its lock wait times out

    def evict(victims: list[str], cause: str, batch: object) -> int:
        admission.maybe_over = True
        admission.restore()  # finds the add's choice undecided: defers to it
        with owner.lock:
            owner.book.unchoose("a")
        raise VictimBusy("a")

    owner._evict = evict  # type: ignore[method-assign]
    with pytest.raises(LockTimeout):
        admission.admit("x")
    assert admission._restorations_deferred == 2
    assert owner.restores == [None]  # the bound the restoration left to it
    assert owner.book.slots == {}


def test_an_add_whose_victims_partly_went_restores_when_it_fails_later() -> None:
    """Victims that went before a busy one count for good: an add that later fails
    restores the bound (kills forgetting them at the next busy victim, and restoring
    only when a restoration also deferred to it)."""
    admission, owner, _ = _admission(1, loaded=("a", "b"))
    owner.busy = ["b", "b"]  # a goes; b is busy twice
    _timing_out_at(owner, 5)  # after the second busy b: the lock wait times out
    with pytest.raises(LockTimeout):
        admission.admit("x")
    assert [victims for victims, _ in owner.evicted] == [["a", "b"], ["b"]]
    assert owner.restores == [None]  # its admission took effect: it restores
    assert admission._restorations_deferred == 0
    assert owner.book.slots == {}


def test_probe_failures_of_two_kinds_are_both_logged(caplog: pytest.LogCaptureFixture) -> None:
    """The quiet log keys a probe failure by its kind: a second kind within the minute
    is still logged (kills keying every failure alike)."""
    errors = [OSError("first"), ValueError("second")]

    class Flaky(_Probe):
        def release_cache(self) -> None:
            raise errors.pop(0)

    admission, _, counters = _admission(2, probe=Flaky(0.0), threshold=0.5)
    with caplog.at_level(logging.WARNING, logger="test_admission"):
        admission.release_memory()
        admission.release_memory()
    assert "OSError('first')" in caplog.text
    assert "ValueError('second')" in caplog.text
    assert _count(counters, "memory_probe_errors") == 2


def _timing_out_at(owner: _Owner, attempt: int) -> None:
    """Make the owner's ``attempt``-th lock acquisition time out."""
    guards = 0
    plain_guard = owner._lru_guard

    @contextlib.contextmanager
    def guard(deadline: float | None = None) -> Iterator[None]:
        nonlocal guards
        guards += 1
        if guards == attempt:
            raise LockTimeout("the LRU lock", 0)
        with plain_guard(deadline):
            yield

    owner._lru_guard = guard  # type: ignore[method-assign]


def test_victims_that_went_over_several_rounds_all_count() -> None:
    """One victim goes in the first round (two rescued), one more in the second before a
    busy one: the add that then fails restores (kills counting the first round's
    victims with the wrong sign, which cancels the second round's)."""
    admission, owner, _ = _admission(2, loaded=("a", "b", "c", "d"))
    owner.rescue = ["b", "c"]  # used meanwhile: now the most recent, after d
    owner.busy = ["b"]
    _timing_out_at(owner, 4)
    with pytest.raises(LockTimeout):
        admission.admit("x")
    assert [victims for victims, _ in owner.evicted] == [["a", "b", "c"], ["d", "b"]]
    assert owner.restores == [None]


def test_an_add_whose_room_is_taken_by_a_load_in_flight_waits_for_it() -> None:
    """Its victims went, but another add's load (unlisted, holding a slot) took the room:
    the add waits for that load, holding its slot, even where it could go over the bound
    (kills counting listed ids as loads in flight instead of unlisted ones)."""
    admission, owner, counters = _admission(1, loaded=("a",))
    owner.over_room_taken = True  # it could be admitted over the bound
    plain_evict = owner._evict

    def evict(victims: list[str], cause: str, batch: object) -> int:
        went = plain_evict(victims, cause, batch)
        with owner.lock:
            owner.book.reserve("y")  # another cold add's load, in flight
        return went

    owner._evict = evict  # type: ignore[method-assign]
    with pytest.raises(LockTimeout, match="a free slot for model 'x'"):
        admission.admit("x")
    assert _count(counters, "pinned_overflow") == 0
    assert owner.book.slots == {"y": 1}


def test_restoration_failures_of_two_kinds_are_both_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Kills keying every restoration failure alike in the quiet log."""
    admission, owner, counters = _admission(1, loaded=("a", "b"))
    owner.fail = {"a"}
    with caplog.at_level(logging.WARNING, logger="test_admission"):
        admission.maybe_over = True
        admission.restore()  # the unload fails
        owner.book.choose("b", RESTORATION, object())  # another restoration's, undecided
        admission.restore()  # its wait times out (timeout 0)
    assert "RuntimeError('unloading a failed')" in caplog.text
    assert "LockTimeout(" in caplog.text
    assert _count(counters, "restoration_failures") == 2

"""Killers for mutants of the cache's admission, eviction and options modules
(``_cache_admission.py``, ``_cache_eviction.py``, ``_cache_options.py``; docs/mutation.md).

Each step is driven alone, in one thread, over a real :class:`CacheBook`: the
condition the step waits on is a scripted stand-in whose ``wait`` makes the
change another thread would have made (and says whether it was notified), so
the interleaving at a deadline is chosen, not timed.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from modelmanager import LockTimeout
from modelmanager._quiet_log import QuietLog
from modelmanager.decorators import _cache_admission
from modelmanager.decorators._cache_admission import AdmissionControl, VictimBusy
from modelmanager.decorators._cache_book import CacheBook, IdState
from modelmanager.decorators._cache_eviction import Evictions
from modelmanager.decorators._cache_options import CacheOptions, CacheParts
from modelmanager.decorators._cache_policy import RESTORATION, CapacityPolicy
from modelmanager.statistics import Counters


class _ScriptedCondition:
    """A condition whose ``wait`` runs the next scripted step (another thread's change)
    and returns what that step answers (True: notified; False: timed out)."""

    def __init__(self, steps: list[Callable[[], bool]]) -> None:
        self._lock = threading.Lock()
        self.steps = steps
        self.waits = 0
        self.notified: list[int | str] = []  # one entry per notify: its n, or "all"

    def __enter__(self) -> bool:
        return self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()

    def wait(self, timeout: float | None = None) -> bool:
        self.waits += 1
        assert self.steps, "waited more often than scripted"
        return self.steps.pop(0)()

    def notify(self, n: int = 1) -> None:
        self.notified.append(n)

    def notify_all(self) -> None:
        self.notified.append("all")


def _evictions(book: CacheBook, changed: _ScriptedCondition) -> tuple[Evictions, Counters]:
    counters = Counters()
    options = CacheOptions.validated(
        max_size=1,
        max_weight=None,
        weigher=None,
        on_full="wait",
        queue_lock_timeout=5,
        memory_free_threshold=0.0,
        memory_probe=None,
        delete_evicted_from_disk=False,
    )
    parts = CacheParts(book, None, changed, counters, options)  # type: ignore[arg-type]
    return Evictions(None, parts, None, None), counters  # type: ignore[arg-type]


def _unloading(resolved_id: str) -> CacheBook:
    book = CacheBook()
    book.adopt([resolved_id])
    book.choose(resolved_id, None, object())
    book.start_unload(resolved_id)
    return book


def test_an_unload_that_ends_as_the_wait_times_out_is_no_timeout() -> None:
    """The victim's unload ends (``_forget``) just as the reader's wait times out: the
    reader sees it gone and goes on, no LockTimeout and none counted (kills
    ``_cache_eviction.xǁEvictionsǁawait_unload_locked__mutmut_13``, the state test
    after a timed-out wait inverted, and ``__mutmut_9``, ``or`` for ``and``: both
    raise although the unload is over)."""
    book = _unloading("a")

    def forgotten_at_the_deadline() -> bool:
        book.forget("a")
        return False  # the wait timed out

    changed = _ScriptedCondition([forgotten_at_the_deadline])
    evictions, counters = _evictions(book, changed)
    with changed:
        evictions.await_unload_locked("a", time.monotonic() + 3600)
    assert changed.waits == 1
    assert counters.snapshot().lock_timeouts == 0


def test_an_unload_still_running_at_the_deadline_times_out() -> None:
    """The converse, to pin what the timeout is: still UNLOADING when the wait times
    out raises LockTimeout, counted once."""
    book = _unloading("a")
    changed = _ScriptedCondition([lambda: False])
    evictions, counters = _evictions(book, changed)
    with changed, pytest.raises(LockTimeout, match="the eviction of model 'a'"):
        evictions.await_unload_locked("a", time.monotonic() + 3600)
    assert counters.snapshot().lock_timeouts == 1


def test_dropping_a_busy_batchs_choices_wakes_every_waiter() -> None:
    """A busy victim ends its batch: the batch's remaining choices go, and every thread
    waiting for the evictions to be decided is woken (a memory round and a waiting add
    may both wait on it; waking one leaves the other to its timeout). Kills
    ``_cache_eviction.xǁEvictionsǁdrop_choices__mutmut_12`` (``notify()``)."""
    book = CacheBook()
    book.adopt(["a", "b"])
    batch = object()
    book.choose("a", "x", batch)
    book.choose("b", "x", batch)
    changed = _ScriptedCondition([])
    evictions, _ = _evictions(book, changed)
    evictions.drop_choices(["a", "b"], batch)
    assert not book.evictions_undecided()
    assert changed.notified == ["all"]


def test_a_failed_unload_wakes_every_waiter() -> None:
    """A victim's unload fails: it is back at its place and the add that chose it gives
    its slot back, in one step that wakes every waiter (a reader waiting for the unload
    and an add waiting for the slot both wait on it). Kills
    ``_cache_eviction.xǁEvictionsǁevict_one__mutmut_22`` (``notify()``)."""
    book = CacheBook()
    book.adopt(["a"])
    batch = object()
    failed: list[object] = []

    class Owner:
        def _hold_victim(self, victim: str) -> contextlib.nullcontext[None]:
            return contextlib.nullcontext()

        def _victim_gone(self, victim: str) -> bool:
            return False

        def _confirm_victim_locked(self, victim: str) -> object:
            book.choose(victim, "x", batch)
            book.start_unload(victim)
            return batch

    class Inner:
        def remove(self, resolved_id: str, *, delete_from_disk: bool) -> None:
            raise RuntimeError(f"unloading {resolved_id} failed")

    class Admission:
        def unload_failed_locked(self, batch: object) -> None:
            failed.append(batch)

    changed = _ScriptedCondition([])
    evictions, _ = _evictions(book, changed)
    evictions._owner = Owner()  # type: ignore[assignment]
    evictions._manager = Inner()  # type: ignore[assignment]
    evictions._admission = Admission()  # type: ignore[assignment]
    with pytest.raises(RuntimeError, match="unloading a failed"):
        evictions.evict_one("a")
    assert book.state("a") is IdState.COMMITTED
    assert failed == [batch]
    assert changed.notified == ["all"]


# ---------------------------------------------------------------- admission


class _Inner:
    """The inner layer as the admission sees it: registration, leases, lifecycles."""

    def __init__(self, loaded: tuple[str, ...]) -> None:
        self.registered = set(loaded)
        self.lifecycles: list[object] = []

    def __contains__(self, resolved_id: object) -> bool:
        return resolved_id in self.registered

    def lease_counts(self) -> dict[str, int]:
        return {}

    @contextlib.contextmanager
    def lifecycle(self, resolved_id: object) -> Iterator[None]:
        self.lifecycles.append(resolved_id)
        yield


class _Owner:
    """The cache around the admission: its lock, and evictions scripted per call
    (each returns how many of the batch went, or raises)."""

    def __init__(self, book: CacheBook, inner: _Inner) -> None:
        self.book, self.inner, self.lock = book, inner, threading.Lock()
        self.evictions: list[Callable[[list[str]], int]] = []
        self.evicted: list[list[str]] = []
        self.restores: list[str | None] = []
        self.admission: AdmissionControl | None = None

    @contextlib.contextmanager
    def _lru_guard(self, deadline: float | None = None) -> Iterator[None]:
        with self.lock:
            yield

    def _evict(self, victims: list[str], cause: str, batch: object) -> int:
        self.evicted.append(list(victims))
        return self.evictions.pop(0)(victims)

    def unload(self, victims: list[str]) -> int:
        """Every victim goes."""
        with self.lock:
            for victim in victims:
                self.book.start_unload(victim)
                self.book.forget(victim)
        self.inner.registered.difference_update(victims)
        return len(victims)

    def first_goes_rest_skipped(self, victims: list[str]) -> int:
        """The first victim goes; the others are skipped (rescued by a use meanwhile)."""
        went = self.unload(victims[:1])
        with self.lock:
            for victim in victims[1:]:
                self.book.unchoose(victim)
        return went

    def first_fails(self, victims: list[str]) -> int:
        """The first victim's unload fails: it stays, and the add that chose it gives its
        slot back in the same step; the batch's other choices are rolled back."""
        batch = self.book.batch(victims[0])
        with self.lock:
            self.book.start_unload(victims[0])
            self.book.fail_unload(victims[0])
            assert self.admission is not None
            self.admission.unload_failed_locked(batch)
            for victim in victims[1:]:
                self.book.unchoose(victim)
        raise RuntimeError(f"unloading {victims[0]} failed")

    def busy(self, victims: list[str]) -> int:
        """The first victim's lifecycle is held elsewhere: the batch's choices dropped."""
        with self.lock:
            for victim in victims:
                self.book.unchoose(victim)
        raise VictimBusy(victims[0])

    def _restore(self, exclude: str | None = None) -> None:
        self.restores.append(exclude)

    def _admits_over_room_taken(self, resolved_id: str) -> bool:
        return False


def _admission(
    max_size: int, loaded: tuple[str, ...], probe: object = None, threshold: float = 0.0
) -> tuple[AdmissionControl, _Owner, Counters]:
    book, inner = CacheBook(), _Inner(loaded)
    book.adopt(loaded)
    owner = _Owner(book, inner)
    counters = Counters()
    options = CacheOptions.validated(
        max_size=max_size,
        max_weight=None,
        weigher=None,
        on_full="wait",
        queue_lock_timeout=0,
        memory_free_threshold=threshold,
        memory_probe=None,
        delete_evicted_from_disk=False,
    )
    changed = threading.Condition(owner.lock)
    parts = CacheParts(book, inner, changed, counters, options)  # type: ignore[arg-type]
    admission = AdmissionControl(
        owner,
        parts,
        CapacityPolicy,
        QuietLog(logging.getLogger("test_killers_admission")),
        {},
        lambda: probe,  # type: ignore[arg-type,return-value]
        lambda: False,
    )
    owner.admission = admission
    return admission, owner, counters


def test_a_restoration_waits_for_a_busy_victims_lifecycle_and_decides_again() -> None:
    """A restoration whose victim is busy waits for that victim's lifecycle, holding
    nothing, then evicts it in its next round: no failure counted (kills
    ``_cache_admission.xǁAdmissionControlǁrestore_over__mutmut_47``: the wait asked
    for the lifecycle of None, so the restoration stopped instead)."""
    admission, owner, counters = _admission(1, loaded=("a", "b"))
    owner.evictions = [owner.busy, owner.unload]
    admission.maybe_over = True
    admission.restore()
    assert owner.inner.lifecycles == ["a"]
    assert owner.evicted == [["a"], ["a"]]
    assert owner.book.order() == ["b"]
    assert counters.snapshot().restoration_failures == 0
    assert not owner.lock.locked()


def _owner_evictions(admission: AdmissionControl, owner: _Owner, counters: Counters) -> Evictions:
    """The eviction steps over ``admission``'s book, lock and inner layer."""
    parts = CacheParts(
        owner.book,
        owner.inner,  # type: ignore[arg-type]  # the scripted inner layer
        threading.Condition(owner.lock),
        counters,
        admission._options,
    )
    return Evictions(owner, parts, admission, None)  # type: ignore[arg-type]


def test_a_restorations_victim_stays_the_restorations_at_its_commit() -> None:
    """The commit (UNLOADING) of a restoration's victim keeps the restoration as its
    requester: another restoration then waits for it rather than deferring as to an
    add's eviction. Kills ``_cache_eviction.xǁEvictionsǁconfirm_victim_locked__mutmut_31``
    (re-chosen with requester None, a memory eviction's)."""
    admission, owner, counters = _admission(1, loaded=("a", "b"))
    book = owner.book
    evictions = _owner_evictions(admission, owner, counters)
    batch = object()
    book.choose("a", RESTORATION, batch)
    with owner.lock:
        assert evictions.confirm_victim_locked("a") is batch
    assert book.state("a") is IdState.UNLOADING
    assert book.evictions_undecided()
    assert not book.evictions_undecided_except(RESTORATION)


def test_an_add_whose_victim_fails_to_unload_restores_nothing_even_after_one_went() -> None:
    """The add's first round evicts one victim (the others rescued), its second round's
    victim fails to unload: the add fails with that error and restores nothing (the
    spec's failed admission; the cache is no fuller), although a victim of its went.
    Kills ``_cache_admission.xǁAdmissionControlǁadmit__mutmut_104`` (``or``: an add
    whose victims went restored after a failed unload too)."""
    admission, owner, counters = _admission(1, loaded=("a", "b", "c"))
    owner.evictions = [owner.first_goes_rest_skipped, owner.first_fails]
    with pytest.raises(RuntimeError, match="unloading b failed"):
        admission.admit("x")
    assert owner.evicted == [["a", "b", "c"], ["b", "c"]]
    assert owner.book.order() == ["b", "c"]
    assert owner.book.slots == {}
    assert owner.restores == []
    assert counters.snapshot().restoration_failures == 0


def test_a_free_fraction_exactly_at_the_threshold_is_no_pressure() -> None:
    """Memory pressure is a free fraction *below* the threshold: exactly at it, an add
    evicts nothing for memory. Kills
    ``_cache_admission.xǁAdmissionControlǁevict_for_memory__mutmut_5`` (``>``)."""

    class AtThreshold:
        def free_fraction(self) -> float:
            return 0.5

        def release_cache(self) -> None:
            pass

    admission, owner, _ = _admission(10, loaded=("a", "b"), probe=AtThreshold(), threshold=0.5)
    admission.admit("x")
    assert owner.evicted == []
    assert owner.book.slots == {"x": 1}


def test_a_restorations_victim_is_revalidated_with_its_exclusion() -> None:
    """At its commit a restoration's victim is revalidated as the restoration chose it,
    with the restoration's exclusion (the model an add just loaded): with that model
    the least recent, the victim chosen after it still holds. Kills
    ``_cache_eviction.xǁEvictionsǁconfirm_victim_locked__mutmut_19`` (revalidated
    without the exclusion: the excluded model looks like the victim, the choice is
    dropped)."""
    admission, owner, counters = _admission(1, loaded=("a", "b"))
    book = owner.book
    evictions = _owner_evictions(admission, owner, counters)
    owner.evictions = [lambda victims: 0]  # records the choice; decides nothing
    admission.maybe_over = True
    admission.restore(exclude="a")
    assert owner.evicted == [["b"]]
    assert admission.restoring_exclude == "a"
    batch = book.batch("b")
    with owner.lock:
        assert evictions.confirm_victim_locked("b") is batch
    assert book.state("b") is IdState.UNLOADING


def test_a_full_wait_with_under_a_second_left_still_waits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An add that waits for a lease to end waits for whatever time is left, also under
    a second: the lease given back during that wait admits it. Kills
    ``_cache_admission.xǁAdmissionControlǁwait_full_locked__mutmut_20`` (``left <= 1``:
    a timeout under a second gave up at once)."""
    admission, owner, counters = _admission(1, loaded=("a",))
    leases = {"a": 1}
    owner.inner.lease_counts = lambda: dict(leases)  # type: ignore[method-assign]
    monkeypatch.setattr(_cache_admission, "remaining", lambda deadline: 0.5)

    def lease_given_back() -> bool:
        leases.clear()
        return True  # notified

    changed = _ScriptedCondition([lease_given_back])
    admission._changed = changed  # type: ignore[assignment]
    with owner.lock:
        admission.wait_full_locked(0.0, "x")
    assert changed.waits == 1
    assert counters.snapshot().lock_timeouts == 0
    assert admission.full_waiters == 0


def test_the_bounds_of_a_weight_only_cache_name_only_the_weight() -> None:
    """Messages name the bounds the cache has: ``max_weight=8`` for a cache bounded by
    weight alone. Kills ``_cache_options.xǁCacheOptionsǁbounds__mutmut_2`` (``max_size=None``
    named too)."""
    options = CacheOptions.validated(
        max_size=None,
        max_weight=8,
        weigher=lambda resolved_id, model: 1,
        on_full="wait",
        queue_lock_timeout=1,
        memory_free_threshold=0.0,
        memory_probe=None,
        delete_evicted_from_disk=False,
    )
    assert options.bounds() == "max_weight=8"


def test_probe_failures_of_two_kinds_are_both_logged(caplog: pytest.LogCaptureFixture) -> None:
    """A failing ``free_fraction()`` is logged once per kind per minute: a second kind
    of failure within the minute is still logged. Kills
    ``_cache_admission.xǁAdmissionControlǁmeasure_free_fraction__mutmut_5`` (every
    failure keyed alike, so the second kind is held back)."""
    errors = [OSError("first"), ValueError("second")]

    class Flaky:
        def free_fraction(self) -> float:
            raise errors.pop(0)

    admission, _, counters = _admission(1, loaded=(), probe=Flaky())
    with caplog.at_level(logging.WARNING, logger="test_killers_admission"):
        assert admission.measure_free_fraction() is None
        assert admission.measure_free_fraction() is None
    assert "OSError('first')" in caplog.text
    assert "ValueError('second')" in caplog.text
    assert counters.snapshot().memory_probe_errors == 2

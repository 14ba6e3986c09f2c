"""The cache's admission protocol: tickets, eviction batches, waits for room, restoration.

:class:`AdmissionControl` owns the state that only admission and
restoration use, and the steps that act on it:

* **tickets** (:class:`Ticket`, counted per id in ``admitting``): an add that
  reserved its slot with its first victims holds it while it still makes
  room; ``in_flight_loads()`` leaves such adds out;
* **batches**: the eviction batch an admission chose -> its ticket, so a
  failed unload gives that add's slot back in the same step
  (:meth:`AdmissionControl.unload_failed_locked`);
* **full-waiters** (``full_waiters``): the adds waiting for a lease or pin
  to end (a lease given back notifies only while one waits);
* **restoration deferral**: how many times a restoration left the bound to
  the adds whose evictions were undecided (an add that fails after choosing
  restores only when one did meanwhile);
* **weight estimates**: the weight each id had when last loaded (the
  policy's estimate for its next load);
* whether the cache **may be over** its bounds (``maybe_over``: one
  lock-free read skips restoration in the common case). The cache counts
  the leases each thread holds through it (``on_full="wait"`` never makes
  such a thread wait) and answers ``holds_lease``.

The book (:class:`~._cache_book.CacheBook`) keeps the per-id states and the
policy (:class:`~._cache_policy.CapacityPolicy`) decides; this class holds
no lock of its own: it runs under the cache's bookkeeping lock (methods
ending in ``_locked``) or takes it through the cache's ``_lru_guard``, and
waits on the cache's condition. What it asks of the cache is
:class:`AdmissionOwner`: the cache's extension points ``_evict`` (unload a
batch), ``_restore`` and ``_admits_over_room_taken`` (so a known-bug variant
that overrides one of them on the cache changes what admission does), the
bounded lock.

Extension points (one step each; a subclass is named by the cache's
``admission_class``, as ``policy_class`` names a policy): its public methods,
chiefly :meth:`AdmissionControl.admit` (the whole cold admission),
:meth:`AdmissionControl.reserve_or_select_locked` (apply the policy's
decisions until a slot is reserved or victims chosen),
:meth:`AdmissionControl.restore` (evict back within the bounds),
:meth:`AdmissionControl.evict_for_memory`,
:meth:`AdmissionControl.evict_memory_round` and the probe calls
(:meth:`AdmissionControl.measure_free_fraction`,
:meth:`AdmissionControl.release_memory`).

The interleavings each rule answers are in ``docs/cache-design.md``.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import ClassVar, Protocol

from modelmanager._quiet_log import QuietLog
from modelmanager.decorators._cache_options import CacheParts
from modelmanager.decorators._cache_policy import (
    MEMORY_EVICTIONS_PER_ROUND,
    RESTORATION,
    Admission,
    CapacityPolicy,
)
from modelmanager.errors import CacheFull, LockTimeout, attach_secondary, note_swallowed
from modelmanager.protocols import MemoryProbe

__all__ = ["AdmissionControl", "AdmissionOwner", "Ticket", "VictimBusy", "remaining"]

_PINNED_OR_LEASED = "every registered model is pinned or leased"
_ROOM_TAKEN = "its victims went, and a load heavier than its estimate took the room meanwhile"


def remaining(deadline: float) -> float:
    """Seconds until ``deadline``, within [0, ``threading.TIMEOUT_MAX``]."""
    return min(max(0.0, deadline - time.monotonic()), threading.TIMEOUT_MAX)


class Ticket:
    """One add's admission: whether it holds its slot while still making room.

    ``short``: its current choice cannot make room (every other model pinned
    or leased); ``chosen_went``: every victim of its last choice went, so its
    admission took effect and it loads at its next step instead of choosing
    again (over the bound when ``short``).
    """

    __slots__ = ("chosen_went", "holding", "resolved_id", "short")

    def __init__(self, resolved_id: str) -> None:
        self.resolved_id = resolved_id
        self.holding = False
        self.short = False
        self.chosen_went = False


class VictimBusy(Exception):
    """Another thread holds a chosen victim's lifecycle.

    Raised by the cache's ``_evict_one`` before it changes anything; its
    ``_evict`` drops the rest of its batch's choices, records how many of the
    batch went (``evicted``), and re-raises it to the admission, which
    decides again (I17).
    """

    def __init__(self, victim: str) -> None:
        super().__init__(victim)
        self.victim = victim
        self.evicted = 0


class AdmissionOwner(Protocol):
    """What :class:`AdmissionControl` uses of the cache that owns it (module doc)."""

    def _lru_guard(self, deadline: float | None = None) -> AbstractContextManager[None]: ...

    def _evict(self, victims: list[str], cause: str, batch: object) -> int: ...

    def _restore(self, exclude: str | None = None) -> None: ...

    def _admits_over_room_taken(self, resolved_id: str) -> bool: ...


class AdmissionControl:
    """The admission state and steps of one cache (module doc). Not thread-safe by
    itself: every state change happens under the cache's bookkeeping lock."""

    EXTENSION_POINTS: ClassVar[frozenset[str]] = frozenset()
    """Private names a subclass may override: none; its public methods are the
    extension points (module doc), named by the cache's ``admission_class``."""
    EXTENSION_HELPERS: ClassVar[frozenset[str]] = frozenset()
    """Private names an override may use: none."""

    # Intended lock-free reads (read by race detectors; see ModelManager): written
    # only under the cache's bookkeeping lock.
    __benign_races__: ClassVar[dict[str, str]] = {
        "_admitting": (
            "in_flight_loads copies it without the lock (one atomic copy): an introspection "
            "count, never a decision; the slot is released before the entry goes"
        ),
        "maybe_over": (
            "restore and a lease given back read it without the lock to skip the common "
            "case (never over the bounds); it is set under the lock before any admission "
            "over them, and the add that set it restores when it ends"
        ),
        "full_waiters": (
            "a lease given back reads it without the lock to skip the notify when no add "
            "waits for room; a waiter counts itself under the lock before it reads the "
            "lease counts, so a lease ended after that read sees the count"
        ),
    }

    def __init__(  # noqa: PLR0917 - the collaborators of one cache, wired once
        self,
        owner: AdmissionOwner,
        parts: CacheParts,
        policy_class: Callable[..., CapacityPolicy],
        quiet: QuietLog,
        estimates: Mapping[str, int],
        memory_probe: Callable[[], MemoryProbe],
        holds_lease: Callable[[], bool],
    ) -> None:
        self._owner = owner
        self._book = book = parts.book
        self._manager = manager = parts.manager
        self._changed = parts.changed
        self._counters = parts.counters
        self._quiet = quiet
        options = parts.options
        self._options = options
        self._on_full = options.on_full
        self._timeout = options.queue_lock_timeout  # the bound of every wait here
        self._threshold = options.memory_free_threshold
        self._memory_probe = memory_probe  # the cache's probe (made on first use)
        # The weight each id had when last loaded (the estimate for its next load).
        self._estimates: dict[str, int] = dict(estimates)
        self._policy = policy_class(
            book, manager.__contains__, options.max_size, options.max_weight, self._estimates
        )
        self.full_waiters = 0
        """Adds waiting for a lease or pin to end (written under the lock by this
        class; a lease given back reads it without the lock)."""
        # id -> adds that hold its slot while still making room (their victims undecided).
        self._admitting: dict[str, int] = {}
        # eviction batch -> the admission that chose it (a failed unload gives its slot back).
        self._batch_tickets: dict[object, Ticket] = {}
        # How many times a restoration left the bound to the adds whose evictions
        # were undecided; an add that fails after choosing restores only when one did.
        self._restorations_deferred = 0
        # What the restoration whose victims are undecided must not evict (its
        # exclude; evictions run one at a time, so there is at most one).
        self._restoring_exclude: str | None = None
        self.maybe_over = False
        """Whether the cache may be over its bounds (an admission over them, a
        weighted commit): written under the lock by this class, read without it."""
        self._holds_lease = holds_lease

    # ------------------------------------------------------------ queries

    @property
    def policy(self) -> CapacityPolicy:
        """The capacity policy the admission applies."""
        return self._policy

    @property
    def restoring_exclude(self) -> str | None:
        """What the restoration whose victims are undecided must not evict."""
        return self._restoring_exclude

    def admitting(self) -> dict[str, int]:
        """Ids -> adds still making room for them (lock-free atomic copy)."""
        return dict(self._admitting)

    def bounds(self) -> str:
        """The bounds, as messages name them (``max_size=2, max_weight=8``)."""
        return self._options.bounds()

    # -------------------------------------------------------- commit steps

    def loaded_weight_locked(self, resolved_id: str, weight: int) -> None:
        """A weighted load committed (lock held): its weight is the id's next estimate,
        and the cache may be over its weight bound now (the estimate may have been low)."""
        self._estimates[resolved_id] = weight
        self.maybe_over = True

    def unload_failed_locked(self, batch: object) -> None:
        """A victim of ``batch`` failed to unload (lock held): the add that chose it fails
        with that error, so its slot goes in the same step (nobody sees the victim back
        while the failed add still holds room)."""
        ticket = self._batch_tickets.get(batch)
        if ticket is not None and ticket.holding:
            self.give_back_locked(ticket.resolved_id, ticket)

    # ---------------------------------------------------------- admission

    def admit(self, resolved_id: str) -> None:
        """Make room for ``resolved_id`` and reserve its capacity slot (held on return).

        The slot is reserved with the first victims and held across eviction
        rounds, so the room they free is this add's: admission is one instant,
        as the spec has it, and a victim reloaded meanwhile must make room of
        its own (I15). On failure (a timeout, a refusal, an unload error)
        nothing is held.
        """
        deadline = time.monotonic() + self._timeout
        if self._threshold > 0:
            self.evict_for_memory(resolved_id, deadline)
        owner = self._owner
        ticket = Ticket(resolved_id)
        busy: str | None = None  # a victim found busy on the last pass
        chose = False  # whether this add chose victims (its admission took effect)
        deferred_at = 0  # self._restorations_deferred when it first chose
        evicted = 0  # victims of this add that went
        unload_failed = False  # whether it fails with a victim's unload error
        left_when_failed = False  # a restoration had deferred to it when an unload failed
        try:
            while True:
                batch = object()  # this pass's choices (a failure rolls back only these)
                with owner._lru_guard(deadline):
                    victims = self.reserve_or_select_locked(resolved_id, deadline, ticket)
                    if not victims:
                        return
                    if busy in victims:
                        # Wait for the busy victim's lifecycle holding nothing, not
                        # even the slot (I17): another add may be waiting for it.
                        self.give_back_locked(resolved_id, ticket)
                    else:
                        if not chose:
                            deferred_at = self._restorations_deferred
                        chose = True
                        for victim in victims:
                            self._book.choose(victim, resolved_id, batch)
                        self._batch_tickets[batch] = ticket
                if busy is not None and busy in victims:
                    self.await_lifecycle(busy)
                    busy = None
                    continue
                # A victim whose choice no longer holds at its commit is dropped
                # (CapacityPolicy.still_chosen); the next pass then chooses afresh.
                try:
                    went = owner._evict(victims, "evictions_capacity", batch)
                    evicted += went
                    # A choice that all went was the admission (one instant, as in
                    # the spec): the add loads now. What is over the bound since (a
                    # load of another add, in flight again once its model went; a
                    # model evictable only since a lease ended) is the restoration's
                    # after the load, never a second victim of this add (I15).
                    ticket.chosen_went = went == len(victims)
                except VictimBusy as error:
                    busy = error.victim
                    evicted += error.evicted
                except BaseException:
                    unload_failed = True
                    raise
                finally:
                    with self._changed:  # unbounded: a short step, like _forget
                        self._batch_tickets.pop(batch, None)
                        if unload_failed:
                            left_when_failed = self._restorations_deferred != deferred_at
        except BaseException as error:
            if ticket.holding:
                try:
                    with self._changed:  # unbounded: a short release, like _forget
                        self.give_back_locked(resolved_id, ticket)
                except BaseException as secondary:  # keep the first error (I16)
                    attach_secondary(error, secondary, f"releasing the slot of {resolved_id!r}")
            if chose and not unload_failed and not evicted:
                with self._changed:  # unbounded: a short read, like _forget
                    left_to_us = self._restorations_deferred != deferred_at
            else:
                left_to_us = False
            if chose and not unload_failed and (evicted or left_to_us):
                # A restoration that found this add's evictions undecided left the
                # bound to it (``restore``): it restores even when it times out,
                # and so does an add whose victims went (its admission took
                # effect). An add that failed before choosing anything, or whose
                # choices were all dropped with no restoration left to it, took no
                # effect; one whose victim's unload failed ends there (the spec's
                # failed admission restores nothing; the cache is no fuller).
                owner._restore()
            elif left_when_failed:
                # The restoration left to this add dies with its failed unload, as
                # one that ran itself would have (``restore``): the models over
                # the bound stay until the next lease or pin ends, counted.
                self.restoration_failed(error)
            raise

    def loads_in_flight_locked(self, resolved_id: str) -> bool:
        """Whether an add other than ``resolved_id``'s holds a slot past its admission
        for an id not loaded here yet: a load in flight (lock held; O(slots))."""
        book, admitting = self._book, self._admitting
        return any(
            held > admitting.get(other, 0) and not book.listed(other) and other != resolved_id
            for other, held in book.slots.items()
        )

    def give_back_locked(self, resolved_id: str, ticket: Ticket) -> None:
        """An admission that holds its slot gives it back (lock held).

        The slot goes first: a lock-free ``in_flight_loads()`` never counts it
        as a load in flight.
        """
        self._book.release(resolved_id)
        self.end_admitting_locked(resolved_id, ticket)
        self._changed.notify_all()

    def end_admitting_locked(self, resolved_id: str, ticket: Ticket) -> None:
        """The add stops making room (lock held): it loads now, or gives its slot back."""
        ticket.holding = False
        left = self._admitting[resolved_id] - 1
        if left:
            self._admitting[resolved_id] = left
        else:
            del self._admitting[resolved_id]
            self._changed.notify_all()  # adds of the same id wait for it to end

    def reserve_or_select_locked(
        self, resolved_id: str, deadline: float, ticket: Ticket
    ) -> list[str]:
        """The next victims to evict holding the slot (``ticket.holding``), or none:
        admitted, the slot held and the ticket ended (lock held)."""
        policy = self._policy
        book = self._book
        waited = False
        while True:
            leased = frozenset(self._manager.lease_counts())
            if ticket.holding:
                decision, victims = policy.admit_held(resolved_id, leased)
                if decision is not Admission.RESERVE and ticket.chosen_went:
                    if not ticket.short and self.loads_in_flight_locked(resolved_id):
                        # Its room was made, but is taken: wait for the loads in
                        # flight, holding the slot (still making room, so not counted
                        # as a load), so that two loads never run for one place; then
                        # decide. Only loads count, never another add still making
                        # room: two such adds would wait for each other.
                        self.wait_locked(deadline, resolved_id)
                        continue
                    if not ticket.short and not self._owner._admits_over_room_taken(resolved_id):
                        # The room its victims made was taken meanwhile (a load
                        # heavier than its estimate): under "wait" and "refuse" the
                        # bound is a safety property, so the add gives its slot back
                        # and decides again under its policy (evict, wait or refuse).
                        self.give_back_locked(resolved_id, ticket)
                        continue
                    self.admit_over_locked(
                        resolved_id, _PINNED_OR_LEASED if ticket.short else _ROOM_TAKEN
                    )
                    decision = Admission.RESERVE
                if decision is Admission.RESERVE:
                    self.end_admitting_locked(resolved_id, ticket)
                    return []
                ticket.short = False  # admit_held evicts only a choice that makes room
                if decision is Admission.FULL:
                    # Too few evictable models left (a victim was rescued): give the
                    # slot back and decide as a new admission (wait, refuse or proceed).
                    self.give_back_locked(resolved_id, ticket)
                    continue
            elif resolved_id in self._admitting:
                # Another add of this id is still making room: its slot is shared
                # only once that room is there (the load must not come before it).
                self.wait_locked(deadline, resolved_id)
                continue
            else:
                # Evicting part of what is needed pays only when the add will be
                # admitted over the bound anyway; an add that will wait or be
                # refused evicts nothing for it.
                decision, victims = policy.admit(
                    resolved_id, leased, self.may_overflow(resolved_id)
                )
                if decision is Admission.EVICT:
                    ticket.short = not policy.makes_room(resolved_id, victims)
                    book.reserve(resolved_id)
                    self._admitting[resolved_id] = self._admitting.get(resolved_id, 0) + 1
                    ticket.holding = True
                elif decision is Admission.RESERVE:
                    book.reserve(resolved_id)
                    return []
            if decision is Admission.EVICT:
                return victims
            if decision is Admission.WAIT:
                self.wait_locked(deadline, resolved_id)
                continue
            # FULL: only pinned or leased models remain (or the model is
            # heavier than the weight bound alone: no lease or pin ending helps).
            oversized = policy.oversized(resolved_id)
            if self._on_full == "wait" and not oversized and not self.holds_lease():
                if not waited:
                    waited = True
                    self._counters.increment("full_waits")
                self.wait_full_locked(deadline, resolved_id)
                continue
            if self._on_full == "refuse" and not oversized:
                self._counters.increment("full_refusals")
                raise CacheFull(
                    resolved_id,
                    f"refused to load model {resolved_id!r}: every model in the cache "
                    f"({self.bounds()}) is pinned or leased (on_full='refuse'); retry once "
                    "a lease is given back, or unpin a model or raise the bound",
                )
            self.admit_over_locked(resolved_id, _PINNED_OR_LEASED)
            book.reserve(resolved_id)
            return []

    def may_overflow(self, resolved_id: str) -> bool:
        """Whether this add may be admitted over the bound (lock held): under
        "proceed", under "wait" when its thread holds a lease through this cache,
        or for a model heavier than the weight bound alone."""
        return (
            self._on_full == "proceed"
            or (self._on_full == "wait" and self.holds_lease())
            or self._policy.oversized(resolved_id)
        )

    def admit_over_locked(self, resolved_id: str, because: str) -> None:
        """An add is admitted over the bound (lock held): counted, logged, and the
        cache marked as possibly over, so the add's restoration when it ends runs."""
        self._counters.increment("pinned_overflow")
        self.maybe_over = True
        self._quiet.warning(
            ("overflow", resolved_id),
            "admitting model %r over the bound (%s): %s; the cache evicts back to its "
            "bound when this add, a lease or a pin ends",
            resolved_id,
            self.bounds(),
            because,
        )

    # ----------------------------------------------------------------- waits

    def wait_full_locked(self, deadline: float, resolved_id: str) -> None:
        """Wait (lock held, released while waiting) for a lease or pin to end.

        Announces the wait first, then decides again: a lease given back
        before the announcement is seen now, one given back after it wakes
        this wait (a lease given back notifies while anyone waits), so no
        wake-up is lost. Raises :class:`LockTimeout` at ``deadline``.
        """
        self.full_waiters += 1
        try:
            leased = frozenset(self._manager.lease_counts())
            # As the caller decided (partial=False: it waits rather than evict part).
            if self._policy.admit(resolved_id, leased, False)[0] is not Admission.FULL:
                return
            left = remaining(deadline)
            if left <= 0 or not self._changed.wait(left):
                self._counters.increment("lock_timeouts")
                raise LockTimeout(
                    f"room for model {resolved_id!r}: every model in the cache "
                    f"({self.bounds()}) is pinned or leased; retry once a lease is given "
                    "back, or unpin a model or raise the bound",
                    self._timeout,
                )
        finally:
            self.full_waiters -= 1

    def wait_locked(self, deadline: float, resolved_id: str) -> None:
        """Wait (lock held, released while waiting) for a slot or an eviction to change."""
        left = remaining(deadline)
        if left <= 0 or not self._changed.wait(left):
            self._counters.increment("lock_timeouts")
            raise LockTimeout(
                f"a free slot for model {resolved_id!r} (the cache of {self._options.max_size} "
                "is full of in-flight loads and evictions)",
                self._timeout,
            )

    def wait_restoration_locked(self, deadline: float) -> None:
        """Wait (lock held, released while waiting) for another restoration's evictions."""
        left = remaining(deadline)
        if left <= 0 or not self._changed.wait(left):
            self._counters.increment("lock_timeouts")
            raise LockTimeout(
                "another restoration's evictions to end (this restoration gives up)",
                self._timeout,
            )

    def await_lifecycle(self, victim: str) -> None:
        """Wait, holding no choice, until no other thread holds ``victim``'s lifecycle.

        For a victim found busy and chosen again: its holder's step (a use, a
        pin, a removal) ends without us, so waiting for it here, with nothing
        of ours undecided, is bounded by the manager's ``lock_timeout`` and
        closes no cycle. The caller then decides afresh.
        """
        with self._manager.lifecycle(victim):
            pass

    # ---------------------------------------------------------------- leases

    def wake_full_waiters(self) -> None:
        """A lease through the cache was given back while adds wait for room
        (``full_waiters``, read without the lock): wake them."""
        with self._changed:  # unbounded: a short notify, like _forget
            self._changed.notify_all()

    def holds_lease(self) -> bool:
        """Whether the current thread holds a lease through the cache (the cache
        counts them per thread where they are taken and given back, under
        ``on_full="wait"`` only, the one policy that asks: False otherwise)."""
        return self._holds_lease()

    # -------------------------------------------------------- memory pressure

    def evict_for_memory(self, resolved_id: str, deadline: float) -> None:
        """Evict, round by round, while the probe reports less free memory than the threshold."""
        while True:
            fraction = self.measure_free_fraction()
            if fraction is None or fraction >= self._threshold:
                return
            if self.evict_memory_round(resolved_id, deadline) == 0:
                self._quiet.warning(
                    ("pressure", None),
                    "memory pressure (free fraction %.3f < %.3f) but no model is evictable",
                    fraction,
                    self._threshold,
                )
                return
            self.release_memory()

    def measure_free_fraction(self) -> float | None:
        """The probe's free fraction; None (no pressure) when the probe fails."""
        try:
            return self._memory_probe().free_fraction()
        except Exception as error:
            self._counters.increment("memory_probe_errors")
            self._quiet.warning(
                ("probe", type(error).__name__),
                "memory probe failed (%r); treating it as no pressure",
                error,
            )
            return None

    def release_memory(self) -> None:
        """Collect garbage and ask the probe to release cached memory (a failure is logged)."""
        gc.collect()
        try:
            self._memory_probe().release_cache()
        except Exception as error:
            self._counters.increment("memory_probe_errors")
            self._quiet.warning(
                ("release", type(error).__name__), "memory probe release_cache() failed: %r", error
            )

    def evict_memory_round(self, resolved_id: str, deadline: float) -> int:
        """Evict up to MEMORY_EVICTIONS_PER_ROUND models; skipped victims use no budget."""
        evicted = 0
        owner, book, policy = self._owner, self._book, self._policy
        busy: str | None = None  # a victim found busy on the last pass (see admit)
        while evicted < MEMORY_EVICTIONS_PER_ROUND:
            batch = object()
            with owner._lru_guard(deadline):
                # One eviction at a time, and none while a load awaits its commit.
                while book.evictions_undecided() or policy.committing():
                    self.wait_locked(deadline, resolved_id)
                leased = frozenset(self._manager.lease_counts())
                victims = policy.memory_victims(
                    MEMORY_EVICTIONS_PER_ROUND - evicted, leased, resolved_id
                )
                if busy not in victims:
                    for victim in victims:
                        book.choose(victim, None, batch)
            if not victims:
                break
            if busy is not None and busy in victims:
                self.await_lifecycle(busy)
                busy = None
                continue
            try:
                evicted += owner._evict(victims, "evictions_memory", batch)
            except VictimBusy as error:
                evicted += error.evicted
                busy = error.victim
        return evicted

    # ------------------------------------------------------------ restoration

    def restore(self, exclude: str | None = None) -> None:
        """Evict least-recent evictable models until the cache is within its bounds.

        Called with no lock or lifecycle held, after a lease is given back, a
        model unpinned or an add finished. Never evicts ``exclude`` (the
        model an add just loaded) nor a pinned, leased or in-progress model.
        Never waits for an add's eviction: while one is undecided, that add
        restores when it ends. While only another restoration's evictions
        are undecided, it waits for them (holding nothing, bounded by the
        queue timeout) and then decides: left to that restoration, it would
        be lost if that one failed, and that one's exclusion is not its. A victim
        whose lifecycle another thread holds is waited for, holding nothing of
        this cache, and the round decided again.
        Never raises (an unload failure or a timeout stops it, counted in
        ``restoration_failures`` and logged once per kind per minute); the
        victims' lifecycle waits are bounded by the manager's
        ``lock_timeout``.
        """
        # A lock-free hint first, so the common case (never over the bounds)
        # costs one read. Only an admission over the bounds or a weighted
        # commit (both under the lock) set it: a read that misses a concurrent
        # set is ordered before that admission, whose add restores when it ends.
        if self.maybe_over:
            self.restore_over(exclude)

    def restore_over(self, exclude: str | None) -> None:
        """:meth:`restore` once the lock-free hint says the cache may be over its bounds."""
        owner, book, policy = self._owner, self._book, self._policy
        deadline: float | None = None  # set when it first waits for another restoration
        try:
            # A round whose victims all went ends it; another round follows only
            # a victim rescued, gone or busy since its choice, so a bounded
            # number of rounds ends it.
            for _ in range(len(book) + 1):
                with owner._lru_guard():
                    while book.evictions_undecided():
                        if book.evictions_undecided_except(RESTORATION):
                            # An add's: that add restores when it ends.
                            self._restorations_deferred += 1
                            return
                        # Only another restoration's: it comes first, and this one
                        # decides after it (left to it, this one would be lost if
                        # that one failed, and its exclusion is not ours).
                        if deadline is None:
                            deadline = time.monotonic() + self._timeout
                        self.wait_restoration_locked(deadline)
                    count, weight = policy.excess()
                    if count <= 0 and weight <= 0:
                        self.maybe_over = False
                        return
                    leased = frozenset(self._manager.lease_counts())
                    victims = policy.restoration_victims(leased, exclude)
                    self._restoring_exclude = exclude  # for the revalidation at commit
                    if not victims:
                        return
                    batch = object()  # this round's choices (a failure rolls back only these)
                    for victim in victims:
                        book.choose(victim, RESTORATION, batch)
                try:
                    went = owner._evict(victims, "evictions_restore", batch)
                except VictimBusy as busy:
                    # Its holder (a use, a pin, a removal) ends without us: wait
                    # for it holding nothing (as an add does), then decide again.
                    # Giving up here left the bound to nobody (I11 at quiescence).
                    self.await_lifecycle(busy.victim)
                    continue
                if went == len(victims):
                    # Every victim went: this restoration took effect (one instant,
                    # as in the spec). What is over the bound since (a load admitted
                    # over it meanwhile) is the restoration of that add, lease or
                    # pin's end, never a second round of this one (I15).
                    return
        except Exception as error:  # restoring never fails the caller's operation
            note_swallowed(
                error, f"the cache's restoration of its bound ({self.bounds()}) stopped here"
            )
            self.restoration_failed(error)

    def restoration_failed(self, error: BaseException) -> None:
        """A restoration stopped on ``error``: counted, and logged once per kind per minute."""
        self._counters.increment("restoration_failures")
        self._quiet.warning(
            ("restore", type(error).__name__),
            "could not bring the cache back within its bound (%s): %r; the models stay "
            "loaded until the next lease or pin ends",
            self.bounds(),
            error,
        )

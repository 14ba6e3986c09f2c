"""The cache's evictions: unloading the victims an admission or restoration chose.

:class:`Evictions` runs one batch of chosen victims (``evict``), each under
its lifecycle and outside the bookkeeping lock: the victim's lifecycle is
taken without waiting (a busy victim drops the rest of the batch, I17), the
choice is confirmed under the lock (rescued, pinned, leased or no longer
needed since: skipped, I15) and committed (UNLOADING), the inner layer
unloads it, and the book forgets it; a failed unload puts it back at its
position (I6) and gives the slot of the add that chose it back in the same
step. It waits for a committed victim's unload for the readers that must
not see a model being torn down (``await_unload_locked``).

Every step is reached through the cache's extension points of the same
name (``_evict``, ``_evict_one``, ``_hold_victim``, ``_victim_gone``,
``_confirm_victim_locked``, ``_rollback_eviction``; :class:`EvictionOwner`),
so a known-bug variant that overrides one of them on the cache changes what
every eviction does, and the cache's own are one-line calls of these.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol

from modelmanager.decorators._cache_admission import AdmissionControl, VictimBusy, remaining
from modelmanager.decorators._cache_book import IdState
from modelmanager.decorators._cache_options import CacheParts
from modelmanager.errors import LockTimeout, attach_secondary
from modelmanager.link import TryLifecycle

if TYPE_CHECKING:
    pass

__all__ = ["EvictionOwner", "Evictions"]

_UNLOADING = IdState.UNLOADING


class EvictionOwner(Protocol):
    """The cache's eviction steps (its extension points), which :class:`Evictions` calls."""

    def _evict_one(self, victim: str) -> bool: ...

    def _hold_victim(self, victim: str) -> AbstractContextManager[None]: ...

    def _victim_gone(self, victim: str) -> bool: ...

    def _confirm_victim_locked(self, victim: str) -> object | None: ...

    def _rollback_eviction(self, victims: list[str], batch: object) -> None: ...

    def _forget(self, resolved_id: str) -> None: ...


class Evictions:
    """The eviction steps of one cache (module doc); state lives in the book."""

    def __init__(
        self,
        owner: EvictionOwner,
        parts: CacheParts,
        admission: AdmissionControl,
        try_lifecycle: TryLifecycle | None,
    ) -> None:
        options = parts.options
        self._owner = owner
        self._book = parts.book
        self._admission = admission
        self._manager = parts.manager
        self._changed = parts.changed
        self._counters = parts.counters
        # Takes a victim's lifecycle without waiting (None: the stack has no such
        # step, and an eviction waits for the lifecycle as a remove does).
        self._try_lifecycle = try_lifecycle
        self._delete_from_disk = options.delete_evicted_from_disk
        self._wait_limit = options.queue_lock_timeout

    def evict(self, victims: list[str], cause: str, batch: object) -> int:
        """Unload ``victims`` (chosen as ``batch``) in order, outside the lock; return
        how many went. Raises :class:`VictimBusy` (this batch's remaining choices
        dropped) or the error of a failed unload (they are rolled back)."""
        owner, counters = self._owner, self._counters
        evicted = 0
        for index, victim in enumerate(victims):
            try:
                gone = owner._evict_one(victim)
            except VictimBusy as busy:
                # Never wait for a lifecycle while holding choices (I17): drop
                # this batch's remaining ones; the caller decides again.
                self.drop_choices(victims[index:], batch)
                busy.evicted = evicted
                raise
            except BaseException as error:
                counters.increment("eviction_failures")
                try:
                    owner._rollback_eviction(victims[index:], batch)
                except BaseException as secondary:  # keep the eviction's error (I16)
                    attach_secondary(error, secondary, "rolling back a failed eviction")
                raise
            if gone:
                evicted += 1
                counters.increment(cause)
            else:
                owner._rollback_eviction([victim], batch)
        return evicted

    def evict_one(self, victim: str) -> bool:
        """Unload one chosen victim under its lifecycle; False if it must be skipped.

        Skipped (nothing unloaded): removed since it was chosen (or behind
        the cache's back: its stale entry goes), rescued by a use, pinned or
        leased meanwhile, or, for a capacity victim, no longer needed or no
        longer the least-recent evictable id at this commit (I15).

        The lifecycle is taken without waiting: if another thread holds it,
        raises :class:`VictimBusy` with nothing changed. Waiting for it here,
        with this batch's choices undecided, closes a cycle when the holder
        waits for a lease whose owner's add waits for those choices (B17, I17).
        """
        owner, changed = self._owner, self._changed
        with owner._hold_victim(victim):
            if owner._victim_gone(victim):
                owner._forget(victim)
                return False
            with changed:
                batch = owner._confirm_victim_locked(victim)
                if batch is None:
                    return False
            try:
                self._manager.remove(victim, delete_from_disk=self._delete_from_disk)
            except BaseException:
                # Still under the victim's lifecycle: nobody sees it UNLOADING
                # once the unload is known to have failed (I6: same position).
                # The add that chose it fails with this error: its slot goes in
                # the same step, so nobody sees the victim back while the failed
                # add still holds room (the spec's failed admission holds none).
                with changed:  # a rollback: unbounded, like _forget
                    self._book.fail_unload(victim)
                    self._admission.unload_failed_locked(batch)
                    changed.notify_all()
                raise
            owner._forget(victim)
            return True

    def hold_victim(self, victim: str) -> AbstractContextManager[None]:
        """The victim's lifecycle, taken without waiting; raises :class:`VictimBusy`,
        nothing changed, when another thread holds it."""
        try_lifecycle = self._try_lifecycle
        if try_lifecycle is None:
            return self._manager.lifecycle(victim)
        held = try_lifecycle(victim)
        if held is None:
            raise VictimBusy(victim)
        return held

    def confirm_victim_locked(self, victim: str) -> object | None:
        """Commit a chosen victim to its unload (UNLOADING), lock and lifecycle held.

        Returns the eviction batch that chose it, or None, nothing committed,
        when it must be skipped: rescued by a use, pinned or leased meanwhile,
        or no longer chosen by the policy's revalidation (I15). Pins and leases
        are only added while holding the victim's lifecycle, so the answer
        holds until the unload is done.
        """
        book, manager = self._book, self._manager
        if (
            not book.chosen(victim)  # rescued by a use since chosen
            or victim in book.pins
            or manager.lease_counts().get(victim, 0)
        ):
            return None
        # Revalidate the choice as if made now (CapacityPolicy.still_chosen).
        requester, batch = book.requester(victim), book.batch(victim)
        book.unchoose(victim)
        leased = frozenset(manager.lease_counts())
        admission = self._admission
        exclude = admission.restoring_exclude  # a restoration's victim: its exclusion
        if not admission.policy.still_chosen(victim, requester, leased, exclude):
            self._changed.notify_all()
            return None
        book.choose(victim, requester, batch)
        book.start_unload(victim)
        return batch

    def rollback(self, victims: list[str], batch: object) -> None:
        """A failed or skipped eviction: only ``batch``'s own marks go, positions stay.

        A victim may have been rescued and chosen again by a newer eviction
        meanwhile (nothing was undecided once ours failed): its marks are that
        eviction's, not ours.
        """
        changed = self._changed
        with changed:
            book = self._book
            for victim in victims:
                if not book.owned_by(victim, batch):
                    continue
                if book.state(victim) is _UNLOADING:
                    book.fail_unload(victim)
                else:
                    book.unchoose(victim)
            changed.notify_all()

    def drop_choices(self, victims: list[str], batch: object) -> None:
        """Drop ``batch``'s remaining choices (a busy victim ends the batch).

        Only choices: an UNLOADING mark of this batch was committed by the
        eviction that holds the victim's lifecycle now (it re-chose the victim
        after a rescue), and that unload resolves its own mark.
        """
        changed = self._changed
        with changed:
            book = self._book
            for victim in victims:
                if book.owned_by(victim, batch) and book.chosen(victim):
                    book.unchoose(victim)
            changed.notify_all()

    def await_unload_locked(self, resolved_id: str, deadline: float) -> None:
        """Wait (lock held, released while waiting) for the unload of a committed victim.

        Ends when the eviction's ``_forget`` (it went) or rollback (it stayed)
        has run; both notify. Raises :class:`LockTimeout` at ``deadline``.
        """
        book, changed = self._book, self._changed
        while book.state(resolved_id) is _UNLOADING:
            left = remaining(deadline)
            if left <= 0 or (not changed.wait(left) and book.state(resolved_id) is _UNLOADING):
                self._counters.increment("lock_timeouts")
                raise LockTimeout(
                    f"the eviction of model {resolved_id!r} (its unload is in progress)",
                    self._wait_limit,
                )

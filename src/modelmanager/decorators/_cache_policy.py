"""The cache's policy: how full it is, what to evict, whether a cold add may proceed.

Pure decisions over the bookkeeping (:class:`~._cache_book.CacheBook`) and
what the inner layer reports (registration, leases); no locks, no waits, no
unloads. The cache calls every method with its bookkeeping lock held and
acts on the answer (:mod:`.fixed_size_cache`): it waits, evicts outside the
lock, or reserves a slot.

Occupancy counts what the cache has promised memory to: the models loaded
at this layer plus the capacity slots of cold loads in flight (chosen
semantics 3 of the spec, ``models_spec/README.md``). A listed id whose removal or unload has
already unregistered it inside is no longer loaded here, and one that holds
a slot again is back in flight.

Two bounds, either or both: ``max_size`` (models) and ``max_weight`` (the
sum of the models' weights, e.g. parameter bytes). A model's weight is
known once it is loaded; a load in flight counts with the weight its id had
when last loaded (``estimates``), or 0 the first time, and the cache brings
itself back within ``max_weight`` right after the commit if the estimate was
low (:meth:`CapacityPolicy.restoration_victims`).

Extension points (one decision each; a known-bug variant overrides one by
subclassing :class:`CapacityPolicy` and naming the subclass in the cache's
``policy_class``):

* :meth:`CapacityPolicy.in_flight` — capacity slots of loads in flight.
* :meth:`CapacityPolicy.occupied` — models loaded at this layer.
* :meth:`CapacityPolicy.joined` — listed ids an add joined (never admission victims).
* :meth:`CapacityPolicy.needed` / :meth:`CapacityPolicy.weight_needed` — how
  many models / how much weight must go to admit one more.
* :meth:`CapacityPolicy.evictable` — whether a listed id may be chosen.
* :meth:`CapacityPolicy.capacity_victims` / :meth:`CapacityPolicy.memory_victims`.
* :meth:`CapacityPolicy.still_chosen` — the revalidation at an eviction's commit.
* :meth:`CapacityPolicy.admit` — the whole admission decision.
* :meth:`CapacityPolicy.admit_held` — the next round of an admission that
  holds its slot (reserved with its first victims, kept until it loads).
* :meth:`CapacityPolicy.oversized` — a model that fits only alone.
* :meth:`CapacityPolicy.restoration_victims` — what goes to bring an
  over-full cache back within its bounds (after a lease or pin ends).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Mapping
from typing import ClassVar

from modelmanager.decorators._cache_book import CacheBook, IdState

__all__ = ["MEMORY_EVICTIONS_PER_ROUND", "Admission", "CapacityPolicy"]

MEMORY_EVICTIONS_PER_ROUND = 3
"""Upstream's round size for memory-pressure eviction."""

_EVICTING = IdState.EVICTING
_REMOVING = IdState.REMOVING
_UNLOADING = IdState.UNLOADING

RESTORATION = ""
"""The requester recorded for a restoration's victims (never a model id: ids are non-empty)."""


class Admission(enum.Enum):
    """What a cold add's admission step should do next (see :meth:`CapacityPolicy.admit`)."""

    RESERVE = "reserve"
    """Room is there (or a slot for the same id is shared): reserve a slot."""
    EVICT = "evict"
    """Reserve a slot, evict the returned victims (outside the lock) holding it,
    then decide again (:meth:`CapacityPolicy.admit_held`)."""
    WAIT = "wait"
    """Wait (bounded) for an in-flight load or an undecided eviction, then decide again."""
    FULL = "full"
    """Every registered model is pinned or leased: the cache's full-cache policy decides."""


class CapacityPolicy:
    """Capacity and victim decisions for one cache (module doc). Not thread-safe.

    ``registered`` answers whether an id is registered in the inner layer
    (lock-free). ``max_size`` is the bound in models and ``max_weight`` in
    weight (None: no such bound); ``estimates`` maps an id to the weight it
    had when last loaded.
    """

    EXTENSION_POINTS: ClassVar[frozenset[str]] = frozenset()
    """Private names a subclass may override: none; its public methods are the
    extension points (module doc), named by the cache's class attribute."""
    EXTENSION_HELPERS: ClassVar[frozenset[str]] = frozenset()
    """Private names an override may use: none."""

    def __init__(
        self,
        book: CacheBook,
        registered: Callable[[str], bool],
        max_size: int | None,
        max_weight: int | None = None,
        estimates: Mapping[str, int] | None = None,
    ) -> None:
        self.book = book
        self.registered = registered
        self.max_size = max_size
        self.max_weight = max_weight
        self.estimates: Mapping[str, int] = estimates if estimates is not None else {}

    # ----------------------------------------------------------- occupancy

    def present(self, resolved_id: str) -> bool:
        """Whether the id is loaded at this layer (listed, and not already gone inside)."""
        book = self.book
        if resolved_id not in book.lru:
            return False
        mark = book.marks.get(resolved_id)
        if mark is not None and mark.state is not _EVICTING:
            return self.registered(resolved_id)  # unregistered inside: gone already
        return True

    def occupied(self) -> int:
        """How many models are loaded at this layer (O(marks))."""
        registered = self.registered
        gone = sum(1 for resolved_id in self.book.leaving() if not registered(resolved_id))
        return len(self.book.lru) - gone

    def in_flight(self) -> int:
        """How many ids hold capacity slots without being loaded here (O(marks))."""
        book = self.book
        registered = self.registered
        back = sum(
            1
            for resolved_id in book.leaving()
            if resolved_id in book.slots and not registered(resolved_id)
        )
        return book.unlisted_slots() + back

    def committing(self) -> bool:
        """Whether a load is registered inside but not committed here yet (O(slots))."""
        book = self.book
        registered = self.registered
        return any(
            resolved_id not in book.lru and registered(resolved_id) for resolved_id in book.slots
        )

    def joined(self) -> frozenset[str]:
        """Listed ids an add holds a slot for: it joined their load (O(slots)).

        Such an add has not taken effect yet; if the model went now, it would
        load it again. So evicting one makes no room, and an admission never
        chooses it: it waits for that add instead (:meth:`admit`).
        """
        lru = self.book.lru
        return frozenset(resolved_id for resolved_id in self.book.slots if resolved_id in lru)

    def needed(self, requester: str) -> int:
        """How many models must go before ``requester`` (not in flight, not present) fits."""
        if self.max_size is None:
            return 0
        return self.occupied() + self.in_flight() + 1 - self.max_size

    def weight(self) -> int:
        """The weight of the models loaded at this layer plus that of loads in flight."""
        book = self.book
        registered = self.registered
        gone = sum(
            book.weights.get(resolved_id, 0)
            for resolved_id in book.leaving()
            if not registered(resolved_id)
        )
        estimates = self.estimates
        in_flight = sum(
            estimates.get(resolved_id, 0)
            for resolved_id in book.slots
            if not self.present(resolved_id)
        )
        return book.committed_weight - gone + in_flight

    def weight_needed(self, requester: str) -> int:
        """How much weight must go before ``requester`` (its estimate) fits (0: none)."""
        if self.max_weight is None:
            return 0
        return self.weight() + self.estimates.get(requester, 0) - self.max_weight

    # ------------------------------------------------------------- victims

    def evictable(self, candidate: str, leased: Collection[str], exclude: str | None) -> bool:
        """Whether a listed id may be chosen: not pinned, leased, chosen or leaving."""
        if candidate == exclude or candidate in self.book.pins or candidate in leased:
            return False
        mark = self.book.marks.get(candidate)
        if mark is None:
            return True
        # A removal in progress may still fail; until the model is unregistered
        # inside, evicting it is what a sequential order would do (it is least
        # recent). Once unregistered, evicting it makes no room.
        return mark.state is _REMOVING and not mark.chosen and self.registered(candidate)

    def capacity_victims(
        self, need: int, leased: Collection[str], exclude: str | None, weight: int = 0
    ) -> list[str]:
        """Evictable ids, least recent first, until ``need`` of them and ``weight`` are freed.

        Fewer when not enough are evictable; none when nothing is needed.
        """
        victims: list[str] = []
        if need <= 0 and weight <= 0:
            return victims
        evictable = self.evictable
        weights = self.book.weights
        freed = 0
        for candidate in self.book.lru:
            if evictable(candidate, leased, exclude):
                victims.append(candidate)
                freed += weights.get(candidate, 0)
                if len(victims) >= need and freed >= weight:
                    break
        return victims

    def _victims(
        self, need: int, weight: int, leased: Collection[str], exclude: str | None
    ) -> list[str]:
        # An unweighted cache calls capacity_victims as before weights existed,
        # so a subclass overriding it with the old signature keeps working.
        if self.max_weight is None:
            return self.capacity_victims(need, leased, exclude)
        return self.capacity_victims(need, leased, exclude, weight)

    def makes_room(self, requester: str, victims: list[str]) -> bool:
        """Whether evicting ``victims`` makes room for ``requester`` (slot not yet reserved).

        False for an admission's partial choice (:meth:`admit` with
        ``partial``): the add is then admitted over the bound once they went.
        """
        return self._covers(victims, self.needed(requester), self.weight_needed(requester))

    def _covers(self, victims: list[str], need: int, weight: int) -> bool:
        weights = self.book.weights
        return len(victims) >= need and sum(weights.get(v, 0) for v in victims) >= weight

    def memory_victims(self, limit: int, leased: Collection[str], exclude: str) -> list[str]:
        """A memory-pressure round: up to ``limit`` evictable ids, least recent first.

        Pinned, leased and in-progress ids are skipped without using the budget.
        """
        return self.capacity_victims(limit, leased, exclude)

    def still_chosen(
        self,
        victim: str,
        requester: str | None,
        leased: Collection[str],
        restoring_exclude: str | None = None,
    ) -> bool:
        """At an eviction's commit: whether ``victim`` (its choice dropped) is still chosen.

        A memory victim (``requester`` None) always is: the probe decided, not
        the occupancy. A capacity victim is when the add that chose it still
        needs room and :meth:`capacity_victims` would choose it again now (an
        unpin, a lease given back or a removal may have changed either).
        Earlier victims of the same batch are gone and later ones are still
        marked chosen, so for the base selection ``victim`` must be the
        least-recent evictable id. A restoration's victim is when
        :meth:`restoration_victims` would choose it again, never evicting
        ``restoring_exclude`` (that restoration's ``exclude``).
        """
        if requester is None:
            return True
        if requester == RESTORATION:
            return victim in self.restoration_victims(leased, restoring_exclude)
        # The add that chose it holds its slot while it evicts (counted in the
        # occupancy, see admit_held): what is over the bounds now is what must
        # go. A removal or a released slot may have made room meanwhile, and an
        # add that joined the victim's load since makes evicting it pointless.
        count, weight = self.excess()
        return victim in self._victims(count, weight, self._unchoosable(leased), requester)

    def _unchoosable(self, leased: Collection[str]) -> Collection[str]:
        """``leased`` plus the :meth:`joined` ids: what an admission never chooses."""
        joined = self.joined()
        return leased if not joined else joined.union(leased)

    def oversized(self, requester: str) -> bool:
        """Whether ``requester`` alone (as last loaded) weighs more than ``max_weight``.

        Such a model fits only alone: no lease or pin ending can make room
        for it, so a full cache admits it over the bound whatever its policy.
        """
        return self.max_weight is not None and self.estimates.get(requester, 0) > self.max_weight

    def excess(self) -> tuple[int, int]:
        """How many models and how much weight are over the bounds now (<= 0: within)."""
        count = -1 if self.max_size is None else self.occupied() + self.in_flight() - self.max_size
        weight = -1 if self.max_weight is None else self.weight() - self.max_weight
        return count, weight

    def restoration_victims(self, leased: Collection[str], exclude: str | None) -> list[str]:
        """What must go to bring the cache back within its bounds (least recent first).

        Never a pinned, leased, chosen or leaving model, nor ``exclude`` (the
        model an add just loaded). Fewer than needed when not enough are
        evictable; none when the cache is within its bounds.
        """
        count, weight = self.excess()
        if count <= 0 and weight <= 0:
            return []
        return self._victims(count, weight, leased, exclude)

    # ----------------------------------------------------------- admission

    def admit(
        self, resolved_id: str, leased: Collection[str], partial: bool = True
    ) -> tuple[Admission, list[str]]:
        """The next step of ``resolved_id``'s admission (see :class:`Admission`).

        Evictions run one at a time: while another add's victim is undecided,
        or a load is registered inside but not committed here, the answer is
        WAIT (choosing around it would not be linearizable if it fails). An
        add short of evictable models waits for in-flight loads *before*
        evicting anything, so a timeout changes nothing. Short of evictable
        models with nothing in flight, it evicts what can go first only when
        ``partial`` (the add will then be admitted over the bound); otherwise
        the answer is FULL at once, so an add that then waits or is refused
        has evicted nothing for it. A model an add joined (:meth:`joined`) is
        never chosen: evicting it makes no room, since that add would load it
        again and take the room; short of room, the add waits for such adds
        as for loads in flight. A committed victim's add waits for its unload
        (WAIT): a slot shared with it now would be such a load.
        """
        book = self.book
        mark = book.marks.get(resolved_id)
        if mark is not None and mark.state is _UNLOADING:
            # A committed victim: a slot now would be a load nobody made room
            # for once it is gone (it takes the room its evicting add made).
            return Admission.WAIT, []
        if resolved_id in book.slots or self.present(resolved_id):
            return Admission.RESERVE, []  # share the slot, or it got loaded meanwhile
        need, weight = self.needed(resolved_id), self.weight_needed(resolved_id)
        if need <= 0 and weight <= 0:
            return Admission.RESERVE, []
        if book.evictions_undecided() or self.committing():
            return Admission.WAIT, []
        victims = self._victims(need, weight, self._unchoosable(leased), resolved_id)
        if self._covers(victims, need, weight):
            return Admission.EVICT, victims
        if self.in_flight() or any(
            self.evictable(rid, leased, resolved_id) for rid in self.joined()
        ):
            # Loads in flight, or adds that joined a model's load, end by
            # themselves: wait for them before evicting anything.
            return Admission.WAIT, []
        if victims and partial:
            return Admission.EVICT, victims  # evict what can go; the next pass is FULL
        return Admission.FULL, []

    def admit_held(self, resolved_id: str, leased: Collection[str]) -> tuple[Admission, list[str]]:
        """The next step of an admission that holds its slot (after an eviction round).

        An add keeps the slot it reserved with its first victims until it
        loads: the room its evictions free is its own, so no other add (or a
        reload of a victim) takes it between rounds. The slot is counted in
        the occupancy, so what is over the bounds is what must still go (a
        victim rescued by a use since its choice): EVICT the next least-recent
        evictable models, WAIT while another eviction is undecided or a load
        awaits its commit, RESERVE (keep the slot) once within the bounds.
        Never a :meth:`joined` model (see :meth:`admit`).
        FULL when too few models are evictable: the caller gives its slot
        back and decides afresh, so an add short of room never holds a slot
        that another add waits for.
        """
        count, weight = self.excess()
        if count <= 0 and weight <= 0:
            return Admission.RESERVE, []
        if self.book.evictions_undecided() or self.committing():
            return Admission.WAIT, []
        victims = self._victims(count, weight, self._unchoosable(leased), resolved_id)
        if self._covers(victims, count, weight):
            return Admission.EVICT, victims
        return Admission.FULL, []

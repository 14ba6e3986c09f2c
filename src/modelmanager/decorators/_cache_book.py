"""The cache's bookkeeping: per-id states, capacity slots, LRU order, pins, weights.

Lock-free and thread-unaware on purpose (no ``threading`` import): every
transition is a few dict or ``OrderedDict`` operations, O(1), and the owner
(``WithFixedSizeCache``) calls them with its bookkeeping lock held. That split is cachetools' (a
thirty-line ``LRUCache`` over an ``OrderedDict``, locking kept outside): the
state machine can be tested alone, sequentially, against a plain model
(``tests/core/test_cache_book.py``), and the concurrency protocol around it
only decides *when* a transition happens. The one exception is the warm
add (:meth:`CacheBook.warm_add`): the book makes the owner's ``add_model``
as one function that takes the owner's lock itself, because a warm add is
what every request pays and a second call would cost a fifth of it.

The per-id state machine (:class:`IdState`; ``docs/cache-design.md``)::

    ABSENT    --reserve-->      RESERVED
    RESERVED  --release-->      ABSENT         (the last slot)
    RESERVED  --commit-->       COMMITTED
    COMMITTED --choose-->       EVICTING
    EVICTING  --use/unchoose--> COMMITTED
    EVICTING  --start_unload--> UNLOADING
    UNLOADING --fail_unload-->  COMMITTED
    COMMITTED --start_remove--> REMOVING
    EVICTING  --start_remove--> REMOVING       (keeps the choice)
    REMOVING  --fail_remove-->  COMMITTED or EVICTING
    listed    --forget-->       ABSENT, or RESERVED if slots remain

* ``RESERVED``: in-flight cold adds hold capacity *slots* (a count: adds of
  one id share); the id is not in the LRU.
* ``COMMITTED``: the load succeeded; the id is in the LRU (``lru``), least
  recent first. Slots may still be held by adds that will join it.
* ``EVICTING``: chosen as an eviction victim, not yet committed to; a use
  (:meth:`CacheBook.use`) *rescues* it back to ``COMMITTED``.
  ``requester`` remembers which add chose it (None: memory pressure).
* ``UNLOADING``: the eviction committed; its unload runs. ``fail_unload``
  returns it to ``COMMITTED`` at the same position (I6).
* ``REMOVING``: a ``remove`` through the cache runs. An eviction may also
  have chosen it (``chosen`` stays visible); ``fail_remove`` restores the
  state before (I5: same position).
* ``forget`` drops an id from the LRU after its unload or removal
  succeeded: ``ABSENT``, or ``RESERVED`` if adds still hold slots.

Every listed id keeps its LRU position through every mark, so no rollback
ever needs to reposition anything. An illegal transition raises
:class:`BookError` and changes nothing: the protocol never makes one, and
the stateful test checks that each is refused.

Weights (``weights``, ``committed_weight``): the weight each listed id was
committed with, summed in O(1) for weight-bounded admission.
"""

from __future__ import annotations

import enum
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar, Protocol

__all__ = ["AddModel", "BookError", "CacheBook", "ColdAdd", "IdState", "WarmLock"]


class WarmLock(Protocol):
    """What :meth:`CacheBook.warm_add` takes of the owner's lock (a ``threading.Lock``)."""

    def acquire(self, blocking: bool = ..., timeout: float = ...) -> bool: ...

    def release(self) -> None: ...


AddModel = Callable[..., None]
"""What :meth:`CacheBook.warm_add` makes: ``WithFixedSizeCache.add_model`` without ``self``."""


ColdAdd = Callable[[str, "str | None", "str | None", bool, "dict[str, Any]"], None]
"""The owner's add past the warm path: ``(model_id, api_key, model_id_alias, pin,
load_kwargs)``, the full argument checks and protocol (:meth:`CacheBook.warm_add`)."""


class BookError(AssertionError):
    """An illegal transition of the bookkeeping (a bug in its caller). Nothing changed."""


class IdState(enum.Enum):
    """Where one resolved id is in the cache's state machine (module doc)."""

    ABSENT = "absent"
    RESERVED = "reserved"
    COMMITTED = "committed"
    EVICTING = "evicting"
    UNLOADING = "unloading"
    REMOVING = "removing"


_EVICTING = IdState.EVICTING
_UNLOADING = IdState.UNLOADING
_REMOVING = IdState.REMOVING


class _Mark:
    """A listed id in transition: EVICTING, UNLOADING or REMOVING (+ an eviction's choice)."""

    __slots__ = ("batch", "chosen", "requester", "state")

    def __init__(
        self, state: IdState, chosen: bool, requester: str | None, batch: object = None
    ) -> None:
        self.state = state
        self.chosen = chosen  # an eviction chose it (EVICTING, or REMOVING chosen meanwhile)
        self.requester = requester  # the add that chose it; None: memory pressure
        # The eviction batch that chose it (kept while UNLOADING): a failed batch rolls
        # back only its own marks, never those of a newer eviction of the same id.
        self.batch = batch

    def __repr__(self) -> str:
        chosen = f", chosen by {self.requester!r}" if self.chosen else ""
        return f"<{self.state.value}{chosen}>"


class CacheBook:
    """The bookkeeping of one cache (module doc). Not thread-safe: the owner locks.

    Public attributes are read by the owner's hot paths directly (the warm
    path reads ``lru``, ``marks`` and ``pins``); change them only through the
    methods, which keep the counters and the state machine consistent.
    """

    EXTENSION_POINTS: ClassVar[frozenset[str]] = frozenset()
    """Private names a subclass may override: none; its public methods are the
    extension points (module doc), named by the cache's class attribute."""
    EXTENSION_HELPERS: ClassVar[frozenset[str]] = frozenset()
    """Private names an override may use: none."""

    __slots__ = (
        "committed_weight",
        "lru",
        "marks",
        "pins",
        "slots",
        "weights",
    )

    # Intended lock-free reads (read by race detectors; see ModelManager): the owner
    # writes these only under its bookkeeping lock; its introspection reads them
    # without it, one atomic operation or copy each.
    __benign_races__: ClassVar[dict[str, str]] = {
        "lru": "the cache's __contains__, __getitem__ and in_flight_loads",
        "marks": "the cache's __getitem__ test before an unload wait",
        "pins": "the cache's pinned() copy",
        "slots": "the cache's in_flight_loads() copy",
        "weights": "the cache's weights() copy",
    }

    def __init__(self) -> None:
        self.lru: OrderedDict[str, Any] = OrderedDict()
        """Listed (committed) ids -> payload, least recently used first."""
        self.marks: dict[str, _Mark] = {}
        """Listed ids in transition (EVICTING, UNLOADING, REMOVING); empty when idle."""
        self.slots: dict[str, int] = {}
        """Ids -> capacity slots held by in-flight adds (ids at zero are not stored)."""
        self.pins: set[str] = set()
        """Pinned resolved ids: configuration, independent of the state."""
        self.weights: dict[str, int] = {}
        """Listed ids -> the weight they were committed with."""
        self.committed_weight = 0
        """Sum of ``weights``."""

    # ------------------------------------------------------------ queries

    def state(self, resolved_id: str) -> IdState:
        """The id's state (O(1))."""
        mark = self.marks.get(resolved_id)
        if mark is not None:
            return mark.state
        if resolved_id in self.lru:
            return IdState.COMMITTED
        return IdState.RESERVED if resolved_id in self.slots else IdState.ABSENT

    def listed(self, resolved_id: str) -> bool:
        """Whether the id is in the LRU (COMMITTED, EVICTING, UNLOADING or REMOVING)."""
        return resolved_id in self.lru

    def chosen(self, resolved_id: str) -> bool:
        """Whether an eviction chose the id and has not committed or dropped it yet."""
        mark = self.marks.get(resolved_id)
        return mark is not None and mark.chosen

    def owned_by(self, resolved_id: str, batch: object) -> bool:
        """Whether the id's choice (EVICTING, or chosen while REMOVING) or unload
        (UNLOADING) belongs to eviction ``batch``."""
        mark = self.marks.get(resolved_id)
        if mark is None or mark.batch is not batch:
            return False
        return mark.chosen or mark.state is _UNLOADING

    def batch(self, resolved_id: str) -> object:
        """The eviction batch that chose the id (None: not chosen, or no batch given)."""
        mark = self.marks.get(resolved_id)
        return mark.batch if mark is not None and mark.chosen else None

    def requester(self, resolved_id: str) -> str | None:
        """The add that chose the id as a capacity victim (None: memory, or not chosen)."""
        mark = self.marks.get(resolved_id)
        return mark.requester if mark is not None and mark.chosen else None

    def slots_of(self, resolved_id: str) -> int:
        """Capacity slots held for the id."""
        return self.slots.get(resolved_id, 0)

    def unlisted_slots(self) -> int:
        """How many ids hold slots without being listed: loads in flight here (O(slots))."""
        lru = self.lru
        return sum(1 for resolved_id in self.slots if resolved_id not in lru)

    def evictions_undecided(self) -> bool:
        """Whether an eviction is in progress: some id chosen or UNLOADING (O(marks))."""
        return any(mark.chosen or mark.state is _UNLOADING for mark in self.marks.values())

    def evictions_undecided_except(self, requester: str) -> bool:
        """Whether an eviction by anyone but ``requester`` is in progress (O(marks));
        a memory-pressure eviction (requester None) counts as another's."""
        return any(
            (mark.chosen or mark.state is _UNLOADING) and mark.requester != requester
            for mark in self.marks.values()
        )

    def leaving(self) -> Iterator[str]:
        """Listed ids whose unload or removal runs (UNLOADING, REMOVING); O(marks)."""
        return (rid for rid, mark in self.marks.items() if mark.state is not _EVICTING)

    def listed_among(self, resolved_ids: Iterable[str]) -> list[str]:
        """The listed ids among ``resolved_ids``, in their order (O(len(resolved_ids)))."""
        lru = self.lru
        return [resolved_id for resolved_id in resolved_ids if resolved_id in lru]

    def order_and_leaving(self) -> tuple[list[str], frozenset[str]]:
        """The listed ids, least recently used first, and those of them whose unload
        or removal runs (UNLOADING, REMOVING): copies (O(n))."""
        marks = self.marks
        return list(self.lru), frozenset(self.leaving()) if marks else frozenset()

    def order(self) -> list[str]:
        """The listed ids, least recently used first (a copy; O(n))."""
        return list(self.lru)

    def __len__(self) -> int:
        return len(self.lru)

    def __repr__(self) -> str:
        return (
            f"CacheBook(lru={list(self.lru)!r}, marks={self.marks!r}, slots={self.slots!r}, "
            f"pins={sorted(self.pins)!r}, committed_weight={self.committed_weight})"
        )

    # -------------------------------------------------------- transitions

    def reserve(self, resolved_id: str) -> None:
        """One more capacity slot for the id (any state)."""
        self.slots[resolved_id] = self.slots.get(resolved_id, 0) + 1

    def release(self, resolved_id: str) -> None:
        """Give back one slot (a failed, joined or timed-out add). Requires one held."""
        held = self.slots.get(resolved_id, 0)
        if not held:
            raise BookError(f"release({resolved_id!r}): no slot is held")
        self._drop_slot(resolved_id, held)

    def commit(self, resolved_id: str, payload: Any = None, weight: int = 0) -> None:
        """RESERVED -> COMMITTED at the most-recent end; the committing add's slot goes."""
        held = self.slots.get(resolved_id, 0)
        if resolved_id in self.lru or not held:
            raise BookError(f"commit({resolved_id!r}) from {self.state(resolved_id).value}")
        self._drop_slot(resolved_id, held)
        self.lru[resolved_id] = payload
        if weight:
            self.weights[resolved_id] = weight
            self.committed_weight += weight

    def adopt(self, resolved_ids: Iterable[str], payloads: Iterable[Any] = ()) -> None:
        """List models loaded before the cache existed (ABSENT -> COMMITTED, in order)."""
        ids = list(resolved_ids)
        if self.lru or self.slots or len(set(ids)) != len(ids):
            raise BookError("adopt() needs an empty book and distinct ids")
        values = list(payloads) or [None] * len(ids)
        self.lru.update(zip(ids, values, strict=True))

    def set_payload(self, resolved_id: str, payload: Any) -> None:
        """Replace a listed id's payload (position unchanged)."""
        if resolved_id not in self.lru:
            raise BookError(f"set_payload({resolved_id!r}): not listed")
        self.lru[resolved_id] = payload

    def set_weight(self, resolved_id: str, weight: int) -> None:
        """Replace a listed id's weight (position unchanged)."""
        if resolved_id not in self.lru:
            raise BookError(f"set_weight({resolved_id!r}): not listed")
        self.committed_weight += weight - self.weights.pop(resolved_id, 0)
        if weight:
            self.weights[resolved_id] = weight

    def use(self, resolved_id: str) -> bool:
        """A use: a listed id that is not UNLOADING moves to the most-recent end.

        A chosen victim is rescued (EVICTING -> COMMITTED; a REMOVING id loses
        the choice). Returns False, nothing changed, for an unlisted or
        UNLOADING id.
        """
        lru = self.lru
        if resolved_id not in lru:
            return False
        mark = self.marks.get(resolved_id)
        if mark is not None:
            if mark.state is _UNLOADING:
                return False
            if mark.chosen:
                self._unchoose(resolved_id, mark)
        lru.move_to_end(resolved_id)
        return True

    def warm_use(
        self, resolved_id: str, pin: bool, inner_hit: Callable[[str], bool] | None
    ) -> bool:
        """A warm add (the owner's lock held), or False, nothing changed.

        A listed id that is not UNLOADING and that the inner layer answers as
        a warm hit moves to the most-recent end, a chosen victim is rescued
        (as :meth:`use`), and it is pinned if ``pin``. With ``inner_hit`` None
        the payload is the inner manager's shared record
        (:class:`~modelmanager.link.WarmRecord`, under the same lock): it must
        be live (not ``unloading``), and its ``hits`` counts this one; else
        ``inner_hit(resolved_id)`` records the hit (or answers False).
        """
        lru = self.lru
        record = lru.get(resolved_id)
        if record is None:
            return False
        marks = self.marks
        mark = marks.get(resolved_id) if marks else None
        if mark is not None and mark.state is _UNLOADING:
            return False
        if inner_hit is None:
            if record.unloading:
                return False
            record.hits += 1
        elif not inner_hit(resolved_id):
            return False
        lru.move_to_end(resolved_id)
        if mark is not None and mark.chosen:
            self._unchoose(resolved_id, mark)
        if pin:
            self.pins.add(resolved_id)
        return True

    def warm_add(
        self,
        lock: WarmLock,
        lock_timeout: float,
        lock_timed_out: Callable[[], object],
        inner_hit: Callable[[str], bool] | None,
        cold_add: ColdAdd,
    ) -> AddModel:
        """The owner's ``add_model``: :meth:`warm_use` in one call, else ``cold_add``.

        The function returned takes ``add_model``'s arguments. With plainly
        valid ones it takes ``lock`` (a try without waiting, then a wait of at
        most ``lock_timeout`` seconds; ``lock_timed_out()`` raises when that
        expires) and, under it, makes the warm add of :meth:`warm_use` for the
        resolved id (the alias, if any). Anything else (a miss, or arguments
        only the full checks judge) calls ``cold_add(model_id, api_key,
        model_id_alias, pin, load_kwargs)`` with the lock released, nothing
        changed here.

        Why a function made by the book: the warm add is what every request
        of a server pays, and each Python call costs a fifth of it. The common
        case (no id in transition, the inner manager's records shared) is
        :meth:`warm_use` written out in the function, so a warm add is one
        call, while the book's state is still touched by the book's code
        alone; any other case, and every case where a subclass overrides
        :meth:`warm_use`, calls :meth:`warm_use` (as bound when made).
        ``benchmarks/bench_instructions.py`` counts what it costs.
        """
        # The book's containers are read at each call, never captured: whoever
        # swaps one (lockstep's race detector puts a watched copy in its place)
        # must see the warm add use the one in place.
        book, warm_use = self, self.warm_use
        acquire, release = lock.acquire, lock.release
        # warm_use written out below: its common case with shared records,
        # unless a subclass overrides warm_use (then every warm add calls it).
        written_out = inner_hit is None and type(self).warm_use is CacheBook.warm_use

        def add_model(
            model_id: str,
            api_key: str | None = None,
            model_id_alias: str | None = None,
            *,
            pin: bool = False,
            **load_kwargs: Any,
        ) -> None:
            if (
                type(model_id) is str
                and (api_key is None or type(api_key) is str)
                and (
                    model_id_alias is None
                    or (type(model_id_alias) is str and model_id_alias and model_id)
                )
                and (pin is False or pin is True)
            ):
                # An empty model_id (alias None: an alias needs a non-empty id)
                # is never listed, as every listed id was checked: it misses.
                resolved_id = model_id if model_id_alias is None else model_id_alias
                if not acquire(False) and not acquire(True, lock_timeout):
                    lock_timed_out()
                try:
                    if written_out and not book.marks:  # the common case of warm_use
                        lru = book.lru
                        try:
                            record = lru[resolved_id]
                        except KeyError:
                            record = None
                        if record is not None and not record.unloading:
                            record.hits += 1
                            lru.move_to_end(resolved_id)
                            if pin:
                                book.pins.add(resolved_id)
                            return
                    elif warm_use(resolved_id, pin, inner_hit):
                        return
                finally:
                    release()
            cold_add(model_id, api_key, model_id_alias, pin, load_kwargs)

        return add_model

    def choose(self, resolved_id: str, requester: str | None, batch: object = None) -> None:
        """COMMITTED -> EVICTING (or REMOVING gains a choice), by ``requester``'s add,
        as part of eviction ``batch`` (any object identifying it; see `owned_by`)."""
        if resolved_id not in self.lru:
            raise BookError(f"choose({resolved_id!r}): not listed")
        mark = self.marks.get(resolved_id)
        if mark is None:
            self.marks[resolved_id] = _Mark(_EVICTING, True, requester, batch)
        elif mark.state is _REMOVING and not mark.chosen:
            mark.chosen = True
            mark.requester = requester
            mark.batch = batch
        else:
            raise BookError(f"choose({resolved_id!r}) from {mark!r}")

    def unchoose(self, resolved_id: str) -> None:
        """Drop an eviction's choice (EVICTING -> COMMITTED; REMOVING stays). Position kept."""
        mark = self.marks.get(resolved_id)
        if mark is None or not mark.chosen:
            raise BookError(f"unchoose({resolved_id!r}): not chosen")
        self._unchoose(resolved_id, mark)

    def start_unload(self, resolved_id: str) -> str | None:
        """EVICTING -> UNLOADING (the eviction commits). Returns the requester, which
        the mark keeps while UNLOADING (whose eviction it is)."""
        mark = self.marks.get(resolved_id)
        if mark is None or mark.state is not _EVICTING:
            raise BookError(f"start_unload({resolved_id!r}) from {self.state(resolved_id).value}")
        mark.state, mark.chosen = _UNLOADING, False
        return mark.requester

    def fail_unload(self, resolved_id: str) -> None:
        """UNLOADING -> COMMITTED: the unload failed; the position is unchanged (I6)."""
        mark = self.marks.get(resolved_id)
        if mark is None or mark.state is not _UNLOADING:
            raise BookError(f"fail_unload({resolved_id!r}) from {self.state(resolved_id).value}")
        del self.marks[resolved_id]

    def start_remove(self, resolved_id: str) -> bool:
        """COMMITTED or EVICTING -> REMOVING; False (nothing changed) if not listed."""
        if resolved_id not in self.lru:
            return False
        mark = self.marks.get(resolved_id)
        if mark is None:
            self.marks[resolved_id] = _Mark(_REMOVING, False, None)
        elif mark.state is _EVICTING:
            mark.state = _REMOVING  # keeps the choice
        else:
            raise BookError(f"start_remove({resolved_id!r}) from {mark!r}")
        return True

    def fail_remove(self, resolved_id: str) -> None:
        """REMOVING -> COMMITTED (or EVICTING if still chosen): the removal failed (I5)."""
        mark = self.marks.get(resolved_id)
        if mark is None or mark.state is not _REMOVING:
            raise BookError(f"fail_remove({resolved_id!r}) from {self.state(resolved_id).value}")
        if mark.chosen:
            mark.state = _EVICTING
        else:
            del self.marks[resolved_id]

    def forget(self, resolved_id: str) -> bool:
        """A listed id leaves (its unload or removal succeeded). False if not listed."""
        if resolved_id not in self.lru:
            return False
        del self.lru[resolved_id]
        self.marks.pop(resolved_id, None)
        self.committed_weight -= self.weights.pop(resolved_id, 0)
        return True

    def pin(self, resolved_id: str) -> None:
        """Pin the id (any state; pins are configuration)."""
        self.pins.add(resolved_id)

    def unpin(self, resolved_id: str) -> bool:
        """Unpin the id; whether it was pinned."""
        if resolved_id in self.pins:
            self.pins.discard(resolved_id)
            return True
        return False

    # ------------------------------------------------------------- helpers

    def _drop_slot(self, resolved_id: str, held: int) -> None:
        if held == 1:
            del self.slots[resolved_id]
        else:
            self.slots[resolved_id] = held - 1

    def _unchoose(self, resolved_id: str, mark: _Mark) -> None:
        if mark.state is _EVICTING:
            del self.marks[resolved_id]
        else:
            mark.chosen = False
            mark.requester = None
            mark.batch = None

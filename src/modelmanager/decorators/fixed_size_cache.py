"""WithFixedSizeCache: a bounded LRU of loaded models, with pins and memory pressure.

State (written only under one LRU lock, which is never held across a
constructor, ``clear_cache``, ``gc.collect`` or a per-id lock wait — B15;
introspection — ``lru_order``, ``pinned``, ``in_flight_loads`` — reads
atomic copies without the lock, so it never blocks):

* ``_lru``: OrderedDict of registered resolved ids, least recent first (O(1)
  move/pop). An id enters only after its load succeeded and leaves only after
  its removal succeeded, both while holding the id's lifecycle, so at
  quiescence it holds exactly the registered ids, without duplicates (I4,
  B7, B8, B13).
* ``_reserved``: capacity slots of in-flight cold loads (id -> number of adds
  sharing that slot). Registered plus in-flight never exceed ``max_size``
  unless everything registered is pinned or leased (I11, B14).
* ``_evicting``: ids chosen as victims but not yet committed to; ``_unloading``:
  victims being unloaded now. Both keep their LRU position until the unload
  succeeded, so a failed eviction needs no repositioning (I6, B9) and a failed
  remove never touches the LRU (I5, B5, B6). A use (warm hit, ``refresh``)
  of a chosen-but-uncommitted victim *rescues* it: the eviction then skips it
  and chooses again, exactly as if the use had come first (I15). Any other
  change meanwhile is caught at the commit, which revalidates a capacity
  victim (``_still_chosen_locked``, below). A use of a committed victim waits
  for its unload instead (below).
* ``_removing``: ids whose ``remove`` through this layer is in progress
  (marked before the inner removal, dropped by ``_forget`` or on failure).
* ``_pins``: configuration, keyed by resolved id; allowed before a load,
  survives remove and clear (I12).

The committed view. An id is *loaded at this layer* exactly while it is in
``_lru`` and registered in the inner layer. A cold load therefore takes
effect here at one instant, its LRU commit (``_commit_load``, under the LRU
lock): visibility and LRU position change together, so no hit or load can
slip between them (I15). A removal takes effect at the inner layer's
unregistration; from then until ``_forget`` the id (marked ``_removing`` or
``_unloading``) is left out of every observer and of the occupancy that
admission counts. The observers (``keys``, ``__contains__``, ``__getitem__``,
``__len__``, ``describe_models``, ``lru_order``) answer from this view, and
so do decorators above the cache, which delegate to it. ``keys``, ``len``
and ``describe_models`` read the inner layer under the LRU lock (so the LRU
cannot change meanwhile: the answer is the view at the inner read);
``__contains__`` and ``__getitem__`` read the inner layer first, then the LRU
(an id enters the LRU only while registered inside, so both reads
succeeding means it was loaded here at some instant between them);
``lru_order`` stays lock-free. Leases need no check of their own: a lease
waits for the id's lifecycle, which the add holds until after its commit and
a removal until after ``_forget``. ``in_flight_loads`` still counts slots of
ids not yet registered *inside*, so the inner registry plus it is the
occupancy at every moment.

The warm path. ``add_model`` of a registered id first tries to answer under
the LRU lock alone: if the id is in the LRU, is not a committed eviction
victim (``_unloading``) and the inner layers record a warm hit without waiting
(``_fast_warm_hit_hook``: for a :class:`ModelManager`, "registered and not
being unloaded" under its state lock), it moves the id to the most-recent end
(rescuing it if it was chosen as a victim, like any use) and pins it if asked.
All of that happens while the LRU lock is held, so the answer is linearizable
at that moment: an eviction commits its victim (``_evicting`` to
``_unloading``) under the same lock before unloading it, and a removal marks
the model unloading in the manager before ``clear_cache``; either way the warm
path refuses and the add takes the full protocol below, which waits for the
removal and reloads or hits (B4). Lock order: this cache's LRU lock, then the
inner layers' (an inner cache's LRU lock, the manager's state lock); never the
reverse. The warm path is used only while a subclass keeps the steps it
replaces (``_add``, ``_warm_hit``, ``_load``, ``_use_locked``) and every inner
layer offers one.

Uses of a committed victim. From ``_evict_one``'s commit (under the victim's
lifecycle, ``_evicting`` to ``_unloading``) the victim is fixed, but its
eviction takes effect only at the inner unregistration. A use in between must
not be lost: a ``refresh`` that returned having moved the victim to the
most-recent end, followed by its eviction, explains no sequential order (the
spec would have evicted the next least-recent model instead). So ``refresh``
and ``__getitem__`` of an id in ``_unloading`` wait on the LRU condition
(the LRU lock is released while waiting: B15, I14), bounded by
``queue_lock_timeout``, until ``_forget`` (it went: the refresh is a no-op,
getitem raises ModelNotFound) or the rollback (the unload failed, the model
kept its position, I6: the use then applies). The eviction thus takes effect
at one instant, and every use of the victim is ordered before its choice
(rescue) or after its unload (wait). On timeout both raise
:class:`LockTimeout` with nothing changed; a refresh cannot quietly drop the
use, since the model is still registered then. The alternative, hiding the
victim from its commit on, would make a failed ``clear_cache`` show the model
again, which I6 rules out. Only the victim's own uses wait: uses of other ids,
the warm path (which refuses ``_unloading`` and takes the lifecycle, held by
the eviction) and ``__contains__`` never do; ``__contains__`` answers at once
because outer layers ask it with their own LRU lock held, and a read before
the unregistration is linearizable anyway. Leases need nothing: they wait for
the victim's lifecycle. The fast paths pay one set test; ``_forget`` and the
rollback already notify.

Revalidation at commit (I15, tests/core/test_eviction_choice.py). A change
elsewhere between a capacity eviction's choice and its commit (a removal or a
failed load that makes room, another add of the same id taking a slot, an
unpin or a lease given back that frees a less recent model) would otherwise
let an observer see the victim loaded after the change and then evicted
anyway. So the commit (``_evict_one``, under the victim's lifecycle and the
LRU lock, ``_evicting`` to ``_unloading``) re-checks, as at the choice, that
the add that chose it still needs room (registered plus in-flight plus its
own slot over ``max_size``, its id neither reserved nor present) and that the
victim is still the least-recent evictable id. If not, the victim is dropped
unevicted (its marks go, its position stays) and the add's admission loop
chooses again from the current state, so the add still ends with registered
plus reserved within ``max_size`` unless only pinned or leased models remain.
The add's admission therefore takes effect at the commit (or at its
reservation). Memory-pressure victims are not revalidated: the probe's reading
decided them, not the occupancy, and the spec evicts a round's victims as
chosen.

Known open (I15): the window between the commit and the inner unregistration.
Once committed, the victim is fixed; a removal of another id that completes
while the victim's ``clear_cache`` runs does not undo the eviction, although
in a sequential order after that removal the add would have needed no room.
Observers that read the inner registry (``keys``, ``len``,
``describe_models``, ``__contains__``, ``lru_order``) still list the victim in
that window, so a history "commit; remove(b) returns; keys() shows a; a is
gone" remains unexplained. (``__getitem__`` and ``refresh`` of the victim wait
for the unload, so they do not expose it.) Closing it would require hiding
the victim from its commit on, which I6 rules out for a failed unload.

A cold ``add_model`` (1) checks for a warm hit under the id's lifecycle, (2)
with no lifecycle held, evicts for memory pressure, then reserves a capacity
slot, evicting least-recent unpinned unleased models outside the LRU lock or
waiting (bounded by ``queue_lock_timeout``) for in-flight loads, (3) takes the
id's lifecycle again, re-checks for a hit, loads through the inner layer and
inserts the id at the most-recent end. Holding no lifecycle while evicting
means no two adds can each hold one id's lock while waiting for the other's.

Evictions run one at a time: an add that needs room while another add's
victim is still undecided waits for it (bounded) rather than choosing around
it, because if that eviction fails its victim is still the least recent one.
It also waits while a load is registered inside but not yet committed here
(``_committing_locked``; the commit follows without blocking), so every
eviction decision sees each load either in flight or loaded at this layer.
An add short of evictable models waits for in-flight loads *before* evicting
anything, so its timeout changes nothing. What remains visible to a
linearizability check is inherent in counting in-flight loads (semantics 3):
room made for a load still in flight is observable (``keys``, ``lru_order``,
a no-op ``remove``) before that load is, and stays made if the load fails. A
load is in flight at this layer until its LRU commit, including the moment
after the inner registration.

Waits before any change (warm-hit refresh, admission, pins, ``refresh``) are
bounded by ``queue_lock_timeout`` and raise :class:`LockTimeout` with nothing
changed. Bookkeeping *after* a successful load or unload (``_commit_load``,
``_forget``) and rollbacks take the LRU lock without a bound: the mutation has
already happened, so a timeout there could only report a success as a failure
(B16), and the lock is only ever held for short non-blocking steps.

Internal extension points (one step each, for known-bug variants to override):

* ``_warm_hit(resolved_id, request) -> bool`` — under the id's lifecycle: if
  registered, refresh the LRU (and pin) and record a hit through the inner add.
* ``_joined_hit(resolved_id, request) -> bool`` — after admission, under the
  id's lifecycle: the id was loaded by a concurrent add meanwhile; a hit that
  does not move it in the LRU (it takes effect right after that load).
* ``_load(request)`` — the inner ``add_model`` (under the id's lifecycle).
* ``_admit(resolved_id)`` — memory eviction, then reserve a capacity slot.
* ``_evict_for_memory(resolved_id, deadline)`` — measure, evict a round,
  ``gc.collect()`` + ``release_cache()``, re-measure;
  ``_evict_memory_round(resolved_id, deadline) -> int`` — one round of up to 3.
* ``_reserve_or_select_locked(resolved_id, deadline) -> list[str]`` — under the
  LRU lock: reserve a slot (returns []) or choose capacity victims.
* ``_select_capacity_victims_locked(need, leased, exclude) -> list[str]`` and
  ``_select_memory_victims_locked(limit, leased, exclude) -> list[str]``, both
  filtering with ``_evictable_locked(candidate, leased, exclude) -> bool``.
* ``_use_locked(resolved_id)`` — what a warm hit or ``refresh`` does to the LRU.
* ``_evict(victims, cause) -> int`` / ``_evict_one(victim) -> bool`` — unload
  outside the LRU lock, each under the victim's lifecycle; a victim that was
  removed, used, pinned or leased since it was chosen, or whose choice no
  longer holds at its commit, is skipped (False).
* ``_still_chosen_locked(victim) -> bool`` — at the commit, under the LRU
  lock: whether a capacity victim is still needed and still the least-recent
  evictable id (always True for a memory victim).
* ``_rollback_eviction(victims)`` — a failed eviction: unmark, positions kept.
* ``_commit_load(resolved_id, pin)`` — LRU insert after a successful load.
* ``_release_slot(resolved_id)`` — the slot of a failed or warm load.
* ``_forget(resolved_id)`` — LRU bookkeeping after a successful removal.
* ``_measure_free_fraction()`` / ``_release_memory()`` — probe calls; an error
  counts as "no pressure" and is logged and counted.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from types import TracebackType
from typing import Any, ClassVar, TypeVar

import attrs

from modelmanager._validation import (
    abbreviate_ids,
    check_alias,
    check_api_key,
    check_bool,
    check_fraction,
    check_memory_probe,
    check_model_id,
    check_positive_int,
    check_timeout,
)
from modelmanager.decorators.base import ModelManagerDecorator
from modelmanager.errors import InvalidArgument, LockTimeout, ModelNotFound, attach_secondary
from modelmanager.manager import _clear_all
from modelmanager.memory import default_memory_probe
from modelmanager.protocols import ManagerLike, MemoryProbe, Model
from modelmanager.records import ModelDescription
from modelmanager.statistics import Counters, ManagerStatistics

__all__ = ["MEMORY_EVICTIONS_PER_ROUND", "WithFixedSizeCache"]

logger = logging.getLogger(__name__)

MEMORY_EVICTIONS_PER_ROUND = 3
"""Upstream's round size for memory-pressure eviction."""

_T = TypeVar("_T")


@attrs.frozen
class _AddRequest:
    """The arguments of one add, passed between the steps of the add protocol."""

    model_id: str
    api_key: str | None
    model_id_alias: str | None
    pin: bool
    load_kwargs: dict[str, Any]

    @property
    def resolved_id(self) -> str:
        """The key: the alias if given, else the model id."""
        return self.model_id_alias if self.model_id_alias is not None else self.model_id


_FAST_ADD_STEPS = ("_add", "_warm_hit", "_load", "_use_locked")
"""The steps the warm path of ``add_model`` stands in for (see the module doc)."""


class _LRUGuard:
    """The context manager ``_lru_guard`` returns: the LRU lock, bounded (one use)."""

    __slots__ = ("_cache", "_deadline", "_lock")

    def __init__(self, cache: WithFixedSizeCache, deadline: float | None) -> None:
        self._cache = cache
        self._deadline = deadline
        self._lock: Any = None

    def __enter__(self) -> None:
        cache = self._cache
        deadline = self._deadline
        timeout = (
            cache._queue_lock_timeout if deadline is None else max(0.0, deadline - time.monotonic())
        )
        lock = cache._lru_lock
        if not lock.acquire(True, timeout):
            cache._lru_lock_timed_out()
        self._lock = lock

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.release()


def _adoptable(manager: ManagerLike, max_size: int) -> list[str]:
    """The models ``manager`` already holds, to adopt into a new cache (B20).

    Returned in the inner layer's registration order (least recent first).
    Raises :class:`InvalidArgument`, nothing changed, when they do not fit
    ``max_size``: a constructor never unloads anything.
    """
    held = manager.keys()
    if len(held) > max_size:
        raise InvalidArgument(
            f"WithFixedSizeCache(max_size={max_size}) over a manager that already holds "
            f"{len(held)} models ({abbreviate_ids(held)}): remove some from it first "
            f"(manager.remove(id)) or pass max_size >= {len(held)}"
        )
    return held


class WithFixedSizeCache(ModelManagerDecorator):
    """Keeps at most ``max_size`` models loaded, evicting the least recently used.

    A manager that already holds models is adopted: they enter the LRU in
    its registration order (least recent first) when they fit ``max_size``;
    when they do not, the constructor raises :class:`InvalidArgument` and
    changes nothing (remove some first, or raise ``max_size``). Build the
    cache before the inner manager is shared with other threads: a load or
    removal running on it during the constructor is not adopted reliably.

    Thread-safe. Pinned and leased models are never evicted; when only they
    remain, a cold add proceeds over capacity (counted as ``pinned_overflow``
    and logged). With ``memory_free_threshold > 0``, a cold add first evicts
    while ``memory_probe.free_fraction()`` is below the threshold. Waits on the
    LRU lock and for in-flight loads are bounded by ``queue_lock_timeout`` and
    raise :class:`LockTimeout` with nothing changed. ``queue_lock_timeout`` is
    a real number in [0, ``threading.TIMEOUT_MAX``]; anything else raises
    :class:`InvalidArgument` / :class:`InvalidArgumentType` here.
    """

    # Whether this class keeps every step the warm path of add_model stands in
    # for (recomputed for each subclass).
    _fast_add: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._fast_add = all(
            getattr(cls, step) is getattr(WithFixedSizeCache, step) for step in _FAST_ADD_STEPS
        )

    def __init__(
        self,
        manager: ManagerLike,
        max_size: int = 8,
        *,
        memory_probe: MemoryProbe | None = None,
        memory_free_threshold: float = 0.0,
        queue_lock_timeout: float = 5.0,
    ) -> None:
        max_size = check_positive_int(max_size, "max_size")
        threshold = check_fraction(memory_free_threshold, "memory_free_threshold")
        queue_timeout = check_timeout(queue_lock_timeout, "queue_lock_timeout")
        probe = check_memory_probe(memory_probe) if memory_probe is not None else None
        super().__init__(manager)
        adopted = _adoptable(self._manager, max_size)
        self._max_size = max_size
        self._memory_free_threshold = threshold
        self._queue_lock_timeout = queue_timeout
        self._memory_probe: MemoryProbe | None = probe
        self._counters = Counters()
        self._lru_lock = threading.Lock()
        self._lru_changed = threading.Condition(self._lru_lock)
        # Guarded by _lru_lock (see the module docstring).
        self._lru: OrderedDict[str, None] = OrderedDict.fromkeys(adopted)
        self._reserved: dict[str, int] = {}
        self._evicting: set[str] = set()
        # Capacity victims in _evicting -> the id of the add that chose them,
        # for the revalidation at commit (memory victims have no entry).
        self._chosen_for: dict[str, str] = {}
        self._unloading: set[str] = set()
        self._removing: set[str] = set()
        self._pins: set[str] = set()
        # The inner layers' warm hit; None (always the full protocol) when they
        # offer none or this class overrides a step the warm path stands in for.
        hook = getattr(self._manager, "_fast_warm_hit_hook", None)
        self._inner_warm_hit: Callable[[str], bool] | None = (
            hook() if self._fast_add and callable(hook) else None
        )

    # ------------------------------------------------------------ settings

    @property
    def max_size(self) -> int:
        """The capacity, in models."""
        return self._max_size

    @property
    def memory_free_threshold(self) -> float:
        """Free-memory fraction below which cold adds evict (0 disables)."""
        return self._memory_free_threshold

    @property
    def queue_lock_timeout(self) -> float:
        """The bound, in seconds, of LRU-lock and admission waits."""
        return self._queue_lock_timeout

    @property
    def memory_probe(self) -> MemoryProbe:
        """The probe (the default one is created on first use)."""
        if self._memory_probe is None:
            self._memory_probe = default_memory_probe()
        return self._memory_probe

    # ----------------------------------------------------------------- API

    def add_model(
        self,
        model_id: str,
        api_key: str | None = None,
        model_id_alias: str | None = None,
        *,
        pin: bool = False,
        **load_kwargs: Any,
    ) -> None:
        """Load (or hit) ``model_id`` and make it the most recently used.

        ``pin=True`` pins the resolved id atomically with the load (only if
        the add succeeds). Raises what the inner layer raises, the error of a
        failed eviction (I6), or :class:`LockTimeout`; a failed add leaves no
        LRU entry, slot or pin behind (I10).
        """
        if not (
            type(model_id) is str
            and model_id
            and (api_key is None or type(api_key) is str)
            and (model_id_alias is None or (type(model_id_alias) is str and model_id_alias))
            and (pin is False or pin is True)
        ):
            # Only unusual arguments pay for the full checks (documented errors).
            self._check_add_arguments(model_id, api_key, model_id_alias, pin)
        resolved_id = model_id if model_id_alias is None else model_id_alias
        inner_warm_hit = self._inner_warm_hit
        if inner_warm_hit is not None:
            # _fast_warm_hit, inlined: this is the hottest call of the stack.
            lock = self._lru_lock
            if not lock.acquire(False) and not lock.acquire(True, self._queue_lock_timeout):
                self._lru_lock_timed_out()
            try:
                if (
                    resolved_id in self._lru
                    and resolved_id not in self._unloading
                    and inner_warm_hit(resolved_id)
                ):
                    self._lru.move_to_end(resolved_id)
                    if self._evicting:
                        self._evicting.discard(resolved_id)
                    if pin:
                        self._pins.add(resolved_id)
                    return
            finally:
                lock.release()
        self._add(_AddRequest(model_id, api_key, model_id_alias, pin, load_kwargs), None)

    def acquire(
        self,
        model_id: str,
        api_key: str | None = None,
        model_id_alias: str | None = None,
        *,
        pin: bool = False,
        **load_kwargs: Any,
    ) -> AbstractContextManager[Model]:
        """:meth:`add_model` and a lease, atomic for the resolved id (B17)."""
        self._check_add_arguments(model_id, api_key, model_id_alias, pin)
        return self._acquire_context(model_id, api_key, model_id_alias, pin, load_kwargs)

    def remove(self, model_id: str, delete_from_disk: bool = True) -> None:
        """Remove through the inner layer; the LRU entry goes only on success.

        A failed remove leaves the registry and the exact LRU order unchanged
        (I5). Pins survive. Unknown ids are a silent no-op.
        """
        check_model_id(model_id)
        check_bool(delete_from_disk, "delete_from_disk")
        with self._manager.lifecycle(model_id):
            # Marked (before any change) so that, between the inner layer's
            # unregistration and _forget, the id counts as gone here too.
            with self._lru_guard():
                marked = model_id in self._lru
                if marked:
                    self._removing.add(model_id)
            try:
                self._manager.remove(model_id, delete_from_disk=delete_from_disk)
            except BaseException:
                if marked:
                    with self._lru_changed:  # a rollback: unbounded, like _forget
                        self._removing.discard(model_id)
                raise
            self._forget(model_id)

    def clear(self) -> None:
        """Remove every model through this layer, least recently used first.

        Attempts every id; raises an ExceptionGroup of the failures (those
        models stay loaded at their LRU positions). Pins survive.
        """
        order = self.lru_order()
        order += [resolved_id for resolved_id in self.keys() if resolved_id not in order]
        _clear_all(self, order)

    def statistics(self) -> ManagerStatistics:
        """The inner layer's statistics plus this cache's counters."""
        return self._manager.statistics() + self._counters.snapshot()

    # The observers answer from this layer's committed view (module doc): an
    # id is loaded here while it is in the LRU *and* registered in the inner
    # layer, so a cold load shows at its LRU commit and a removal at the inner
    # unregistration, each one instant, together with the LRU position.

    def keys(self) -> list[str]:
        """The resolved ids loaded at this layer (a snapshot, in inner load order)."""
        # Under the LRU lock the LRU cannot change, so the answer is exactly
        # this layer's view at the instant the inner layer took its snapshot.
        with self._lru_lock:  # unbounded: held only for short non-blocking steps
            lru, loaded = self._lru, self._manager.keys()
            return [resolved_id for resolved_id in loaded if resolved_id in lru]

    def __contains__(self, model_id: object) -> bool:
        # Never waits, not even for a committed victim: outer layers ask this
        # with their own LRU lock held, which must not span our unload (B15).
        # Inner layer first, then the LRU: an id is committed to the LRU only
        # while registered inside, so "registered then, listed now" means
        # loaded here at some instant in between (and never a removed id).
        return model_id in self._manager and model_id in self._lru

    def __getitem__(self, model_id: str) -> Model:
        """The loaded model; raises :class:`ModelNotFound` (a KeyError) otherwise.

        For a committed eviction victim, waits (bounded by
        ``queue_lock_timeout``) for its unload to finish: then ModelNotFound if
        it went, the model if the unload failed; :class:`LockTimeout` if it
        does not finish in time. Never a model whose eviction is tearing it down.
        """
        if self._unloading and type(model_id) is str and model_id in self._unloading:
            self._await_unload(model_id)
        model = self._manager[model_id]  # validates; raises ModelNotFound
        if model_id not in self._lru:  # registered but not committed yet (see __contains__)
            raise ModelNotFound(model_id)
        return model

    def __len__(self) -> int:
        with self._lru_lock:  # unbounded, as in keys()
            lru = self._lru
            size = len(self._manager)
            if (
                size == len(lru)
                and not self._reserved
                and not self._removing
                and not self._unloading
            ):
                # No load or removal in flight here: the two views agree (O(1)).
                return size
            loaded = self._manager.keys()
            return sum(1 for resolved_id in loaded if resolved_id in lru)

    def describe_models(self) -> list[ModelDescription]:
        """The inner layer's descriptions of the models loaded at this layer."""
        with self._lru_lock:  # unbounded, as in keys()
            lru = self._lru
            return [
                description
                for description in self._manager.describe_models()
                if description.model_id in lru
            ]

    def pin_model(self, model_id: str) -> None:
        """Pin ``model_id`` (a resolved id, loaded or not): it is never evicted.

        Takes the id's lifecycle, so it waits (bounded by the manager's
        ``lock_timeout``) for an add or remove of that id in progress.
        """
        check_model_id(model_id)
        # Under the id's lifecycle so a pin cannot slip between an eviction's
        # final check and its unload.
        with self._manager.lifecycle(model_id), self._lru_guard():
            self._pins.add(model_id)

    def unpin_model(self, model_id: str) -> None:
        """Unpin ``model_id``; a no-op if it was not pinned."""
        check_model_id(model_id)
        with self._lru_guard():
            self._pins.discard(model_id)

    # Introspection takes no lock: each read is an atomic copy, so it never
    # blocks or times out and is safe from invariant checks at any point of
    # another thread's operation (exact whenever no operation is in flight).

    def pinned(self) -> frozenset[str]:
        """The pinned resolved ids (lock-free copy)."""
        return frozenset(self._pins)

    def lru_order(self) -> list[str]:
        """Resolved ids loaded at this layer, least recently used first (lock-free copy).

        An id whose removal has unregistered it inside but is not yet
        forgotten here is left out, as :meth:`keys` leaves it out.
        """
        order = list(self._lru)
        leaving = self._removing | self._unloading
        if not leaving:
            return order
        manager = self._manager
        return [
            resolved_id
            for resolved_id in order
            if resolved_id not in leaving or resolved_id in manager
        ]

    def in_flight_loads(self) -> int:
        """Cold loads in progress that hold a capacity slot (lock-free).

        Counts reserved ids that are not registered in the inner layer yet, so
        the inner layer's ``len(keys())`` plus ``in_flight_loads()`` is the
        cache's occupancy even in the moment between the inner registration and
        the LRU commit (this layer's own ``keys()`` shows the id only from the
        commit on).
        """
        reserved, lru = list(self._reserved), dict(self._lru)
        return sum(
            1
            for resolved_id in reserved
            if resolved_id not in lru and resolved_id not in self._manager
        )

    def refresh(self, model_id: str) -> None:
        """Mark ``model_id`` most recently used (what an inference does).

        A no-op for an id that is not registered: no phantom entry (B13).
        Never waits for another id's unload (B15). For a committed eviction
        victim, waits (bounded by ``queue_lock_timeout``, without holding the
        LRU lock) for its unload: then a no-op if it went, a use if the unload
        failed. Raises :class:`LockTimeout`, nothing changed, if the LRU lock
        or that unload does not come free in time.
        """
        if type(model_id) is not str or not model_id:
            check_model_id(model_id)
        lock = self._lru_lock
        if not lock.acquire(False) and not lock.acquire(True, self._queue_lock_timeout):
            self._lru_lock_timed_out()
        try:
            if self._unloading and model_id in self._unloading:
                # Its eviction is fixed: this use is ordered after it (module doc).
                self._await_unload_locked(model_id, time.monotonic() + self._queue_lock_timeout)
            self._use_locked(model_id)
        finally:
            lock.release()

    def __repr__(self) -> str:
        lru, pins, in_flight = self.lru_order(), sorted(self.pinned()), self.in_flight_loads()
        return (
            f"{type(self).__name__}(max_size={self._max_size}, lru={lru!r}, pinned={pins!r}, "
            f"in_flight_loads={in_flight}, memory_free_threshold={self._memory_free_threshold:g}, "
            f"manager={self._manager!r})"
        )

    # ------------------------------------------------------------ warm path

    def _fast_warm_hit(self, resolved_id: str, pin: bool) -> bool:
        """The warm path of ``add_model`` (module doc): True if it recorded a hit.

        False: nothing changed; the caller takes the full protocol. Raises
        :class:`LockTimeout` (nothing changed) if the LRU lock stays busy.
        """
        inner_warm_hit = self._inner_warm_hit
        if inner_warm_hit is None:
            return False
        lock = self._lru_lock
        # A non-blocking try first: cheaper than a timed acquire when free.
        if not lock.acquire(False) and not lock.acquire(True, self._queue_lock_timeout):
            self._lru_lock_timed_out()
        try:
            if (
                resolved_id in self._lru
                and resolved_id not in self._unloading
                and inner_warm_hit(resolved_id)
            ):
                # _use_locked, inlined (_fast_add guarantees it is not overridden).
                self._lru.move_to_end(resolved_id)
                if self._evicting:
                    self._evicting.discard(resolved_id)
                if pin:
                    self._pins.add(resolved_id)
                return True
            return False
        finally:
            lock.release()

    def _fast_warm_hit_unpinned(self, resolved_id: str) -> bool:
        return self._fast_warm_hit(resolved_id, False)

    def _fast_warm_hit_hook(self) -> Callable[[str], bool] | None:
        """This cache's warm path, for an outer layer (see ModelManagerDecorator)."""
        if type(self).add_model is not WithFixedSizeCache.add_model:
            return None
        if self._inner_warm_hit is None:
            return None
        return self._fast_warm_hit_unpinned

    def _lru_lock_timed_out(self) -> None:
        self._counters.increment("lock_timeouts")
        raise LockTimeout("the LRU lock", self._queue_lock_timeout)

    # ------------------------------------------------------- the add protocol

    def _check_add_arguments(
        self, model_id: object, api_key: object, model_id_alias: object, pin: object
    ) -> None:
        check_model_id(model_id)
        check_api_key(api_key)
        check_alias(model_id_alias)
        check_bool(pin, "pin")

    def _add(self, request: _AddRequest, after_load: Callable[[str], _T] | None) -> _T | None:
        """The whole add; ``after_load`` runs under the id's lifecycle once loaded."""
        resolved_id = request.resolved_id
        with self._manager.lifecycle(resolved_id):
            if self._warm_hit(resolved_id, request):
                return after_load(resolved_id) if after_load is not None else None
        self._admit(resolved_id)
        holding_slot = True
        try:
            with self._manager.lifecycle(resolved_id):
                if self._joined_hit(resolved_id, request):
                    holding_slot = False
                    self._release_slot(resolved_id)
                else:
                    self._load(request)
                    holding_slot = False
                    self._commit_load(resolved_id, request.pin)
                return after_load(resolved_id) if after_load is not None else None
        except BaseException as error:
            if holding_slot:
                try:
                    self._release_slot(resolved_id)
                except BaseException as secondary:  # keep the first error (I16)
                    attach_secondary(error, secondary, f"releasing the slot of {resolved_id!r}")
            raise

    def _warm_hit(self, resolved_id: str, request: _AddRequest) -> bool:
        if resolved_id not in self._manager:
            return False
        with self._lru_guard():
            self._use_locked(resolved_id)
            if request.pin:
                self._pins.add(resolved_id)
        # Registered and we hold its lifecycle: the inner add is a recorded hit.
        self._load(request)
        return True

    def _joined_hit(self, resolved_id: str, request: _AddRequest) -> bool:
        # Someone else loaded the id after our first check (we shared its slot
        # or raced it). Our add takes effect right after that load, so it does
        # not move the id again now: a late refresh would reorder the LRU
        # behind uses that came after the load (I15).
        if resolved_id not in self._manager:
            return False
        if request.pin:
            with self._lru_guard():
                self._pins.add(resolved_id)
        self._load(request)
        return True

    def _load(self, request: _AddRequest) -> None:
        self._manager.add_model(
            request.model_id, request.api_key, request.model_id_alias, **request.load_kwargs
        )

    def _admit(self, resolved_id: str) -> None:
        deadline = time.monotonic() + self._queue_lock_timeout
        if self._memory_free_threshold > 0:
            self._evict_for_memory(resolved_id, deadline)
        while True:
            with self._lru_guard(deadline):
                victims = self._reserve_or_select_locked(resolved_id, deadline)
                if not victims:
                    return
                self._evicting.update(victims)
                self._chosen_for.update(dict.fromkeys(victims, resolved_id))
            # A victim whose choice no longer holds at its commit is dropped
            # (_still_chosen_locked); the next pass then chooses afresh.
            self._evict(victims, "evictions_capacity")

    def _reserve_or_select_locked(self, resolved_id: str, deadline: float) -> list[str]:
        while True:
            if resolved_id in self._reserved or self._present_locked(resolved_id):
                # Another add of the same id holds a slot, or it got registered
                # meanwhile: share, no extra room needed.
                self._reserve_locked(resolved_id)
                return []
            need = self._occupied_locked() + self._in_flight_locked() + 1 - self._max_size
            if need <= 0:
                self._reserve_locked(resolved_id)
                return []
            if self._evicting or self._unloading or self._committing_locked():
                # Another add's eviction is undecided: whether its victim goes
                # decides ours, so wait for it (evictions run one at a time;
                # choosing around it would not be linearizable if it fails).
                # Likewise a load registered inside but not committed here: it
                # commits without blocking, and evicting before it would make
                # room for a load that is neither in flight nor loaded (I15).
                self._wait_locked(deadline, resolved_id)
                continue
            leased = frozenset(self._manager.lease_counts())
            victims = self._select_capacity_victims_locked(need, leased, resolved_id)
            if len(victims) == need:
                return victims
            # Not enough evictable models. If in-flight loads will change the
            # picture, wait *before* evicting anything, so a timeout leaves the
            # cache as it was (I14).
            if self._in_flight_locked():
                self._wait_locked(deadline, resolved_id)
                continue
            if victims:
                return victims  # evict what can go; the next pass overflows
            self._counters.increment("pinned_overflow")
            logger.warning(
                "admitting model %r over max_size=%d: every registered model is pinned or leased",
                resolved_id,
                self._max_size,
            )
            self._reserve_locked(resolved_id)
            return []

    def _wait_locked(self, deadline: float, resolved_id: str) -> None:
        """Wait (LRU lock held, released while waiting) for a slot or an eviction to change."""
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not self._lru_changed.wait(remaining):
            self._counters.increment("lock_timeouts")
            raise LockTimeout(
                f"a free slot for model {resolved_id!r} (the cache of {self._max_size} "
                "is full of in-flight loads and evictions)",
                self._queue_lock_timeout,
            )

    def _select_capacity_victims_locked(
        self, need: int, leased: frozenset[str], exclude: str
    ) -> list[str]:
        victims: list[str] = []
        for candidate in self._lru:
            if len(victims) == need:
                break
            if self._evictable_locked(candidate, leased, exclude):
                victims.append(candidate)
        return victims

    def _select_memory_victims_locked(
        self, limit: int, leased: frozenset[str], exclude: str
    ) -> list[str]:
        # Pinned, leased and in-progress ids are skipped without using the budget.
        return self._select_capacity_victims_locked(limit, leased, exclude)

    def _evictable_locked(self, candidate: str, leased: frozenset[str], exclude: str) -> bool:
        return (
            candidate != exclude
            and candidate not in self._pins
            and candidate not in leased
            and candidate not in self._evicting
            and candidate not in self._unloading
            # Already unregistered by a removal: evicting it makes no room.
            and (candidate not in self._removing or candidate in self._manager)
        )

    def _evict_for_memory(self, resolved_id: str, deadline: float) -> None:
        while True:
            fraction = self._measure_free_fraction()
            if fraction is None or fraction >= self._memory_free_threshold:
                return
            if self._evict_memory_round(resolved_id, deadline) == 0:
                logger.warning(
                    "memory pressure (free fraction %.3f < %.3f) but no model is evictable",
                    fraction,
                    self._memory_free_threshold,
                )
                return
            self._release_memory()

    def _evict_memory_round(self, resolved_id: str, deadline: float) -> int:
        """Evict up to MEMORY_EVICTIONS_PER_ROUND models; skipped victims use no budget."""
        evicted = 0
        while evicted < MEMORY_EVICTIONS_PER_ROUND:
            with self._lru_guard(deadline):
                # One eviction at a time, and none while a load awaits its commit.
                while self._evicting or self._unloading or self._committing_locked():
                    self._wait_locked(deadline, resolved_id)
                leased = frozenset(self._manager.lease_counts())
                victims = self._select_memory_victims_locked(
                    MEMORY_EVICTIONS_PER_ROUND - evicted, leased, resolved_id
                )
                self._evicting.update(victims)
            if not victims:
                break
            evicted += self._evict(victims, "evictions_memory")
        return evicted

    def _evict(self, victims: list[str], cause: str) -> int:
        """Unload ``victims`` in order, outside the LRU lock; return how many went."""
        evicted = 0
        for index, victim in enumerate(victims):
            try:
                gone = self._evict_one(victim)
            except BaseException as error:
                self._counters.increment("eviction_failures")
                try:
                    self._rollback_eviction(victims[index:])
                except BaseException as secondary:  # keep the eviction's error (I16)
                    attach_secondary(error, secondary, "rolling back a failed eviction")
                raise
            if gone:
                evicted += 1
                self._counters.increment(cause)
            else:
                self._rollback_eviction([victim])
        return evicted

    def _evict_one(self, victim: str) -> bool:
        with self._manager.lifecycle(victim):
            if victim not in self._manager:
                # Removed since it was chosen (or behind the cache's back, on
                # the inner manager): drop any stale entry, choose again.
                self._forget(victim)
                return False
            # Re-check under the victim's lifecycle: pins and leases are only
            # added while holding it, so this answer holds until we are done.
            with self._lru_changed:
                if (
                    victim not in self._evicting  # rescued by a use since chosen
                    or victim in self._pins
                    or self._manager.lease_counts().get(victim, 0)
                ):
                    return False
                self._evicting.discard(victim)
                if not self._still_chosen_locked(victim):
                    self._lru_changed.notify_all()
                    return False
                self._unloading.add(victim)
            self._manager.remove(victim, delete_from_disk=False)
            self._forget(victim)
            return True

    def _still_chosen_locked(self, victim: str) -> bool:
        """At its commit (LRU lock held, ``victim`` no longer in ``_evicting``):
        whether the capacity eviction that chose ``victim`` still needs it.

        True when the add that chose it still needs room (occupancy plus
        in-flight slots plus its own, as at the choice) and
        ``_select_capacity_victims_locked`` would still choose ``victim``, i.e.
        it is still the least-recent evictable id; a memory-pressure victim (no entry in
        ``_chosen_for``) is always still chosen: the probe decided, not the
        occupancy. False drops the victim unevicted; the add chooses again.
        """
        requester = self._chosen_for.pop(victim, None)
        if requester is None:
            return True
        if requester in self._reserved or self._present_locked(requester):
            need = 0  # another add of the same id holds a slot now: it shares it
        else:
            # A removal or a released slot may have made room meanwhile.
            need = self._occupied_locked() + self._in_flight_locked() + 1 - self._max_size
        leased = frozenset(self._manager.lease_counts())
        # The choice made now, through the same selection step (an unpin or a
        # lease given back may have freed a less recent model). Earlier victims
        # of the batch are gone and later ones still marked, so for the base
        # selection this victim must be the least-recent evictable id.
        return victim in self._select_capacity_victims_locked(max(need, 0), leased, requester)

    def _rollback_eviction(self, victims: list[str]) -> None:
        # Victims never left their LRU positions; only the marks go.
        with self._lru_changed:
            for victim in victims:
                self._chosen_for.pop(victim, None)
            self._evicting.difference_update(victims)
            self._unloading.difference_update(victims)
            self._lru_changed.notify_all()

    def _commit_load(self, resolved_id: str, pin: bool) -> None:
        # Commit steps wait without a bound: the model is already loaded, so a
        # timeout here could only report a success as a failure (B16); the LRU
        # lock is only ever held for short, non-blocking bookkeeping.
        with self._lru_changed:
            self._lru[resolved_id] = None
            self._lru.move_to_end(resolved_id)
            self._unreserve_locked(resolved_id)
            if pin:
                self._pins.add(resolved_id)
            self._lru_changed.notify_all()

    def _release_slot(self, resolved_id: str) -> None:
        with self._lru_changed:
            self._unreserve_locked(resolved_id)
            self._lru_changed.notify_all()

    def _forget(self, resolved_id: str) -> None:
        with self._lru_changed:  # unbounded for the same reason as _commit_load
            self._lru.pop(resolved_id, None)
            self._evicting.discard(resolved_id)
            self._chosen_for.pop(resolved_id, None)
            self._unloading.discard(resolved_id)
            self._removing.discard(resolved_id)
            self._lru_changed.notify_all()

    def _measure_free_fraction(self) -> float | None:
        try:
            return self.memory_probe.free_fraction()
        except Exception:
            self._counters.increment("memory_probe_errors")
            logger.warning("memory probe failed; treating it as no pressure", exc_info=True)
            return None

    def _release_memory(self) -> None:
        gc.collect()
        try:
            self.memory_probe.release_cache()
        except Exception:
            self._counters.increment("memory_probe_errors")
            logger.warning("memory probe release_cache() failed", exc_info=True)

    def _use_locked(self, resolved_id: str) -> None:
        """A use: move a registered id to the most-recent end; rescue it if chosen."""
        if resolved_id in self._lru:
            self._lru.move_to_end(resolved_id)
            self._evicting.discard(resolved_id)

    # ------------------------------------------------------------- helpers

    def _reserve_locked(self, resolved_id: str) -> None:
        self._reserved[resolved_id] = self._reserved.get(resolved_id, 0) + 1

    def _unreserve_locked(self, resolved_id: str) -> None:
        remaining = self._reserved[resolved_id] - 1
        if remaining:
            self._reserved[resolved_id] = remaining
        else:
            del self._reserved[resolved_id]

    def _present_locked(self, resolved_id: str) -> bool:
        """Whether ``resolved_id`` is loaded at this layer (LRU lock held)."""
        if resolved_id not in self._lru:
            return False
        if resolved_id in self._removing or resolved_id in self._unloading:
            # Between the inner unregistration and _forget: gone already.
            return resolved_id in self._manager
        return True

    def _occupied_locked(self) -> int:
        """How many models are loaded at this layer (LRU lock held)."""
        occupied = len(self._lru)
        for leaving in (self._removing, self._unloading):
            for resolved_id in leaving:
                if resolved_id in self._lru and resolved_id not in self._manager:
                    occupied -= 1
        return occupied

    def _committing_locked(self) -> bool:
        """Whether a load is registered inside but not committed here yet (LRU lock held)."""
        manager = self._manager
        return any(
            resolved_id not in self._lru and resolved_id in manager
            for resolved_id in self._reserved
        )

    def _await_unload(self, resolved_id: str) -> None:
        """Wait (bounded) until ``resolved_id`` is no committed eviction victim."""
        deadline = time.monotonic() + self._queue_lock_timeout
        with self._lru_guard(deadline):
            self._await_unload_locked(resolved_id, deadline)

    def _await_unload_locked(self, resolved_id: str, deadline: float) -> None:
        """Wait (LRU lock held, released while waiting) for the unload of a committed victim.

        Ends when the eviction's ``_forget`` (it went) or rollback (it stayed)
        has run; both notify. Raises :class:`LockTimeout` at ``deadline``.
        """
        while resolved_id in self._unloading:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or (
                not self._lru_changed.wait(remaining) and resolved_id in self._unloading
            ):
                self._counters.increment("lock_timeouts")
                raise LockTimeout(
                    f"the eviction of model {resolved_id!r} (its unload is in progress)",
                    self._queue_lock_timeout,
                )

    def _in_flight_locked(self) -> int:
        return sum(1 for resolved_id in self._reserved if not self._present_locked(resolved_id))

    def _lru_guard(self, deadline: float | None = None) -> _LRUGuard:
        """Hold the LRU lock, waiting at most until ``deadline`` (or the queue timeout)."""
        return _LRUGuard(self, deadline)

    @contextmanager
    def _acquire_context(
        self,
        model_id: str,
        api_key: str | None,
        model_id_alias: str | None,
        pin: bool,
        load_kwargs: dict[str, Any],
    ) -> Iterator[Model]:
        with ExitStack() as stack:

            def take_lease(resolved_id: str) -> Model:
                return stack.enter_context(self._manager.lease(resolved_id))

            request = _AddRequest(model_id, api_key, model_id_alias, pin, load_kwargs)
            model = self._add(request, take_lease)
            assert model is not None  # take_lease always returns the model
            yield model

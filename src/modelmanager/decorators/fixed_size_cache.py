"""WithFixedSizeCache: a bounded LRU of loaded models, with pins and memory pressure.

This module is the cache's public API, its lock, its warm path and its
calls into the inner layer. The rest is in small modules, one concept each:

* what it keeps (per-id states, slots, LRU order, pins, weights):
  :class:`~modelmanager.decorators._cache_book.CacheBook`, lock-free, used
  through its methods;
* what it decides (occupancy, victims, admission decisions):
  :class:`~modelmanager.decorators._cache_policy.CapacityPolicy`, pure;
* the admission protocol (tickets, eviction batches, waits for room,
  restoration and its deferral, weight estimates, memory rounds):
  :class:`~modelmanager.decorators._cache_admission.AdmissionControl`;
* the evictions (unloading chosen victims outside the lock):
  :class:`~modelmanager.decorators._cache_eviction.Evictions`;
* the lease (one class per cache, its end included):
  :func:`~modelmanager.decorators._cache_lease.lease_function`;
* the validated options and the parts the helpers share:
  :mod:`~modelmanager.decorators._cache_options`.

The design, the interleavings each rule answers and what it gives up are in
``docs/cache-design.md``; the contract is in the docstrings below.

Internal extension points (:attr:`WithFixedSizeCache.EXTENSION_POINTS`: the
private names a known-bug variant may override, one step each; an override
may use the book, its lock and its condition,
:attr:`WithFixedSizeCache.EXTENSION_HELPERS`, and the public API):

* ``_bookkeeping_lock(view)`` — the lock guarding the book (the inner
  manager's state lock when its link offers a :class:`~modelmanager.link.WarmView`).
* ``_add(request, after_load)`` — the whole cold add (the warm path stands in for it).
* ``_warm_hit(resolved_id, request) -> bool`` — under the id's lifecycle: a
  registered id is used (and pinned) and the inner add records the hit.
* ``_joined_hit(resolved_id, request) -> bool`` — after admission: loaded by
  a concurrent add meanwhile; a hit that does not move the id.
* ``_load(request)`` — the inner ``add_model`` (under the id's lifecycle).
* ``_admit(resolved_id)`` — memory eviction, then a capacity slot
  (:meth:`AdmissionControl.admit`).
* ``_admits_over_room_taken(resolved_id) -> bool`` — whether an add whose
  victims went but whose room was taken meanwhile loads over the bound
  ("proceed" and the documented cases) or decides again ("wait", "refuse").
* ``_evict(victims, cause, batch) -> int`` / ``_evict_one(victim) -> bool``
  (which takes the victim's lifecycle without waiting: a busy victim's batch
  is dropped and the admission decides again, I17), and its three steps:
  ``_hold_victim(victim)`` (that take), ``_victim_gone(victim) -> bool`` and
  ``_confirm_victim_locked(victim) -> batch | None`` (the re-check and the
  commit to the unload); :class:`Evictions` runs each through these names.
* ``_rollback_eviction(victims, batch)`` — a failed eviction: its own marks go, positions stay.
* ``_commit_load(resolved_id, pin)`` — list the id after a successful load.
* ``_release_slot(resolved_id)`` — the slot of a failed or joined load;
  ``_notify_slot_freed()`` — its wake-up of the adds waiting for room.
* ``_forget(resolved_id)`` — unlist the id after a successful unload.
* ``_restore(exclude)`` — evict back within the bounds after a lease or pin
  ends or a cold add finishes (:meth:`AdmissionControl.restore`).
* ``book_class`` (a :class:`CacheBook` subclass), ``policy_class`` (a
  :class:`CapacityPolicy` subclass) and ``admission_class`` (an
  :class:`AdmissionControl` subclass): their public methods are the finer
  steps, listed in their modules (an admission's waits, its choice of
  victims, its memory rounds and probe calls).

The warm path of ``add_model`` is written once, by the book:
:meth:`CacheBook.warm_add` makes one function that checks the arguments,
takes the lock and does the warm add, or calls the full protocol
(``_cold_add``). A cache whose class keeps ``add_model`` answers
``cache.add_model`` with that function itself (set on the instance: one call
per warm add, not two); the class's ``add_model``, reached through
``super()``, calls it. It is used only while a subclass
keeps ``_add``, ``_warm_hit`` and ``_load``, and the inner layer's
:meth:`inner_link` offers a warm step: a :class:`~modelmanager.link.WarmView`
(a ``ModelManager`` directly beneath) or a ``warm_hit`` (a manager under
pass-through decorators). A cache offers none (the inherited
:meth:`ModelManagerDecorator.inner_link` drops it, as for any layer that
overrides ``add_model``), so a cache over a cache takes the full protocol,
whose inner add is the inner cache's warm path; it forwards
``try_lifecycle``. A lease takes and gives back the inner lease through its
:class:`~modelmanager.link.LeaseSteps` when the link offers them (else it
wraps the inner ``lease``); ``cache.lease`` is answered, like ``add_model``,
by a function made for the cache and set on the instance while the class
keeps ``lease``.
"""

# Design notes (the essay is docs/cache-design.md):
#
# One lock guards the book. Directly over a ModelManager it is the manager's
# state lock, so a warm add takes one lock, reads the manager's record for
# the id (stored as the LRU payload at commit) and counts the hit there, with
# no call into the manager; over anything else the cache has its own lock and
# calls the inner layer's warm step under it (lock order: this cache's lock,
# then the inner layers'). The lock is never held across a constructor,
# clear_cache, gc.collect or a per-id lock wait (B15); waits on it are bounded
# by queue_lock_timeout except in the bookkeeping after a mutation succeeded
# (_commit_load, _forget, rollbacks), where a timeout could only report a
# success as a failure (B16).
#
# The observers answer from the committed view: an id is loaded here while it
# is listed *and* registered in the inner layer, so a cold load shows at its
# commit and a removal at the inner unregistration, each one instant, together
# with the LRU position. Introspection (pinned, weights, in_flight_loads) takes
# no lock: each read is an atomic copy, so it never blocks or times out and is
# safe from invariant checks at any point of another thread's operation.
#
# An id is loaded at this layer while it is listed in the book and registered
# inside: a cold load takes effect at its commit, a removal at the inner
# unregistration. Evictions are chosen under the lock and unloaded outside it,
# under the victim's lifecycle; a use of a chosen victim rescues it, a use of a
# committed one waits for its unload, and a capacity victim is revalidated at
# its commit (I15). An eviction never waits for a victim's lifecycle while it
# holds choices others wait for: a busy victim drops the batch (I17, B17).

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, ExitStack, contextmanager
from types import TracebackType
from typing import Any, ClassVar, TypeVar

import attrs

from modelmanager._quiet_log import QuietLog
from modelmanager._validation import check_alias, check_api_key, check_bool, check_model_id
from modelmanager.decorators._cache_admission import AdmissionControl, remaining
from modelmanager.decorators._cache_book import CacheBook, IdState
from modelmanager.decorators._cache_eviction import Evictions
from modelmanager.decorators._cache_lease import lease_function
from modelmanager.decorators._cache_options import (
    FULL_POLICIES,
    CacheOptions,
    CacheParts,
    FullPolicy,
    Weigher,
    adoptable,
    weigh,
)
from modelmanager.decorators._cache_policy import MEMORY_EVICTIONS_PER_ROUND, CapacityPolicy
from modelmanager.decorators.base import ModelManagerDecorator
from modelmanager.errors import LockTimeout, ModelNotFound, attach_secondary
from modelmanager.link import InnerLink, WarmHit, WarmView, clear_each
from modelmanager.memory import default_memory_probe
from modelmanager.protocols import ManagerLike, MemoryProbe, Model
from modelmanager.records import ModelDescription
from modelmanager.statistics import Counters, ManagerStatistics

__all__ = [
    "FULL_POLICIES",
    "MEMORY_EVICTIONS_PER_ROUND",
    "FullPolicy",
    "Weigher",
    "WithFixedSizeCache",
]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

_UNLOADING = IdState.UNLOADING


class _NoRecord:
    """The LRU payload when no inner record is shared: never a warm hit by itself."""

    __slots__ = ()
    unloading = True


_LISTED = _NoRecord()


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


_EXTENSION_POINTS = frozenset(
    {
        "_add",
        "_admit",
        "_admits_over_room_taken",
        "_bookkeeping_lock",
        "_commit_load",
        "_confirm_victim_locked",
        "_evict",
        "_evict_one",
        "_forget",
        "_hold_victim",
        "_joined_hit",
        "_load",
        "_notify_slot_freed",
        "_release_slot",
        "_restore",
        "_rollback_eviction",
        "_victim_gone",
        "_warm_hit",
    }
)
"""The cache's extension points (module doc): the private names a known-bug variant
may override, each one step."""


_FAST_ADD_STEPS = ("_add", "_warm_hit", "_load")
"""The steps the warm path of ``add_model`` stands in for (module doc)."""


class _LRUGuard:
    """The context manager ``_lru_guard`` returns: the book's lock, bounded (one use)."""

    __slots__ = ("_cache", "_deadline", "_lock")

    def __init__(self, cache: WithFixedSizeCache, deadline: float | None) -> None:
        self._cache = cache
        self._deadline = deadline
        self._lock: Any = None

    def __enter__(self) -> None:
        cache = self._cache
        deadline = self._deadline
        timeout = cache._queue_lock_timeout if deadline is None else remaining(deadline)
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


def _weigh_or_unload(manager: ManagerLike, weigher: Weigher, resolved_id: str) -> int:
    """The weight of the model just loaded (id's lifecycle held, not committed yet).

    A weigher that raises or answers anything but an int >= 0 fails the
    add: the model is unloaded again (nobody saw it at this layer) and
    the weigher's error (or :class:`InvalidArgument`) raised.
    """
    try:
        return weigh(weigher, resolved_id, manager[resolved_id])
    except BaseException as error:
        try:
            manager.remove(resolved_id, delete_from_disk=False)
        except BaseException as secondary:  # keep the weigher's error (I16)
            attach_secondary(error, secondary, f"unloading {resolved_id!r} again")
        raise


def _keeps(cls: type, name: str, base: type | None = None) -> bool:
    """Whether ``cls`` keeps ``base``'s (default: the cache's) method ``name``."""
    return getattr(cls, name) is getattr(base or WithFixedSizeCache, name)


def _warm_steps(
    link: InnerLink, lock: object, cls: type[WithFixedSizeCache]
) -> tuple[Mapping[str, Any] | None, WarmHit | None, bool]:
    """The warm path's inner steps (module doc): the inner records when the cache
    shares the inner manager's state lock, the inner warm step, and whether
    ``add_model`` takes the warm path at all: only while ``cls`` keeps every step
    it stands in for (``_FAST_ADD_STEPS``)."""
    fast_add = all(_keeps(cls, step) for step in _FAST_ADD_STEPS)
    view = link.warm_view
    records = view.records if view is not None and lock is view.lock else None
    inner_hit = link.warm_hit if records is None and fast_add else None
    return records, inner_hit, fast_add and (records is not None or inner_hit is not None)


def _check_add_arguments(
    model_id: object, api_key: object, model_id_alias: object, pin: object
) -> None:
    """The arguments of an add, checked (the documented errors)."""
    check_model_id(model_id)
    check_api_key(api_key)
    check_alias(model_id_alias)
    check_bool(pin, "pin")


@contextmanager
def _acquired(cache: WithFixedSizeCache, request: _AddRequest) -> Iterator[Model]:
    """:meth:`WithFixedSizeCache.acquire`: the add, and a lease taken under the id's
    lifecycle right after the load (held until the block ends)."""
    with ExitStack() as stack:

        def take_lease(resolved_id: str) -> Model:
            # The cache's own lease (a subclass's ``lease`` is not asked here).
            return stack.enter_context(WithFixedSizeCache.lease(cache, resolved_id))

        model = cache._add(request, take_lease)
        assert model is not None  # take_lease always returns the model
        yield model


class WithFixedSizeCache(ModelManagerDecorator):
    """Keeps at most ``max_size`` models loaded, evicting the least recently used.

    Thread-safe. Two bounds, either or both: ``max_size`` models (None: no
    count bound) and ``max_weight``, the sum of the models' weights as
    ``weigher(resolved_id, model)`` reports them after each load (e.g.
    :func:`~modelmanager.torch_parameter_bytes`). Pinned and leased models
    are never evicted. A manager that already holds models is adopted (they
    enter the LRU in its registration order) when they fit the bounds; else
    the constructor raises :class:`InvalidArgument`, nothing changed. Build
    the cache before the inner manager is shared with other threads.

    An eviction (for capacity or memory) unloads its victim with
    ``clear_cache(delete_from_disk=delete_evicted_from_disk)`` (False, the
    default, keeps the weights on disk; a bool, else
    :class:`InvalidArgumentType`). A full cache (every registered model
    pinned or leased) answers a cold add by ``on_full``:

    * ``"wait"`` (the default): wait, bounded by ``queue_lock_timeout``, for
      a lease to be given back or a model unpinned, then evict and load; on
      timeout raise :class:`LockTimeout` with nothing changed. A thread that
      itself holds a lease through this cache does not wait (it could wait
      for itself, or two such threads for each other): its add proceeds.
    * ``"proceed"``: load over the bound at once.
    * ``"refuse"``: raise :class:`CacheFull` at once, nothing changed.

    A model heavier than ``max_weight`` alone is loaded alone (everything
    evictable goes first) whatever the policy. Under "wait" and "refuse" the
    bound is a safety property: those two cases (and a load heavier than its
    weight estimate, until the restoration at its end) are the only ways
    over it. An add over the bound is counted (``pinned_overflow``) and
    logged once per id per minute; when a lease is given back through this
    cache, a model unpinned or a load committed, the cache evicts
    least-recent evictable models until it is within its bounds again
    (``evictions_restore``).

    With ``memory_free_threshold > 0``, a cold add first evicts while
    ``memory_probe.free_fraction()`` is below the threshold. Waits on the
    LRU lock and for in-flight loads are bounded by ``queue_lock_timeout`` (a
    real number in [0, ``threading.TIMEOUT_MAX``]) and raise
    :class:`LockTimeout` with nothing changed. Bad arguments (also
    ``max_weight`` without ``weigher`` or the reverse, ``max_size=None``
    without ``max_weight``) raise :class:`InvalidArgument` /
    :class:`InvalidArgumentType` here.
    """

    EXTENSION_POINTS: ClassVar[frozenset[str]] = _EXTENSION_POINTS
    """The private names a subclass (a known-bug variant) may override (module doc)."""
    EXTENSION_HELPERS: ClassVar[frozenset[str]] = frozenset({"_book", "_lru_changed", "_lru_guard"})
    """What an override may use besides the public API: the book (``_book``), the
    lock guarding it (``with self._lru_guard():``, bounded) and its condition
    (``with self._lru_changed:``, unbounded, for rollbacks and commits)."""

    book_class: ClassVar[type[CacheBook]] = CacheBook
    """The bookkeeping (an extension point: a subclass may name its own)."""
    policy_class: ClassVar[type[CapacityPolicy]] = CapacityPolicy
    """The capacity policy (an extension point: a subclass may name its own)."""
    admission_class: ClassVar[type[AdmissionControl]] = AdmissionControl
    """The admission protocol (an extension point: a subclass may name its own)."""

    def __init__(
        self,
        manager: ManagerLike,
        max_size: int | None = 8,
        *,
        memory_probe: MemoryProbe | None = None,
        memory_free_threshold: float = 0.0,
        queue_lock_timeout: float = 5.0,
        on_full: FullPolicy = "wait",
        max_weight: int | None = None,
        weigher: Weigher | None = None,
        delete_evicted_from_disk: bool = False,
    ) -> None:
        options = CacheOptions.validated(
            max_size=max_size,
            max_weight=max_weight,
            weigher=weigher,
            on_full=on_full,
            queue_lock_timeout=queue_lock_timeout,
            memory_free_threshold=memory_free_threshold,
            memory_probe=memory_probe,
            delete_evicted_from_disk=delete_evicted_from_disk,
        )
        super().__init__(manager)
        adopted, adopted_weights = adoptable(self._manager, options)
        self._options = options
        self._weigher = options.weigher
        self._queue_lock_timeout = options.queue_lock_timeout
        self._memory_probe: MemoryProbe | None = options.memory_probe
        # Leases held through this cache per thread, counted under "wait" only.
        self._held = threading.local()  # the leases each thread holds (on_full="wait")
        self._counters = Counters()
        # The seam to the inner layer (modelmanager.link), asked once.
        link = self._manager.inner_link()
        view = link.warm_view
        self._lru_lock = self._bookkeeping_lock(view)
        self._lru_changed = threading.Condition(self._lru_lock)
        # Guarded by _lru_lock: the book, and the admission protocol over it.
        self._book = self.book_class()
        parts = CacheParts(self._book, self._manager, self._lru_changed, self._counters, options)
        self._admission = self.admission_class(
            self,
            parts,
            self.policy_class,
            QuietLog(logger),
            dict(zip(adopted, adopted_weights, strict=True)),
            lambda: self.memory_probe,
            lambda: bool(getattr(self._held, "leases", None)),
        )
        self._evictions = Evictions(self, parts, self._admission, link.try_lifecycle)
        # The lease (module doc): one function, made for this cache, answers this
        # instance's lease unless the class overrides lease.
        own_restore = _keeps(type(self), "_restore") and _keeps(
            type(self._admission), "restore", AdmissionControl
        )
        self._lease = lease_function(
            link.lease_steps,  # None: wrap the inner lease
            self._manager.lease,
            self._admission,
            self._held if options.on_full == "wait" else None,
            None if own_restore else self._restore,  # an override: asked at every end
        )
        if _keeps(type(self), "lease"):
            setattr(self, "lease", self._lease)  # noqa: B010 (see add_model's, below)
        # The warm path (module doc): the inner records under the shared lock,
        # else the inner layers' warm step, else none.
        self._records, inner_warm_hit, warm_on = _warm_steps(link, self._lru_lock, type(self))
        # The warm add (module doc): one function, made by the book, answers
        # this instance's add_model unless the class overrides add_model.
        self._warm_add = (
            self._book.warm_add(
                self._lru_lock,
                self._queue_lock_timeout,
                self._lru_lock_timed_out,
                inner_warm_hit,
                self._cold_add,
            )
            if warm_on
            else None
        )
        if self._warm_add is not None and _keeps(type(self), "add_model"):
            # setattr, not vars(self)[...]: on CPython 3.11 materialising the
            # instance __dict__ slows every later attribute read of the cache.
            setattr(self, "add_model", self._warm_add)  # noqa: B010
        records = self._records
        self._book.adopt(
            adopted,
            [records[rid] for rid in adopted] if records is not None else [_LISTED] * len(adopted),
        )
        for resolved_id, weight in zip(adopted, adopted_weights, strict=True):
            if weight:
                self._book.set_weight(resolved_id, weight)

    # ------------------------------------------------------------ settings

    @property
    def max_size(self) -> int | None:
        """The capacity, in models (None: bounded by weight only)."""
        return self._options.max_size

    @property
    def max_weight(self) -> int | None:
        """The capacity, in weight (None: bounded by count only)."""
        return self._options.max_weight

    @property
    def on_full(self) -> FullPolicy:
        """What a cold add does when every model is pinned or leased."""
        return self._options.on_full  # type: ignore[return-value]

    @property
    def memory_free_threshold(self) -> float:
        """Free-memory fraction below which cold adds evict (0 disables)."""
        return self._options.memory_free_threshold

    @property
    def queue_lock_timeout(self) -> float:
        """The bound, in seconds, of LRU-lock and admission waits."""
        return self._queue_lock_timeout

    @property
    def delete_evicted_from_disk(self) -> bool:
        """What an eviction passes as the victim's ``delete_from_disk``."""
        return self._options.delete_evicted_from_disk

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
        warm_add = self._warm_add
        if warm_add is not None:  # reached through super() from a subclass's add_model
            warm_add(model_id, api_key, model_id_alias, pin=pin, **load_kwargs)
        else:
            self._cold_add(model_id, api_key, model_id_alias, pin, load_kwargs)

    def _cold_add(
        self,
        model_id: str,
        api_key: str | None,
        model_id_alias: str | None,
        pin: bool,
        load_kwargs: dict[str, Any],
    ) -> None:
        """``add_model`` past the warm path: the documented argument errors, then
        the full protocol (:meth:`_add`)."""
        _check_add_arguments(model_id, api_key, model_id_alias, pin)
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
        _check_add_arguments(model_id, api_key, model_id_alias, pin)
        return _acquired(self, _AddRequest(model_id, api_key, model_id_alias, pin, load_kwargs))

    def lease(self, model_id: str) -> AbstractContextManager[Model]:
        """The inner layer's lease (see :meth:`ModelManager.lease`), seen by this cache.

        Giving it back wakes adds waiting for room and brings the cache back
        within its bounds (the giving-back thread evicts what must go).
        """
        return self._lease(model_id)

    def remove(self, model_id: str, delete_from_disk: bool = True) -> None:
        """Remove through the inner layer; the LRU entry goes only on success.

        A failed remove leaves the registry and the exact LRU order unchanged
        (I5). Pins survive. Unknown ids are a silent no-op. Either way it ends
        by restoring the bounds (never evicting ``model_id``): a restoration
        that waited for this id's lifecycle may have left that to it.
        """
        check_model_id(model_id)
        check_bool(delete_from_disk, "delete_from_disk")
        try:
            self._remove_locked(model_id, delete_from_disk)
        finally:
            self._restore(exclude=model_id)

    def _remove_locked(self, model_id: str, delete_from_disk: bool) -> None:
        with self._manager.lifecycle(model_id):
            # Marked (before any change) so that, between the inner layer's
            # unregistration and _forget, the id counts as gone here too.
            with self._lru_guard():
                marked = self._book.start_remove(model_id)
            try:
                self._manager.remove(model_id, delete_from_disk=delete_from_disk)
            except BaseException:
                if marked:
                    with self._lru_changed:  # a rollback: unbounded, like _forget
                        self._book.fail_remove(model_id)
                raise
            self._forget(model_id)

    def clear(self) -> None:
        """Remove every model through this layer, least recently used first.

        Attempts every id; raises an ExceptionGroup of the failures (those stay
        loaded at their LRU positions). Pins survive. No restoration in between
        (it could only unload models the clear is about to remove).
        """
        order = self.lru_order()
        order += [resolved_id for resolved_id in self.keys() if resolved_id not in order]
        clear_each(order, lambda resolved_id: self._remove_locked(resolved_id, True))

    def statistics(self) -> ManagerStatistics:
        """The inner layer's statistics plus this cache's counters."""
        return self._manager.statistics() + self._counters.snapshot()

    # The observers answer from this layer's committed view (module doc).

    def keys(self) -> list[str]:
        """The resolved ids loaded at this layer (a snapshot, in inner load order)."""
        # Under the lock the book cannot change, so the answer is exactly this
        # layer's view at the instant the inner layer took its snapshot.
        with self._lru_lock:  # unbounded: held only for short non-blocking steps
            return self._book.listed_among(self._manager.keys())

    def __contains__(self, model_id: object) -> bool:
        # Never waits (B15: outer layers ask holding their own lock). Inner layer
        # first: an id is listed only while registered inside, so "registered
        # then, listed now" means loaded here at some instant in between.
        return model_id in self._manager and model_id in self._book.lru

    def __getitem__(self, model_id: str) -> Model:
        """The loaded model; raises :class:`ModelNotFound` (a KeyError) otherwise.

        For a committed eviction victim, waits (bounded) for its unload: then
        ModelNotFound if it went, the model if the unload failed,
        :class:`LockTimeout` on timeout. Never a model being torn down.
        """
        book = self._book
        if book.marks and type(model_id) is str and book.state(model_id) is _UNLOADING:
            self._await_unload(model_id)
        model = self._manager[model_id]  # validates; raises ModelNotFound
        if model_id not in book.lru:  # registered but not committed yet (see __contains__)
            raise ModelNotFound(model_id)
        return model

    def __len__(self) -> int:
        with self._lru_lock:  # unbounded, as in keys()
            book = self._book
            size = len(self._manager)
            if size == len(book.lru) and not book.slots and not book.marks:
                # No load or removal in flight here: the two views agree (O(1)).
                return size
            return len(book.listed_among(self._manager.keys()))

    def describe_models(self) -> list[ModelDescription]:
        """The inner layer's descriptions of the models loaded at this layer."""
        with self._lru_lock:  # unbounded, as in keys()
            lru = self._book.lru
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
            self._book.pin(model_id)

    def unpin_model(self, model_id: str) -> None:
        """Unpin ``model_id``; a no-op if it was not pinned.

        Wakes adds waiting for room and brings the cache back within its
        bounds (this thread evicts what must go, least recent first).
        """
        check_model_id(model_id)
        with self._lru_guard():
            unpinned = self._book.unpin(model_id)
            if unpinned:
                self._lru_changed.notify_all()
        if unpinned:
            self._restore()

    def weights(self) -> dict[str, int]:
        """The weight of each model loaded at this layer (lock-free copy; {} unweighted)."""
        return dict(self._book.weights)

    # Introspection takes no lock: atomic copies, never blocking (module doc).

    def pinned(self) -> frozenset[str]:
        """The pinned resolved ids (lock-free copy)."""
        return frozenset(self._book.pins)

    def lru_order(self) -> list[str]:
        """Resolved ids loaded at this layer, least recently used first (a snapshot).

        An id whose removal has unregistered it inside but is not yet
        forgotten here is left out, as :meth:`keys` leaves it out. The LRU and
        the marks are copied together under the lock (like :meth:`keys`): two
        lock-free copies could straddle a removal's ``forget`` and list an id
        after its removal returned (I15; found by watching the book's state).
        """
        with self._lru_lock:  # unbounded: held only for short non-blocking steps
            order, leaving = self._book.order_and_leaving()
        manager = self._manager
        return [rid for rid in order if rid not in leaving or rid in manager] if leaving else order

    def in_flight_loads(self) -> int:
        """Cold loads in progress that hold a capacity slot (lock-free).

        An add still making room (its victims not gone yet) is not counted: its
        victims still count as loaded. Counts reserved ids not registered in the
        inner layer yet, so the inner layer's ``len(keys())`` plus this is the
        occupancy even between the inner registration and the LRU commit.
        """
        book = self._book
        reserved, lru, admitting = dict(book.slots), dict(book.lru), self._admission.admitting()
        return sum(
            1
            for resolved_id, held in reserved.items()
            if held > admitting.get(resolved_id, 0)
            and resolved_id not in lru
            and resolved_id not in self._manager
        )

    def refresh(self, model_id: str) -> None:
        """Mark ``model_id`` most recently used (what an inference does).

        A no-op for an unregistered id (no phantom entry, B13). Never waits for
        another id's unload (B15); for a committed eviction victim, waits
        (bounded, lock released) for its unload: then a no-op if it went, a use
        if it failed. Raises :class:`LockTimeout`, nothing changed, on timeout.
        """
        if type(model_id) is not str or not model_id:
            check_model_id(model_id)
        lock = self._lru_lock
        if not lock.acquire(False) and not lock.acquire(True, self._queue_lock_timeout):
            self._lru_lock_timed_out()
        try:
            book = self._book
            if book.marks and book.state(model_id) is _UNLOADING:
                # Its eviction is fixed: this use is ordered after it (module doc).
                self._evictions.await_unload_locked(
                    model_id, time.monotonic() + self._queue_lock_timeout
                )
            book.use(model_id)
        finally:
            lock.release()

    def __repr__(self) -> str:
        lru, pins, in_flight = self.lru_order(), sorted(self.pinned()), self.in_flight_loads()
        return (
            f"{type(self).__name__}(max_size={self.max_size}, lru={lru!r}, pinned={pins!r}, "
            f"in_flight_loads={in_flight}, memory_free_threshold={self.memory_free_threshold:g}, "
            f"manager={self._manager!r})"
        )

    def _bookkeeping_lock(self, view: WarmView | None) -> threading.Lock:
        """The lock guarding the book: the inner manager's state lock if it shares one."""
        return view.lock if view is not None else threading.Lock()

    def _lru_lock_timed_out(self) -> None:
        self._counters.increment("lock_timeouts")
        raise LockTimeout("the LRU lock", self._queue_lock_timeout)

    # ------------------------------------------------------- the add protocol

    def _add(self, request: _AddRequest, after_load: Callable[[str], _T] | None) -> _T | None:
        """The whole add; ``after_load`` runs under the id's lifecycle once loaded.

        (1) Under the id's lifecycle, a warm hit; (2) with no lifecycle held,
        memory eviction, then a capacity slot (evicting least-recent models
        outside the lock, or waiting, bounded, for in-flight loads); (3) under
        the id's lifecycle again, a hit by a concurrent add, or the inner load
        and the commit. Holding no lifecycle while evicting means no two adds
        can each hold one id's lock while waiting for the other's.
        """
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
                    if self._weigher is None:
                        holding_slot = False
                        self._commit_load(resolved_id, request.pin)
                    else:
                        weight = _weigh_or_unload(self._manager, self._weigher, resolved_id)
                        holding_slot = False
                        self._commit_load(resolved_id, request.pin, weight)
                return after_load(resolved_id) if after_load is not None else None
        except BaseException as error:
            if holding_slot:
                try:
                    self._release_slot(resolved_id)
                except BaseException as secondary:  # keep the first error (I16)
                    attach_secondary(error, secondary, f"releasing the slot of {resolved_id!r}")
            raise
        finally:
            # Whatever happened, the cache may be over its bounds now (a load
            # admitted over them, a weight above its estimate, a lease given
            # back during an eviction this add waited for): bring it back,
            # never evicting what this add just loaded.
            self._restore(exclude=resolved_id)

    def _warm_hit(self, resolved_id: str, request: _AddRequest) -> bool:
        if resolved_id not in self._manager:
            return False
        with self._lru_guard():
            book = self._book
            if book.use(resolved_id) and self._records is not None:
                # The record may be a newer one (a reload behind the cache).
                record = self._records.get(resolved_id)
                if record is not None:
                    book.set_payload(resolved_id, record)
            if request.pin:
                book.pin(resolved_id)
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
                self._book.pin(resolved_id)
        self._load(request)
        return True

    def _load(self, request: _AddRequest) -> None:
        self._manager.add_model(
            request.model_id, request.api_key, request.model_id_alias, **request.load_kwargs
        )

    # The admission and eviction steps: each one call of AdmissionControl or
    # Evictions (module doc), so that a variant overrides one step here.

    def _admit(self, resolved_id: str) -> None:
        self._admission.admit(resolved_id)  # its slot held on return

    def _admits_over_room_taken(self, resolved_id: str) -> bool:
        return self._admission.may_overflow(resolved_id)  # else it decides again

    def _restore(self, exclude: str | None = None) -> None:
        self._admission.restore(exclude)  # never raises

    def _evict(self, victims: list[str], cause: str, batch: object) -> int:
        return self._evictions.evict(victims, cause, batch)

    def _evict_one(self, victim: str) -> bool:
        return self._evictions.evict_one(victim)

    def _hold_victim(self, victim: str) -> AbstractContextManager[None]:
        return self._evictions.hold_victim(victim)

    def _victim_gone(self, victim: str) -> bool:
        return victim not in self._manager  # no longer registered (lifecycle held)

    def _confirm_victim_locked(self, victim: str) -> object | None:
        return self._evictions.confirm_victim_locked(victim)

    def _rollback_eviction(self, victims: list[str], batch: object) -> None:
        self._evictions.rollback(victims, batch)

    def _commit_load(self, resolved_id: str, pin: bool, weight: int = 0) -> None:
        # Unbounded: the model is loaded, a timeout could only report a success
        # as a failure (B16).
        with self._lru_changed:
            records = self._records
            payload = records.get(resolved_id, _LISTED) if records is not None else _LISTED
            self._book.commit(resolved_id, payload, weight)
            if self._weigher is not None:
                self._admission.loaded_weight_locked(resolved_id, weight)
            if pin:
                self._book.pin(resolved_id)
            self._lru_changed.notify_all()

    def _release_slot(self, resolved_id: str) -> None:
        with self._lru_changed:
            self._book.release(resolved_id)
            self._notify_slot_freed()

    def _notify_slot_freed(self) -> None:
        # A slot went back (lock held): wake the adds waiting for room.
        self._lru_changed.notify_all()

    def _forget(self, resolved_id: str) -> None:
        with self._lru_changed:  # unbounded for the same reason as _commit_load
            self._book.forget(resolved_id)
            self._lru_changed.notify_all()

    def _await_unload(self, resolved_id: str) -> None:
        """Wait (bounded) until ``resolved_id`` is no committed eviction victim."""
        deadline = time.monotonic() + self._queue_lock_timeout
        with self._lru_guard(deadline):
            self._evictions.await_unload_locked(resolved_id, deadline)

    def _lru_guard(self, deadline: float | None = None) -> _LRUGuard:
        """Hold the book's lock, waiting at most until ``deadline`` (or the queue timeout)."""
        return _LRUGuard(self, deadline)

"""ModelManager: loads models by id, single-flight, with leases.

Every mutation of one id runs under that id's lifecycle lock (see
:mod:`modelmanager.lifecycle`), so add and remove of one id are mutually
exclusive and at most one constructor per id runs at a time (I2). The
constructor runs while the lock is held; a second ``add_model`` of the same id
waits, then finds it loaded (a hit). A failed constructor registers nothing.

Warm paths (a hit, a lease) first try to answer under the lifecycle table's
*state lock* alone, without taking the id's lifecycle: that one short lock
guards the registry (``_models``), each model's ``unloading`` mark and the
lease counts. ``remove`` marks the model ``unloading`` under the state lock
*before* ``clear_cache`` runs and unmarks it if the unload fails; it deletes
the registration under the state lock after success. So "registered and not
unloading", read under the state lock, means a live model at that instant:
the warm answer is linearizable at that moment and can never be given while a
removal of the same id is tearing the model down (B4). A lease additionally
requires that no thread holds the id's lifecycle (``held_locked``), so every
lifecycle holder (a removal draining leases, an eviction checking them) sees a
lease count that can only go down (I13). When a warm path cannot answer, it
falls back to the full protocol under the id's lifecycle.

Internal extension points (:attr:`ModelManager.EXTENSION_POINTS`: the
private names a known-bug variant may override, each one step, so that a
variant changes exactly that step without repeating a core method; each is
called with the id's lifecycle held unless noted):

* ``_resolve(model_id, model_id_alias) -> str`` — the key (alias if given).
* ``_warm_hit(resolved_id) -> bool`` — record a hit if loaded and not being
  unloaded (takes the state lock itself; called first without the lifecycle,
  then again under it).
* ``_lookup_factory(resolved_id)`` — registry lookup.
* ``_construct(factory, model_id, api_key, load_kwargs) -> model``.
* ``_register(resolved_id, canonical_id, model)`` — bookkeeping after a load.
* ``_wait_for_leases(resolved_id)`` — the bounded drain before an unload.
* ``_unload(resolved_id, model, delete_from_disk)`` — ``clear_cache``.
* ``_unregister(resolved_id)`` — bookkeeping after a successful unload.
* ``_take_lease(resolved_id) -> model`` — lease acquisition (warm path under
  the state lock, else under the id's lifecycle).
* ``_give_back_after_raise(resolved_id)`` — the give-back of an ``acquire``'s
  lease when its ``with`` body raised (no lifecycle held).
* ``_lifecycle_table_class`` / ``_counters_class`` — the
  :class:`~modelmanager.lifecycle.LifecycleTable` and
  :class:`~modelmanager.statistics.Counters` (sub)classes ``__init__`` builds.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar

from modelmanager._validation import (
    check_alias,
    check_api_key,
    check_bool,
    check_model,
    check_model_id,
    check_registry,
    check_timeout,
)
from modelmanager.errors import LockTimeout, ModelNotFound
from modelmanager.leases import LeaseTable
from modelmanager.lifecycle import LifecycleTable
from modelmanager.link import InnerLink, LayerLink, LeaseSteps, WarmView, clear_each
from modelmanager.protocols import Model, ModelFactory
from modelmanager.records import LifecycleEntryInfo, ModelDescription
from modelmanager.statistics import Counters, ManagerStatistics

if TYPE_CHECKING:  # annotations only: this module creates no lock itself
    import threading

__all__ = ["ModelManager"]

logger = logging.getLogger(__name__)


class _Loaded:
    """A registered model and its metadata.

    ``hits`` and ``unloading`` change under the lifecycle table's state lock;
    ``unloading`` is set only by the thread holding the id's lifecycle. Once a
    removal succeeded, the record stays ``unloading`` for good (it is no
    longer in the registry), so "not unloading" read under the state lock
    means "registered and live" even for a record kept from earlier.
    """

    __slots__ = ("canonical_id", "hits", "model", "unloading")

    def __init__(self, model: Model, canonical_id: str) -> None:
        self.model = model
        self.canonical_id = canonical_id
        self.hits = 0
        self.unloading = False


class _Lease:
    """The context manager :meth:`ModelManager.lease` returns (one use).

    Entering takes the lease (and yields the model); exiting gives it back.
    """

    __slots__ = ("_entered", "_manager", "_resolved_id")

    def __init__(self, manager: ModelManager, resolved_id: str) -> None:
        self._manager = manager
        self._resolved_id = resolved_id
        self._entered = False

    def __enter__(self) -> Model:
        if self._entered:
            raise RuntimeError("a lease cannot be entered twice")
        model = self._manager._take_lease(self._resolved_id)
        self._entered = True
        return model

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._entered:
            self._entered = False
            self._manager._leases.give_back(self._resolved_id)


class ModelManager:
    """Loads, serves and unloads models by resolved id. Thread-safe.

    ``registry`` maps a resolved id to a factory (``get_model(id)`` or a plain
    Mapping); the factory is called as ``factory(model_id=<canonical id>,
    api_key=api_key, **load_kwargs)``. Every per-id wait is bounded by
    ``lock_timeout`` seconds and raises :class:`LockTimeout` with no state
    changed. ``lock_timeout`` is a real number in [0,
    ``threading.TIMEOUT_MAX``] (0: try once); anything else (negative, NaN,
    infinite, larger, bool, not a number) raises :class:`InvalidArgument` /
    :class:`InvalidArgumentType` here, never an ``OverflowError`` later.
    """

    # Intended lock-free reads, for race detectors (lockstep reads this name; the
    # core does not import it): attribute -> why the unsynchronised read is safe.
    __benign_races__: ClassVar[dict[str, str]] = {
        "_models": (
            "keys, __contains__, __getitem__ and describe_models read it without a lock: "
            "each is one atomic dict operation, and every write happens under the id's "
            "lifecycle lock and the state lock, so a reader sees the id either registered "
            "or not; warm paths recheck it under the state lock"
        ),
    }

    EXTENSION_POINTS: ClassVar[frozenset[str]] = frozenset(
        {
            "_construct",
            "_counters_class",
            "_give_back_after_raise",
            "_lifecycle_table_class",
            "_lookup_factory",
            "_register",
            "_resolve",
            "_take_lease",
            "_unload",
            "_unregister",
            "_wait_for_leases",
            "_warm_hit",
        }
    )
    """The private names a subclass (a known-bug variant) may override (module doc)."""
    EXTENSION_HELPERS: ClassVar[frozenset[str]] = frozenset({"_lifecycle"})
    """What an override may use besides the public API: the lifecycle table
    (its own helpers are :attr:`LifecycleTable.EXTENSION_HELPERS`)."""

    _lifecycle_table_class: ClassVar[type[LifecycleTable]] = LifecycleTable
    _counters_class: ClassVar[type[Counters]] = Counters

    # Set through the _lifecycle setter (see there).
    _table: LifecycleTable
    _state_lock: threading.Lock
    _leases: LeaseTable

    def __init__(self, registry: Any, *, lock_timeout: float = 60.0) -> None:
        self._registry = check_registry(registry)
        self._lock_timeout = check_timeout(lock_timeout, "lock_timeout")
        self._counters = self._counters_class()
        self._lifecycle = self._lifecycle_table_class(
            on_timeout=lambda: self._counters.increment("lock_timeouts")
        )
        # Written only under the id's lifecycle lock *and* the table's state
        # lock (warm paths read it under the latter); single dict operations
        # are atomic, so readers (keys, __contains__, ...) need no lock.
        self._models: dict[str, _Loaded] = {}
        # Warm hits of models no longer registered, guarded by the table's state
        # lock; a registered model's hits are on its record (statistics() sums
        # both), so a warm hit is one increment.
        self._hits_unregistered = 0

    @property
    def _lifecycle(self) -> LifecycleTable:
        """The lifecycle table (replaceable: assigning one re-points the cached locks)."""
        return self._table

    @_lifecycle.setter
    def _lifecycle(self, table: LifecycleTable) -> None:
        # The warm paths read these two on every call; caching them here (and
        # only here) keeps them consistent with the table in use.
        self._table = table
        self._state_lock = table.state_lock
        self._leases = table.leases

    @property
    def lock_timeout(self) -> float:
        """The bound, in seconds, of every per-id wait."""
        return self._lock_timeout

    # ----------------------------------------------------------------- API

    def add_model(
        self,
        model_id: str,
        api_key: str | None = None,
        model_id_alias: str | None = None,
        **load_kwargs: Any,
    ) -> None:
        """Load ``model_id`` under its resolved id unless it is already loaded.

        The resolved id (``model_id_alias`` if given, else ``model_id``) is the
        key; the constructor receives the canonical ``model_id``. Already
        loaded: a hit, nothing else happens. Raises :class:`LockTimeout`
        (nothing changed), :class:`ModelNotFound` (no factory), the
        constructor's own exception unchanged, or :class:`InvalidArgumentType`
        when the factory returned something that is not a model (``None``, no
        ``clear_cache(delete_from_disk=...)``); nothing is registered then.
        """
        if not (
            type(model_id) is str
            and model_id
            and (api_key is None or type(api_key) is str)
            and (model_id_alias is None or (type(model_id_alias) is str and model_id_alias))
        ):
            # Only the unusual cases (str subclasses, bad values) pay for the
            # full checks, which raise the documented errors.
            check_model_id(model_id)
            check_api_key(api_key)
            check_alias(model_id_alias)
        resolved_id = self._resolve(model_id, model_id_alias)
        # The warm path: one state-lock step, linearizable (see the module doc).
        if self._warm_hit(resolved_id):
            return
        with self.lifecycle(resolved_id):
            if self._warm_hit(resolved_id):
                return
            try:
                factory = self._lookup_factory(resolved_id)
                model = self._construct(factory, model_id, api_key, load_kwargs)
                check_model(model, resolved_id)
            except BaseException:
                self._counters.increment("load_failures")
                raise
            self._register(resolved_id, model_id, model)

    def remove(self, model_id: str, delete_from_disk: bool = True) -> None:
        """Unload ``model_id`` (a resolved id); unknown ids are a silent no-op.

        Waits (bounded by ``lock_timeout``) for its leases to be given back,
        then calls ``clear_cache(delete_from_disk=...)`` and unregisters it.
        On :class:`LockTimeout` or a ``clear_cache`` error nothing changed: the
        model stays registered (I5).
        """
        check_model_id(model_id)
        check_bool(delete_from_disk, "delete_from_disk")
        with self.lifecycle(model_id):
            loaded = self._models.get(model_id)
            if loaded is None:
                return
            self._wait_for_leases(model_id)
            state_lock = self._state_lock
            # From here until the outcome is known, warm hits take the slow
            # path (which waits for us): never a hit on a model being torn down.
            with state_lock:
                loaded.unloading = True
            try:
                self._unload(model_id, loaded.model, delete_from_disk)
            except BaseException:
                with state_lock:
                    loaded.unloading = False
                self._counters.increment("removal_failures")
                raise
            self._unregister(model_id)

    def clear(self) -> None:
        """Remove every model; attempts all of them.

        Raises an :class:`ExceptionGroup` of the failures (each failed model
        stays loaded). A BaseException that is not an Exception stops at once.
        """
        clear_each(self.keys(), self.remove)

    def keys(self) -> list[str]:
        """The resolved ids currently loaded (a snapshot)."""
        return list(self._models)

    def __contains__(self, model_id: object) -> bool:
        return isinstance(model_id, str) and model_id in self._models

    def __getitem__(self, model_id: str) -> Model:
        """The loaded model; raises :class:`ModelNotFound` (a KeyError) otherwise."""
        check_model_id(model_id)
        loaded = self._models.get(model_id)
        if loaded is None:
            raise ModelNotFound(model_id)
        return loaded.model

    def __len__(self) -> int:
        return len(self._models)

    def describe_models(self) -> list[ModelDescription]:
        """One :class:`ModelDescription` per loaded model, in load order."""
        leases = self._leases.counts()
        return [
            ModelDescription(
                model_id=resolved_id,
                canonical_model_id=loaded.canonical_id,
                model_class=type(loaded.model).__qualname__,
                hits=loaded.hits,
                leases=leases.get(resolved_id, 0),
            )
            for resolved_id, loaded in list(self._models.items())
        ]

    def lease(self, model_id: str) -> AbstractContextManager[Model]:
        """Context manager yielding the loaded model, kept loaded while held.

        While the lease is held the model is neither removed nor evicted and
        ``clear_cache`` never runs on it (I13). Raises :class:`ModelNotFound`
        on entry if ``model_id`` (a resolved id) is not loaded.
        """
        if type(model_id) is not str or not model_id:
            check_model_id(model_id)
        return _Lease(self, model_id)

    def acquire(
        self,
        model_id: str,
        api_key: str | None = None,
        model_id_alias: str | None = None,
        **load_kwargs: Any,
    ) -> AbstractContextManager[Model]:
        """Load (or hit) and lease in one step, atomic for the resolved id.

        No other thread can unload the model between the load and the lease
        (B17). Raises what :meth:`add_model` raises.
        """
        check_model_id(model_id)
        check_api_key(api_key)
        check_alias(model_id_alias)
        return self._acquire_context(model_id, api_key, model_id_alias, load_kwargs)

    def statistics(self) -> ManagerStatistics:
        """A frozen snapshot of this manager's counters."""
        with self._state_lock:
            hits = self._hits_unregistered + sum(loaded.hits for loaded in self._models.values())
        return self._counters.snapshot(lifecycle_entries=len(self._lifecycle), hits=hits)

    def lifecycle_snapshot(self) -> dict[str, LifecycleEntryInfo]:
        """The lifecycle table's entries (empty when nothing is in flight, I9)."""
        return self._lifecycle.snapshot()

    def lease_counts(self) -> dict[str, int]:
        """Resolved ids with at least one lease, and their counts."""
        return self._leases.counts()

    def lifecycle(self, resolved_id: str) -> AbstractContextManager[None]:
        """Hold ``resolved_id``'s lifecycle lock (re-entrant per thread).

        For decorators whose compound per-id steps must be atomic with this
        manager's own (add, remove, lease). Bounded by ``lock_timeout``;
        raises :class:`LockTimeout` with nothing changed.
        """
        check_model_id(resolved_id, "resolved_id")
        return self._lifecycle.hold(resolved_id, self._lock_timeout)

    def inner_link(self) -> InnerLink:
        """What the layer directly above may use of this manager (:mod:`modelmanager.link`).

        Each part is offered only while this class keeps the code it stands
        in for: ``warm_view`` (the state lock and records) while it keeps
        ``add_model`` and its warm step, ``warm_hit`` (that warm step) while
        it keeps ``add_model``, ``try_lifecycle`` (a non-waiting take of the
        id's lifecycle) while it keeps ``lifecycle``, ``lease_steps`` (a lease's
        take and give-back) while it keeps ``lease``. A subclass's override
        then runs on every call instead.
        """
        cls, base = type(self), ModelManager
        own_add = cls.add_model is base.add_model
        return LayerLink(
            warm_view=(
                WarmView(self._state_lock, self._models)
                if own_add and cls._warm_hit is base._warm_hit
                else None
            ),
            warm_hit=self._warm_hit if own_add else None,
            try_lifecycle=self._try_lifecycle if cls.lifecycle is base.lifecycle else None,
            lease_steps=(
                LeaseSteps(self._take_lease, self._leases.give_back)
                if cls.lease is base.lease
                else None
            ),
        )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(models={self.keys()!r}, leases={self.lease_counts()!r}, "
            f"lifecycle_entries={len(self._lifecycle)}, lock_timeout={self._lock_timeout:g})"
        )

    # ------------------------------------------------------ extension points

    def _resolve(self, model_id: str, model_id_alias: str | None) -> str:
        return model_id_alias if model_id_alias is not None else model_id

    def _try_lifecycle(self, resolved_id: str) -> AbstractContextManager[None] | None:
        return self._lifecycle.try_hold(resolved_id)

    def _warm_hit(self, resolved_id: str) -> bool:
        # acquire/try/finally rather than ``with``: measurably cheaper on the
        # hottest path (CPython 3.11), same semantics.
        lock = self._state_lock
        lock.acquire()
        try:
            loaded = self._models.get(resolved_id)
            if loaded is None or loaded.unloading:
                return False
            loaded.hits += 1
            return True
        finally:
            lock.release()

    def _lookup_factory(self, resolved_id: str) -> ModelFactory:
        if isinstance(self._registry, Mapping):
            try:
                factory: ModelFactory = self._registry[resolved_id]
            except KeyError:
                raise ModelNotFound(
                    resolved_id, f"no factory is registered for model {resolved_id!r}"
                ) from None
            return factory
        found: ModelFactory = self._registry.get_model(resolved_id)
        return found

    def _construct(
        self,
        factory: ModelFactory,
        model_id: str,
        api_key: str | None,
        load_kwargs: dict[str, Any],
    ) -> Model:
        return factory(model_id=model_id, api_key=api_key, **load_kwargs)

    def _register(self, resolved_id: str, canonical_id: str, model: Model) -> None:
        loaded = _Loaded(model, canonical_id)
        with self._state_lock:
            self._models[resolved_id] = loaded
        self._counters.increment("loads")

    def _wait_for_leases(self, resolved_id: str) -> None:
        if not self._leases.wait_until_free(resolved_id, self._lock_timeout):
            self._counters.increment("lock_timeouts")
            raise LockTimeout(
                f"the leases on model {resolved_id!r} to be given back", self._lock_timeout
            )

    def _unload(self, resolved_id: str, model: Model, delete_from_disk: bool) -> None:
        model.clear_cache(delete_from_disk=delete_from_disk)

    def _unregister(self, resolved_id: str) -> None:
        with self._state_lock:
            self._hits_unregistered += self._models.pop(resolved_id).hits
        self._counters.increment("removals")

    def _take_lease(self, resolved_id: str) -> Model:
        table = self._table
        lock = self._state_lock
        lock.acquire()
        try:
            # The warm path: live and nobody holds the id's lifecycle (a holder
            # may be checking or draining its leases). held_locked, inlined;
            # then LeaseTable.take_locked, inlined (one frame less).
            loaded = self._models.get(resolved_id)
            if loaded is not None and not loaded.unloading:
                entry = table._entries.get(resolved_id)
                if entry is None or not entry.depth:
                    counts = self._leases._counts
                    counts[resolved_id] = counts.get(resolved_id, 0) + 1
                    return loaded.model
        finally:
            lock.release()
        with self.lifecycle(resolved_id), self._state_lock:
            loaded = self._models.get(resolved_id)
            if loaded is None or loaded.unloading:
                raise ModelNotFound(resolved_id)
            self._leases.take_locked(resolved_id)
            return loaded.model

    # ------------------------------------------------------------- helpers

    @contextmanager
    def _acquire_context(
        self,
        model_id: str,
        api_key: str | None,
        model_id_alias: str | None,
        load_kwargs: dict[str, Any],
    ) -> Iterator[Model]:
        resolved_id = self._resolve(model_id, model_id_alias)
        with self.lifecycle(resolved_id):
            self.add_model(model_id, api_key, model_id_alias, **load_kwargs)
            model = self._take_lease(resolved_id)
        try:
            yield model
        except BaseException:
            self._give_back_after_raise(resolved_id)
            raise
        self._leases.give_back(resolved_id)

    def _give_back_after_raise(self, resolved_id: str) -> None:
        # The acquire's with body raised (or the context was closed unused).
        self._leases.give_back(resolved_id)

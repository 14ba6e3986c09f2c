"""Deliberately broken variants of the core, one per guarded bug.

Each variant changes exactly one step of the core (through the extension
points the core documents, or a private attribute where it has none) to
reintroduce one upstream bug; ``test_broken_variants.py`` runs the matching
scenario against it and asserts the scenario fails with the invariant's
message. They reach into private attributes on purpose: they exist to prove
the tests can fail, not as examples of how to extend the core.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import attrs

from modelmanager import LockTimeout, Model, ModelManager, WithFixedSizeCache
from modelmanager.lifecycle import LifecycleTable

from .helpers import GATE_TIMEOUT, FakeRegistry
from .scenarios import build_pressure_cache

__all__ = ["BROKEN_CASES", "BrokenCase"]


# ------------------------------------------------------ lifecycle (B1-B3)


class _RetiringTable(LifecycleTable):
    """A table whose holder retires the entry itself, ignoring reservations.

    ``retire_while_holding(failed)`` / ``retire_after_release(failed)`` say
    when the outermost holder deletes the id's entry (upstream's behaviour).
    """

    def retire_while_holding(self, failed: bool) -> bool:
        return False

    def retire_after_release(self, failed: bool) -> bool:
        return False

    def _retire(self, entry: Any) -> None:
        with self._state_lock:
            if self._entries.get(entry.resolved_id) is entry:
                del self._entries[entry.resolved_id]

    @contextmanager
    def hold(self, resolved_id: str, timeout: float) -> Iterator[None]:
        entry = self._reserve(resolved_id)
        try:
            if not entry.lock.acquire(timeout=timeout):
                raise LockTimeout(f"the lifecycle lock of model {resolved_id!r}", timeout)
            failed = True
            outermost = entry.depth == 0
            try:
                entry.depth += 1
                yield
                failed = False
            finally:
                entry.depth -= 1
                if outermost and self.retire_while_holding(failed):
                    self._retire(entry)
                entry.lock.release()
                if outermost and self.retire_after_release(failed):
                    self._retire(entry)
        finally:
            self._release_reservation(entry)


class RetireWhileHolding(_RetiringTable):
    """B1: the holder deletes the id's lock entry before releasing the lock."""

    def retire_while_holding(self, failed: bool) -> bool:
        return True


class RetireOnFailureWhileHolding(_RetiringTable):
    """B2: a failed holder (constructor raised) deletes the entry before releasing."""

    def retire_while_holding(self, failed: bool) -> bool:
        return failed


class RetireAfterRelease(_RetiringTable):
    """B3: "dispose after release": the entry goes right after the lock is released."""

    def retire_after_release(self, failed: bool) -> bool:
        return True


def _manager_with(table: type[LifecycleTable], registry: FakeRegistry) -> ModelManager:
    manager = ModelManager(registry, lock_timeout=GATE_TIMEOUT)
    manager._lifecycle = table()  # type: ignore[attr-defined]
    return manager


def _cache(
    manager: Any,
    max_size: int = 2,
    cls: type[WithFixedSizeCache] = WithFixedSizeCache,
    **kwargs: Any,
) -> WithFixedSizeCache:
    return cls(manager, max_size=max_size, queue_lock_timeout=GATE_TIMEOUT, **kwargs)


# ------------------------------------------------------------------- B4


class UnlockedWarmFastPath(WithFixedSizeCache):
    """B4: "already loaded?" answered without the id's lifecycle (upstream's decorator)."""

    def add_model(
        self,
        model_id: str,
        api_key: str | None = None,
        model_id_alias: str | None = None,
        *,
        pin: bool = False,
        **load_kwargs: Any,
    ) -> None:
        if model_id in self._manager:  # races a removal in progress
            with self._lru_guard():
                self._lru[model_id] = None  # upstream re-appends to the LRU
                self._lru.move_to_end(model_id)
            return
        super().add_model(model_id, api_key, model_id_alias, pin=pin, **load_kwargs)


# -------------------------------------------------------------- B7, B8


class _DequeLRU:
    """Upstream's LRU: a deque with duplicates, behind the OrderedDict calls the core makes."""

    def __init__(self) -> None:
        self._items: deque[str] = deque()

    def append(self, model_id: str) -> None:
        self._items.append(model_id)

    def remove_every(self, model_id: str) -> None:
        while model_id in self._items:
            self._items.remove(model_id)

    def __contains__(self, model_id: object) -> bool:
        return model_id in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._items))

    def __len__(self) -> int:
        return len(self._items)

    def __setitem__(self, model_id: str, value: None) -> None:
        if model_id not in self._items:
            self._items.append(model_id)

    def move_to_end(self, model_id: str) -> None:
        self._items.remove(model_id)
        self._items.append(model_id)

    def pop(self, model_id: str, default: Any = None) -> Any:
        try:
            self._items.remove(model_id)
        except ValueError:
            return default
        return None


class AppendBeforeLoad(WithFixedSizeCache):
    """B7: an unlocked "not loaded" check, then the id is appended before loading."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lru = _DequeLRU()  # type: ignore[assignment]

    def add_model(
        self,
        model_id: str,
        api_key: str | None = None,
        model_id_alias: str | None = None,
        *,
        pin: bool = False,
        **load_kwargs: Any,
    ) -> None:
        if model_id not in self._manager:
            with self._lru_guard():
                self._lru.append(model_id)  # type: ignore[attr-defined]
        super().add_model(model_id, api_key, model_id_alias, pin=pin, **load_kwargs)

    def _commit_load(self, resolved_id: str, pin: bool) -> None:
        with self._lru_changed:  # the id was appended before the load
            self._unreserve_locked(resolved_id)
            if pin:
                self._pins.add(resolved_id)
            self._lru_changed.notify_all()

    def _release_slot(self, resolved_id: str) -> None:
        super()._release_slot(resolved_id)
        with self._lru_guard():
            self._drop_after_failure(resolved_id)

    def _drop_after_failure(self, resolved_id: str) -> None:
        self._lru.pop(resolved_id, None)  # one occurrence: our own append


class RemoveEveryOccurrenceOnFailure(AppendBeforeLoad):
    """B8: the failure path removes every occurrence, a concurrent success's included."""

    def _drop_after_failure(self, resolved_id: str) -> None:
        self._lru.remove_every(resolved_id)  # type: ignore[attr-defined]


# ------------------------------------------------------------------ B14


class NoInFlightAccounting(WithFixedSizeCache):
    """B14: admission compares only registered models against max_size."""

    def _in_flight_locked(self) -> int:
        return 0


# ------------------------------------------------------------------ B15


class LockHeldAcrossEviction(WithFixedSizeCache):
    """B15: the queue lock inference calls take is held across the unloads.

    Modelled as a second lock that eviction holds while unloading and that
    every LRU-touching call takes first (upstream holds one lock for both).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._queue_lock = threading.Lock()

    def _queue(self) -> AbstractContextManager[None]:
        @contextmanager
        def held() -> Iterator[None]:
            if not self._queue_lock.acquire(timeout=self._queue_lock_timeout):
                raise LockTimeout("the LRU lock", self._queue_lock_timeout)
            try:
                yield
            finally:
                self._queue_lock.release()

        return held()

    def _evict(self, victims: list[str], cause: str) -> int:
        with self._queue():
            return super()._evict(victims, cause)

    def refresh(self, model_id: str) -> None:
        with self._queue():
            super().refresh(model_id)

    def lease(self, model_id: str) -> AbstractContextManager[Model]:
        with self._queue():
            pass
        return super().lease(model_id)

    def lru_order(self) -> list[str]:
        with self._queue():
            return super().lru_order()


# ------------------------------------------------------------------ B17


class NoLeaseDrain(ModelManager):
    """B17: remove unloads without waiting for leases to be given back."""

    def _wait_for_leases(self, resolved_id: str) -> None:
        return None


class EvictionIgnoresLeases(WithFixedSizeCache):
    """B17: eviction picks leased models and unloads them (waiting for the lease)."""

    def _evictable_locked(self, candidate: str, leased: frozenset[str], exclude: str) -> bool:
        return super()._evictable_locked(candidate, frozenset(), exclude)

    def _evict_one(self, victim: str) -> bool:
        with self._manager.lifecycle(victim):
            if victim not in self._manager or victim in self._pins:
                return False
            self._manager.remove(victim, delete_from_disk=False)
            self._forget(victim)
            return True


class NonAtomicAcquire(WithFixedSizeCache):
    """B17: acquire() is add_model() then lease(), with a window in between."""

    between_add_and_lease: Callable[[], object] = staticmethod(lambda: None)

    def acquire(
        self,
        model_id: str,
        api_key: str | None = None,
        model_id_alias: str | None = None,
        *,
        pin: bool = False,
        **load_kwargs: Any,
    ) -> AbstractContextManager[Model]:
        @contextmanager
        def acquired() -> Iterator[Model]:
            self.add_model(model_id, api_key, model_id_alias, pin=pin, **load_kwargs)
            self.between_add_and_lease()
            with self.lease(model_id_alias or model_id) as model:
                yield model

        return acquired()


Builder = Callable[[FakeRegistry], Any]


def _plain(registry: FakeRegistry) -> ModelManager:
    return ModelManager(registry, lock_timeout=GATE_TIMEOUT)


@attrs.frozen
class BrokenCase:
    """A scenario run against a variant with ``bug``; it must fail matching ``message``."""

    scenario: str
    bug: str
    build: Builder
    message: str

    @property
    def id(self) -> str:
        return f"{self.bug}:{self.scenario}"


BROKEN_CASES: tuple[BrokenCase, ...] = (
    BrokenCase(
        "B1-remove-add", "B1", lambda r: _manager_with(RetireWhileHolding, r), "two constructors"
    ),
    BrokenCase(
        "B1-remove-add", "B3", lambda r: _manager_with(RetireAfterRelease, r), "two constructors"
    ),
    BrokenCase(
        "B2-failed-constructor",
        "B2",
        lambda r: _manager_with(RetireOnFailureWhileHolding, r),
        "two constructors",
    ),
    BrokenCase(
        "B2-failed-constructor",
        "B3",
        lambda r: _manager_with(RetireAfterRelease, r),
        "two constructors",
    ),
    BrokenCase(
        "B4-add-during-removal",
        "B4",
        lambda r: _cache(_plain(r), cls=UnlockedWarmFastPath),
        "I3 violated",
    ),
    BrokenCase(
        "B7-concurrent-cold-adds",
        "B7",
        lambda r: _cache(_plain(r), cls=AppendBeforeLoad),
        "duplicates",
    ),
    BrokenCase(
        "B8-failed-and-successful-add",
        "B8",
        lambda r: _cache(_plain(r), cls=RemoveEveryOccurrenceOnFailure),
        "differs from registered",
    ),
    BrokenCase(
        "B14-admission-in-flight",
        "B14",
        lambda r: _cache(_plain(r), cls=NoInFlightAccounting),
        r"\(I11\)",
    ),
    BrokenCase(
        "B14-admission-waits-for-in-flight",
        "B14",
        lambda r: _cache(_plain(r), max_size=1, cls=NoInFlightAccounting),
        r"\(I11\)",
    ),
    BrokenCase(
        "B15-refresh-during-eviction",
        "B15",
        # A short queue timeout so the blocked refresh gives up quickly.
        lambda r: LockHeldAcrossEviction(_plain(r), max_size=2, queue_lock_timeout=0.5),
        "waited on the LRU lock",
    ),
    BrokenCase(
        "B15-refresh-during-memory-eviction",
        "B15",
        lambda r: build_pressure_cache(r, cls=LockHeldAcrossEviction, queue_lock_timeout=0.5),
        "waited on the LRU lock",
    ),
    BrokenCase(
        "B17-remove-waits-for-lease",
        "B17",
        lambda r: _cache(NoLeaseDrain(r, lock_timeout=GATE_TIMEOUT)),
        "I13 violated",
    ),
    BrokenCase(
        "B17-eviction-skips-leased",
        "B17",
        lambda r: _cache(_plain(r), max_size=1, cls=EvictionIgnoresLeases),
        "waited for the lease",
    ),
    BrokenCase(
        "B17-acquire-is-atomic",
        "B17",
        lambda r: _cache(_plain(r), max_size=1, cls=NonAtomicAcquire),
        "evicted between acquire's load and its lease",
    ),
)
"""Every scenario of ``scenarios.SCENARIOS`` with at least one variant it must catch."""

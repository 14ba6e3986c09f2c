"""Known-bug variants the real-thread scenarios must catch: the catalogue's own.

Each case runs one real-thread scenario (``scenarios.py``) against a
known-bug variant of the core and expects it to fail with the message of
the invariant the scenario guards.  The variants are the bug catalogue's
(`models_spec.catalogue`: one module per bug under ``models_spec/bugs/``),
built through their adapters with this package's fakes, so the lockstep
suite and these real-thread tests judge the same broken code.  The two B17
classes below have no catalogue counterpart yet (they put the bug back on
the eviction path and in ``acquire``, which the catalogue's B17 scenario
does not exercise); they reach into private attributes on purpose.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import attrs

from modelmanager import Model, ModelManager, WithFixedSizeCache
from models_spec.catalogue import load

from .helpers import GATE_TIMEOUT, FakeRegistry
from .scenarios import PressureOnce

__all__ = ["BROKEN_CASES", "BrokenCase"]


def _variant(
    name: str,
    *,
    max_size: int = 2,
    queue_lock_timeout: float = GATE_TIMEOUT,
    pressure: bool = False,
) -> Callable[[FakeRegistry], Any]:
    """A builder of the catalogue variant `name` over a real-thread registry."""
    entry = load().variant(name)

    def build(registry: FakeRegistry) -> Any:
        return entry.adapter().build(
            registry,
            max_size=3 if pressure else max_size,
            memory_probe=PressureOnce() if pressure else None,
            lock_timeout=GATE_TIMEOUT,
            queue_lock_timeout=queue_lock_timeout,
        )

    return build


def _cache(
    manager: Any,
    max_size: int = 2,
    cls: type[WithFixedSizeCache] = WithFixedSizeCache,
    **kwargs: Any,
) -> WithFixedSizeCache:
    return cls(manager, max_size=max_size, queue_lock_timeout=GATE_TIMEOUT, **kwargs)


# ------------------------------------------------------------------ B17


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
    BrokenCase("B1-remove-add", "B1", _variant("variant-B1-generation-split"), "two constructors"),
    BrokenCase(
        "B1-remove-add", "B3", _variant("variant-B3-dispose-after-release"), "two constructors"
    ),
    BrokenCase(
        "B2-failed-constructor",
        "B2",
        _variant("variant-B2-constructor-failure-split"),
        "two constructors",
    ),
    BrokenCase(
        "B2-failed-constructor",
        "B3",
        _variant("variant-B3-dispose-after-release"),
        "two constructors",
    ),
    BrokenCase("B4-add-during-removal", "B4", _variant("variant-B4-warm-fast-path"), "I3 violated"),
    BrokenCase("B7-concurrent-cold-adds", "B7", _variant("variant-B7-duplicate-lru"), "duplicates"),
    BrokenCase(
        "B8-failed-and-successful-add",
        "B8",
        _variant("variant-B8-remove-every-occurrence"),
        "differs from registered",
    ),
    BrokenCase(
        "B14-admission-in-flight",
        "B14",
        _variant("variant-B14-admission-overshoot"),
        r"\(I11\)",
    ),
    BrokenCase(
        "B14-admission-waits-for-in-flight",
        "B14",
        _variant("variant-B14-admission-overshoot", max_size=1),
        r"\(I11\)",
    ),
    BrokenCase(
        "B15-refresh-during-eviction",
        "B15",
        # A short queue timeout so the blocked refresh gives up quickly.
        _variant("variant-B15-queue-lock-across-unload", queue_lock_timeout=0.5),
        "waited on the LRU lock",
    ),
    BrokenCase(
        "B15-refresh-during-memory-eviction",
        "B15",
        _variant("variant-B15-queue-lock-across-unload", queue_lock_timeout=0.5, pressure=True),
        "waited on the LRU lock",
    ),
    BrokenCase(
        "B17-remove-waits-for-lease",
        "B17",
        _variant("variant-B17-unload-under-lease"),
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

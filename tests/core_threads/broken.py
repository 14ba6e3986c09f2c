"""Known-bug variants the real-thread scenarios must catch: the catalogue's own.

Each case runs one real-thread scenario (``scenarios.py``) against a
known-bug variant of the core and expects it to fail with the message of
the invariant the scenario guards.  The variants are the bug catalogue's
(`models_spec._harness.catalogue`: one module per bug under ``models_spec/bugs/``),
built through their adapters with this package's fakes, so the lockstep
suite and these real-thread tests judge the same broken code; a variant
whose window real threads cannot reach with gates gets a second variant in
its bug module (B8's ``remove-every-occurrence``) rather than a copy here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from models_spec._harness.catalogue import load

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


Builder = Callable[[FakeRegistry], Any]


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
        _variant("variant-B17-eviction-ignores-leases", max_size=1),
        "waited for the lease",
    ),
    BrokenCase(
        "B17-acquire-is-atomic",
        "B17",
        _variant("variant-B17-non-atomic-acquire", max_size=1),
        "evicted between acquire's load and its lease",
    ),
)
"""Every scenario of ``scenarios.SCENARIOS`` with at least one variant it must catch."""

"""A stand-in stack and adapter whose snapshot a test sets (driver unit tests)."""

from __future__ import annotations

from typing import Any

import attrs

from models_spec.adapter import CAPABILITIES, Snapshot


@attrs.define
class ScriptedStack:
    """A stand-in stack: the test sets the snapshot and the statistics it reports."""

    state: Snapshot
    pinned_overflow: int = 0

    def statistics(self) -> Any:
        return attrs.make_class("Stats", ["pinned_overflow"])(self.pinned_overflow)


@attrs.define
class ScriptedAdapter:
    """Snapshots whatever the stack's ``state`` is (a fresh, equal object each time)."""

    name: str = "scripted"
    capabilities: frozenset[str] = CAPABILITIES

    def build(self, registry: Any, **options: Any) -> Any:  # pragma: no cover - unused
        raise NotImplementedError

    def snapshot(self, stack: ScriptedStack) -> Snapshot:
        return attrs.evolve(stack.state)

    def patch_modules(self) -> tuple[()]:  # pragma: no cover - unused
        return ()

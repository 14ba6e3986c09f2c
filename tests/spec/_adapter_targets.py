"""Targets for load_adapter tests (imported by module path)."""

from __future__ import annotations

from models_spec.adapter import CoreAdapter


def good_factory() -> CoreAdapter:
    return CoreAdapter(1)


GOOD_INSTANCE = CoreAdapter(0)


class NotAnAdapter:
    name = "nope"
    capabilities = frozenset({"lru", "teleport"})


def failing_factory() -> CoreAdapter:
    raise RuntimeError("boom")

"""Module-level adapter factories for the suite's tests (importable by worker processes)."""

from __future__ import annotations

from models_spec.adapter import CoreAdapter


def never_breaks() -> CoreAdapter:
    """A "variant" that is really the core: no scenario can catch it."""
    return CoreAdapter(0, name="fake-variant-that-never-breaks")


def broken_factory() -> CoreAdapter:
    """A factory that raises (for --target rejection)."""
    raise RuntimeError("this factory is broken on purpose")


NOT_AN_ADAPTER = object()

"""Module targets for the tests of ``--target module`` (imported by name)."""

from __future__ import annotations

from models_spec.adapter import BareManagerAdapter, TargetUnavailable

ADAPTERS = ("first", "second")


def first() -> BareManagerAdapter:
    """A listed adapter."""
    return BareManagerAdapter()


def second() -> BareManagerAdapter:
    """Another listed adapter, under its own name."""
    return BareManagerAdapter(name="core-bare-manager-again")


def unavailable() -> BareManagerAdapter:
    """A factory whose implementation is not installed."""
    raise TargetUnavailable("fake target: not installed; install it with: pip install nothing")

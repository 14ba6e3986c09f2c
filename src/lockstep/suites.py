"""Suites: what ``lockstep check`` runs, discovered through the ``lockstep.suites`` group.

A project registers a suite under the entry-point group ``lockstep.suites``::

    [project.entry-points."lockstep.suites"]
    mysuite = "mypackage.checks:SUITE"

The entry point names an object with ``run(options) -> int`` (a class is instantiated
first). ``lockstep`` itself imports nothing from any suite's package.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Protocol, runtime_checkable

import attrs

__all__ = ["ENTRY_POINT_GROUP", "LoadedSuite", "Suite", "SuiteOptions", "discover_suites"]

ENTRY_POINT_GROUP = "lockstep.suites"


@attrs.frozen
class SuiteOptions:
    """Options ``lockstep check`` passes to every suite (None: the suite's default).

    ``budget``: executions per scenario; ``seed``; ``strategy``: a strategy name;
    ``jobs``: parallel worker processes; ``output_dir``: where to save failing
    schedules and reports; ``target``: "module:factory" naming an implementation to
    check instead of the suite's default one.
    """

    budget: int | None = None
    seed: int | None = None
    strategy: str | None = None
    jobs: int = 1
    output_dir: Path | None = None
    target: str | None = None


@runtime_checkable
class Suite(Protocol):
    """A check suite: ``run`` returns a process exit code (0 = every check passed)."""

    def run(self, options: SuiteOptions) -> int:
        """Run every check with ``options``; print progress and failures; return 0 or not."""
        ...


@attrs.frozen
class LoadedSuite:
    """A discovered entry point: the suite, or the error that prevented loading it."""

    name: str
    value: str
    suite: Suite | None
    error: str | None


def _load(loader: Callable[[], object]) -> Suite:
    obj = loader()
    if isinstance(obj, type):
        obj = obj()
    if not isinstance(obj, Suite):
        raise TypeError(f"{obj!r} has no run(options) -> int method")
    return obj


def discover_suites() -> list[LoadedSuite]:
    """Every entry point of the group, sorted by name, loaded (errors captured, not raised)."""
    found: list[LoadedSuite] = []
    for entry in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        try:
            suite = _load(entry.load)
        except Exception as exc:  # a broken suite must not hide the others
            found.append(LoadedSuite(entry.name, entry.value, None, f"{type(exc).__name__}: {exc}"))
        else:
            found.append(LoadedSuite(entry.name, entry.value, suite, None))
    return found

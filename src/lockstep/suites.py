"""Suites: what ``lockstep check`` runs, discovered through the ``lockstep.suites`` group.

A project registers a suite under the entry-point group ``lockstep.suites``::

    [project.entry-points."lockstep.suites"]
    mysuite = "mypackage.checks:SUITE"

The entry point names an object with ``run(options) -> int`` (a class is instantiated
first). ``lockstep`` itself imports nothing from any suite's package.

What ``lockstep check`` gives a suite (:class:`SuiteOptions`) and what it expects back:

* an exit code (``EXIT_OK`` 0: every case passed; ``EXIT_FAILURE`` 1: a case failed or
  errored; ``EXIT_USAGE`` 2: the suite could not run what it was asked to;
  ``EXIT_INTERRUPTED`` 130: interrupted, with what was finished reported);
* one :class:`CaseResult` per case, handed to ``options.reporter`` as soon as the case
  is finished (``start`` first, with the number of cases): ``lockstep check`` turns
  them into its progress display, ``--junit-xml`` and ``--json``;
* only the cases of ``options.shard`` when one is given (:meth:`Shard.select` over the
  suite's deterministic case list), so CI jobs can split a run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, Final, Literal, Protocol, TypeVar, runtime_checkable

import attrs

from lockstep._settings import Settings
from lockstep.errors import InvalidArgumentType

__all__ = [
    "ENTRY_POINT_GROUP",
    "EXIT_FAILURE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "CaseResult",
    "LoadedSuite",
    "Reporter",
    "Shard",
    "Suite",
    "SuiteOptions",
    "discover_suites",
]

ENTRY_POINT_GROUP: Final = "lockstep.suites"

EXIT_OK: Final = 0
EXIT_FAILURE: Final = 1
EXIT_USAGE: Final = 2
EXIT_INTERRUPTED: Final = 130

_T = TypeVar("_T")
_SHARD = re.compile(r"([1-9][0-9]*)/([1-9][0-9]*)")

Outcome = Literal["passed", "failed", "error", "skipped"]
_OUTCOMES: Final = ("passed", "failed", "error", "skipped")


@attrs.frozen
class Shard:
    """Shard ``index`` of ``total`` (1-based): a deterministic slice of a case list.

    Case ``i`` (0-based position in the suite's deterministic list) belongs to shard
    ``i % total + 1``: the shards are disjoint, their union is the whole list, and
    neighbouring cases (often of similar cost) are spread over the shards.
    """

    index: int
    total: int

    def __attrs_post_init__(self) -> None:
        for name in ("index", "total"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"shard {name} must be an int >= 1 (got {value!r})")
        if self.index > self.total:
            raise ValueError(f"shard {self.index}/{self.total}: K must be between 1 and N")

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"K/N"`` with 1 <= K <= N; raises ValueError saying what is expected."""
        match = _SHARD.fullmatch(text.strip()) if isinstance(text, str) else None
        if match is None:
            raise ValueError(f"a shard looks like K/N, e.g. 1/4 (got {str(text)[:40]!r})")
        return cls(int(match.group(1)), int(match.group(2)))

    def owns(self, position: int) -> bool:
        """Whether the case at 0-based ``position`` belongs to this shard."""
        return position % self.total == self.index - 1

    def select(self, items: Sequence[_T]) -> list[_T]:
        """The items of this shard, in their order."""
        return [item for position, item in enumerate(items) if self.owns(position)]

    def __str__(self) -> str:
        return f"{self.index}/{self.total}"


def _outcome(instance: object, attribute: object, value: object) -> None:
    if value not in _OUTCOMES:
        raise ValueError(f"outcome must be one of {_OUTCOMES} (got {value!r})")


@attrs.frozen
class CaseResult:
    """One finished case of a suite (one testcase in ``--junit-xml``, one row in ``--json``).

    ``id``: unique within the suite; ``group``: what it belongs to (the JUnit
    classname); ``name``: the case's short name; ``outcome``: passed, failed, error or
    skipped; ``verdict``: the suite's own word for it (e.g. CAUGHT, which passes);
    ``summary``: one line saying what happened; ``details``: the full explanation of a
    failure or error (message, swimlanes, paths, replay command); ``replay``: the
    command that reproduces it; ``artifacts``: files written for it; ``executions``,
    ``elapsed`` seconds; ``fields``: the suite's own JSON-ready row.
    """

    id: str
    group: str
    name: str
    outcome: Outcome = attrs.field(validator=_outcome)
    verdict: str = ""
    summary: str = ""
    details: str = ""
    replay: str | None = None
    artifacts: tuple[str, ...] = ()
    executions: int = 0
    elapsed: float = 0.0
    fields: Mapping[str, Any] = attrs.field(factory=dict)


@runtime_checkable
class Reporter(Protocol):
    """Receives a suite's progress (``lockstep check`` provides one; calls are serial)."""

    def start(self, suite: str, total: int) -> None:
        """``suite`` is about to run ``total`` cases (after sharding)."""
        ...

    def case(self, suite: str, result: CaseResult) -> None:
        """A case of ``suite`` finished."""
        ...


class _NoReporter:
    def start(self, suite: str, total: int) -> None:
        """Ignore."""

    def case(self, suite: str, result: CaseResult) -> None:
        """Ignore."""


def _optional_settings(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and not isinstance(value, Settings):
        raise InvalidArgumentType(f"settings must be a lockstep.Settings or None, got {value!r}")


@attrs.frozen
class SuiteOptions:
    """Options ``lockstep check`` passes to every suite (None: the suite's default).

    ``budget``: executions per scenario; ``seed``; ``strategy``: a strategy name;
    ``jobs``: parallel worker processes; ``output_dir``: the directory of *this run*
    where failing schedules and reports go (``lockstep check`` gives every run its own,
    so reports of earlier runs never mix in); ``target``: "module:factory" naming an
    implementation to check instead of the suite's default one; ``shard``: run only
    this shard of the cases; ``quiet``: print only failures and the summary;
    ``verbose``: also print each failure's detail in the checker's own terms (a suite's
    internal encodings, which the default report leaves out);
    ``settings``: the :class:`lockstep.Settings` every exploration of the suite starts
    from (``lockstep check`` builds them from its flags: ``--stall-diagnosis``,
    ``--backend``; None: lockstep's defaults); the suite sets the fields its plan
    decides (budget per cell, shrinking, ...) with ``settings.replace``;
    ``reporter``: where finished cases go.
    """

    budget: int | None = None
    seed: int | None = None
    strategy: str | None = None
    jobs: int = 1
    output_dir: Path | None = None
    target: str | None = None
    shard: Shard | None = None
    quiet: bool = False
    verbose: bool = False
    settings: Settings | None = attrs.field(default=None, validator=_optional_settings)
    reporter: Reporter = attrs.field(factory=_NoReporter, eq=False)


@runtime_checkable
class Suite(Protocol):
    """A check suite: ``run`` returns a process exit code (see the module docstring)."""

    def run(self, options: SuiteOptions) -> int:
        """Run every check with ``options``; print progress and failures; return the code."""
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

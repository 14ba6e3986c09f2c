"""Step records of one execution and their renderings.

A :class:`Trace` is the ordered list of :class:`StepRecord` of one execution: which
logical thread ran which operation on which resource, from which line of user code, and
whether the step was a preemption. ``swimlanes()`` renders it as text, one column per
thread; ``to_rows()`` gives plain dicts for the HTML timeline (``lockstep._html``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Iterator, Mapping, Sequence
from typing import Any, overload

import attrs

from lockstep._schedule import Choice
from lockstep._text import TEXT_WIDTH, abbreviate, wrap_lines, wrap_tokens

__all__ = ["LazySteps", "OpDescriptor", "PrimitiveId", "StepRecord", "Trace"]


@attrs.frozen(slots=True, cache_hash=True)  # a dict key at every step of DPOR's analysis
class PrimitiveId:
    """The dependency key of a controlled primitive: kind and per-run creation number.

    Numbers are assigned in order of first use within each execution, so the same
    scenario gives the same ids in every execution (``Lock#2`` is stable).
    """

    kind: str
    number: int

    def __str__(self) -> str:
        return f"{self.kind}#{self.number}"


@attrs.frozen(slots=True)
class OpDescriptor:
    """What a thread is about to do at a switch point.

    ``kind``: e.g. "Lock.acquire", "Condition.wait", "checkpoint", "start", "end",
    "sleep", "line". ``resource``: the dependency key (a :class:`PrimitiveId`, the
    resource given to ``checkpoint``, or None = conflicts with nothing). ``label``: a
    readable name (``Lock#2``, the checkpoint's label). ``location``: "file:line" of the
    first frame outside lockstep that performed it.
    """

    kind: str
    resource: Hashable | None
    label: str
    location: str = "?"


@attrs.frozen(slots=True)
class StepRecord:
    """One executed step: ``thread`` was chosen (``choice``) and performed ``op``.

    ``enabled`` is the set of threads that could run at this step, ``pending`` maps every
    live thread (enabled or blocked) to its pending operation at this step, ``timeouts``
    the threads that could fire a timeout. ``preemption`` is True when the previously
    running thread was still enabled but another choice was made, or when that thread
    had just yielded (slept or timed out) and ran on while another thread could run
    (:meth:`StepContext.is_preemption`). ``clock`` is the
    virtual monotonic time after the step.
    """

    index: int
    thread: int
    thread_name: str
    op: OpDescriptor
    choice: Choice
    preemption: bool
    enabled: frozenset[int]
    timeouts: frozenset[int]
    pending: tuple[tuple[int, OpDescriptor], ...]
    clock: float

    @property
    def kind(self) -> str:
        """The operation kind ("timeout" when the step fired a timeout)."""
        return "timeout" if self.choice.kind == "timeout" else self.op.kind

    @property
    def resource(self) -> Hashable | None:
        """The dependency key of the operation."""
        return self.op.resource

    @property
    def location(self) -> str:
        """file:line of the user code that performed it."""
        return self.op.location

    def describe(self) -> str:
        """``Lock.acquire Lock#2`` (with ``timeout of`` for a fired timeout)."""
        text = f"{self.op.kind} {self.op.label}".strip()
        if self.choice.kind == "timeout":
            text = f"timeout of {text}"
        return text


class LazySteps(Sequence[StepRecord]):
    """The step records of one execution, built on first use (read-only, tuple-like).

    The scheduler keeps a compact row per step and builds the :class:`StepRecord`
    values only when someone reads them: most executions of an exploration pass and
    are never looked at again. Indexing, slicing (a tuple), iteration, ``len`` (without
    building anything), equality with any sequence of the same records, and hashing
    behave as for the tuple of records.
    """

    __slots__ = ("_build", "_length", "_records")

    def __init__(self, length: int, build: Callable[[], tuple[StepRecord, ...]]) -> None:
        self._length = length
        self._build: Callable[[], tuple[StepRecord, ...]] | None = build
        self._records: tuple[StepRecord, ...] | None = None

    def records(self) -> tuple[StepRecord, ...]:
        """Every record, as a tuple (built now if needed)."""
        records = self._records
        if records is None:
            assert self._build is not None
            records = self._records = self._build()
            self._build = None
        return records

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> StepRecord: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[StepRecord, ...]: ...

    def __getitem__(self, index: int | slice) -> StepRecord | tuple[StepRecord, ...]:
        return self.records()[index]

    def __iter__(self) -> Iterator[StepRecord]:
        return iter(self.records())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazySteps):
            other = other.records()
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return self.records() == tuple(other)

    def __hash__(self) -> int:
        return hash(self.records())

    def __repr__(self) -> str:
        return repr(self.records())


@attrs.frozen(slots=True)
class Trace:
    """The ordered step records of one execution, with the thread names by index."""

    steps: tuple[StepRecord, ...]
    thread_names: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.steps)

    @property
    def preemptions(self) -> int:
        """How many steps were preemptions."""
        return sum(1 for step in self.steps if step.preemption)

    def to_rows(self) -> list[dict[str, Any]]:
        """Plain dicts, one per step, for renderers (HTML timeline, JSON dumps).

        Keys: step, thread, thread_name, kind, op, resource, label, location, preemption,
        choice, clock, enabled (sorted list of thread indices).
        """
        return [
            {
                "step": step.index,
                "thread": step.thread,
                "thread_name": step.thread_name,
                "kind": step.kind,
                "op": step.op.kind,
                "resource": None if step.op.resource is None else str(step.op.resource),
                "label": step.op.label,
                "location": step.op.location,
                "preemption": step.preemption,
                "choice": str(step.choice),
                "clock": step.clock,
                "enabled": sorted(step.enabled),
            }
            for step in self.steps
        ]

    def swimlanes(
        self,
        *,
        width: int | None = None,
        limit: int | None = 400,
        marked: Collection[int] | Mapping[int, str] = (),
        max_width: int = TEXT_WIDTH,
    ) -> str:
        """Text swimlanes: one column per thread, one row per step.

        Each cell is the operation and its file:line; preemptions are marked with ``!``
        before the step number, and the steps in ``marked`` (a data race's two
        accesses: ``DataRace.marks()``, step -> note) with their note after the row
        (``<< RACE`` for a plain collection of steps). At most ``limit`` steps are shown
        (the last ones) so a failure message stays readable. Lines are at most
        ``max_width`` columns (plus a race mark): a cell that does not fit its column
        continues on the next lines (nothing is cut off; a huge label is abbreviated),
        and with too many threads for columns each step is one line ("step thread:
        operation"). ``width`` fixes the column width instead (no wrapping, cells cut
        with "…").
        """
        names = self.thread_names or tuple(
            f"T{i}" for i in range(1 + max((s.thread for s in self.steps), default=0))
        )
        headers = [f"{i}:{name}" for i, name in enumerate(names)]
        steps: Sequence[StepRecord] = self.steps
        skipped = 0
        if limit is not None and len(steps) > limit:
            skipped = len(steps) - limit
            steps = steps[-limit:]
        cells_text = {step.index: _cell(step) for step in steps}
        if width is not None:
            return _fixed_lanes(headers, steps, cells_text, width, skipped, marked=marked)
        longest = max([len(h) for h in headers] + [len(c) for c in cells_text.values()])
        room = (max_width - _PREFIX - _SEPARATOR * (len(headers) - 1)) // max(len(headers), 1)
        column = min(longest, 56, room)
        if column < _MIN_COLUMN:
            return _listed_lanes(headers, steps, cells_text, max_width, skipped, marked=marked)
        return _wrapped_lanes(headers, steps, cells_text, column, skipped, marked=marked)

    def __str__(self) -> str:
        return self.swimlanes()


_PREFIX = 9  # "!    12 | "
_SEPARATOR = 3  # " | "
_MIN_COLUMN = 14
_LEGEND = (
    "(! = preemption: the previous thread could have continued, or went on after a sleep/timeout)"
)
_RACE = "  << RACE"


def _race_mark(marked: Collection[int] | Mapping[int, str], index: int) -> str:
    """The text after a marked row ("" when the step is not marked)."""
    if isinstance(marked, Mapping):
        note = marked.get(index)
        return "" if note is None else f"  {note}"
    return _RACE if index in marked else ""


def _race_note(marked: Collection[int] | Mapping[int, str], index: int) -> str:
    """A marked step's note, shown under the step in its own lane ("" when unmarked)."""
    return _race_mark(marked, index).strip()


def _fixed_lanes(
    headers: list[str],
    steps: Sequence[StepRecord],
    cells_text: dict[int, str],
    width: int,
    skipped: int,
    *,
    marked: Collection[int] | Mapping[int, str],
) -> str:
    lines = ["  step | " + " | ".join(_fit(h, width) for h in headers)]
    lines.append("-" * len(lines[0]))
    if skipped:
        lines.append(f"  ... {skipped} earlier steps omitted ...")
    for step in steps:
        cells = [" " * width] * len(headers)
        if step.thread < len(cells):
            cells[step.thread] = _fit(cells_text[step.index], width)
        mark = "!" if step.preemption else " "
        lines.append(f"{mark}{step.index:5d} | " + " | ".join(cells))
        note = _race_note(marked, step.index)
        if note and step.thread < len(cells):
            for piece in _chunks(note, width):
                cells = [" " * width] * len(headers)
                cells[step.thread] = piece.ljust(width)
                lines.append("       | " + " | ".join(cells))
    lines.append(_LEGEND)
    return "\n".join(line.rstrip() for line in lines)


def _chunks(text: str, width: int) -> list[str]:
    """``text`` in pieces of at most ``width`` (at spaces where possible), abbreviated."""
    text = abbreviate(text, max(6 * width, 200))
    return wrap_tokens(text, width) or [""]


def _wrapped_lanes(
    headers: list[str],
    steps: Sequence[StepRecord],
    cells_text: dict[int, str],
    width: int,
    skipped: int,
    *,
    marked: Collection[int] | Mapping[int, str],
) -> str:
    header_parts = [_chunks(h, width) for h in headers]
    lines: list[str] = []
    for row in range(max(len(p) for p in header_parts)):
        label = "  step | " if row == 0 else "       | "
        lines.append(
            label + " | ".join((p[row] if row < len(p) else "").ljust(width) for p in header_parts)
        )
    rule = "-" * (_PREFIX + width * len(headers) + _SEPARATOR * (len(headers) - 1))
    lines.append(rule)
    if skipped:
        lines.append(f"  ... {skipped} earlier steps omitted ...")
    for step in steps:
        pieces = _chunks(cells_text[step.index], width)
        note = _race_note(marked, step.index)
        if note:  # under the step, in its own lane: the lanes keep their width
            pieces.extend(_chunks(note, width))
        for row, piece in enumerate(pieces):
            cells = [" " * width] * len(headers)
            if step.thread < len(cells):
                cells[step.thread] = piece.ljust(width)
            mark = "!" if step.preemption and row == 0 else " "
            number = f"{step.index:5d}" if row == 0 else "     "
            lines.append(f"{mark}{number} | " + " | ".join(cells))
    lines.append(_LEGEND)
    return "\n".join(line.rstrip() for line in lines)


def _listed_lanes(
    headers: list[str],
    steps: Sequence[StepRecord],
    cells_text: dict[int, str],
    max_width: int,
    skipped: int,
    *,
    marked: Collection[int] | Mapping[int, str],
) -> str:
    """Too many threads for columns: one line per step, thread named."""
    lines = ["  step  thread: operation"]
    if skipped:
        lines.append(f"  ... {skipped} earlier steps omitted ...")
    for step in steps:
        mark = "!" if step.preemption else " "
        who = headers[step.thread] if step.thread < len(headers) else str(step.thread)
        race = _race_mark(marked, step.index)
        text = f"{mark}{step.index:5d}  {abbreviate(who, 40)}: {cells_text[step.index]}{race}"
        lines.append(wrap_lines(abbreviate(text, 4 * max_width), max_width))
    lines.append(_LEGEND)
    return "\n".join(line.rstrip() for line in lines)


def _cell(step: StepRecord) -> str:
    text = step.describe()
    where = _short_location(step.op.location)
    return f"{text} @{where}" if where else text


def _short_location(location: str) -> str:
    if location in ("", "?"):
        return ""
    path, _, line = location.rpartition(":")
    return f"{path.replace(chr(92), '/').rsplit('/', 1)[-1]}:{line}"


def _fit(text: str, width: int) -> str:
    if len(text) > width:
        return text[: width - 1] + "…"
    return text.ljust(width)

"""Failures are data: what went wrong, the schedule that reproduces it, and its trace.

A :class:`Failure` is a frozen value. ``str(failure)`` is the message, the deadlock
table (for deadlocks), the text swimlanes of the failing execution, and the exact
command that replays it.
"""

from __future__ import annotations

import os
import re
import traceback
from typing import Literal

import attrs

from lockstep._memory._report import DataRace
from lockstep._schedule import Schedule
from lockstep._trace import Trace

__all__ = ["FAILURE_KINDS", "BlockedThread", "Failure", "FailureKind", "format_exception"]

FailureKind = Literal[
    "exception",
    "invariant",
    "deadlock",
    "stall",
    "data-race",
    "step_limit",
    "nondeterminism",
    "divergence",
]
FAILURE_KINDS: frozenset[str] = frozenset(
    {
        "exception",
        "invariant",
        "deadlock",
        "stall",
        "data-race",
        "step_limit",
        "nondeterminism",
        "divergence",
    }
)


@attrs.frozen(slots=True)
class BlockedThread:
    """One row of a deadlock table: a thread, what it waits on, who holds it, and where."""

    thread: int
    thread_name: str
    operation: str
    resource: str
    holders: tuple[str, ...]
    location: str

    def describe(self) -> str:
        held = ", ".join(self.holders) if self.holders else "nobody"
        return (
            f"{self.thread}:{self.thread_name} blocked in {self.operation} on {self.resource}"
            f" (held by {held}) at {self.location}"
        )


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _hidden_files(exc: BaseException | None) -> set[str]:
    """Files of frames that ask to be hidden (``__tracebackhide__`` true in the frame's
    locals or its module's globals, pytest's convention: a test harness's own frames),
    over ``exc``'s traceback and those of its causes and contexts."""
    hidden: set[str] = set()
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        tb = exc.__traceback__
        while tb is not None:
            frame = tb.tb_frame
            if frame.f_locals.get("__tracebackhide__") or frame.f_globals.get("__tracebackhide__"):
                hidden.add(frame.f_code.co_filename)
            tb = tb.tb_next
        exc = exc.__cause__ or exc.__context__
    return hidden


def _user_frames(
    formatted: traceback.TracebackException, hidden: set[str]
) -> tuple[traceback.StackSummary, int]:
    kept = [
        frame
        for frame in formatted.stack
        if not frame.filename.startswith(_PACKAGE_DIR) and frame.filename not in hidden
    ]
    return traceback.StackSummary.from_list(kept), len(formatted.stack) - len(kept)


def format_exception(exc: BaseException, *, harness: bool = False) -> str:
    """The traceback of ``exc`` without lockstep's own frames (the scheduler's plumbing)
    nor a harness's (frames that set ``__tracebackhide__``, as pytest honours it): the
    code under test's frames come first. A line says how many frames were left out.
    (Whether a report shows it at all is `Failure.shows_traceback`: an invariant whose
    frames are all left out says everything in its message.) ``harness``: keep the
    harness's frames too (only lockstep's are left out), for debugging it."""
    hidden = set() if harness else _hidden_files(exc)
    formatted = traceback.TracebackException.from_exception(exc)
    chain: traceback.TracebackException | None = formatted
    dropped = 0
    while chain is not None:
        chain.stack, left_out = _user_frames(chain, hidden)
        dropped += left_out
        chain = chain.__cause__ or chain.__context__
    text = "".join(formatted.format()).rstrip()
    if dropped:
        text += f"\n({dropped} frame(s) of lockstep and the test harness left out)"
    return text


def _harness_only(exc: BaseException) -> bool:
    """Whether every frame of ``exc``'s traceback is lockstep's or a harness's."""
    formatted = traceback.TracebackException.from_exception(exc)
    kept, _ = _user_frames(formatted, _hidden_files(exc))
    return not kept


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _table(rows: tuple[BlockedThread, ...]) -> str:
    headers = ("thread", "blocked in", "on", "held by", "where")
    data = [
        (
            f"{r.thread}:{r.thread_name}",
            r.operation,
            r.resource,
            ", ".join(r.holders) if r.holders else "-",
            r.location,
        )
        for r in rows
    ]
    widths = [max(len(h), *(len(row[i]) for row in data)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    lines.extend("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in data)
    return "\n".join(line.rstrip() for line in lines)


@attrs.frozen(slots=True)
class Failure:
    """A failing execution.

    ``kind``: one of FAILURE_KINDS. ``exception``: the exception raised (in a thread, by
    an invariant), if any. ``thread``: logical index of the thread where it happened
    (None for deadlocks and strategy-detected failures). ``invariant``: the invariant's
    name for kind "invariant". ``deadlock``: the blocked-thread table for "deadlock".
    ``race``: both sides of the race for "data-race" (the swimlanes mark them).
    ``replay_command``: the exact command that replays it (None if unknown).
    """

    kind: FailureKind
    message: str
    schedule: Schedule
    trace: Trace
    exception: BaseException | None = attrs.field(default=None, eq=False)
    thread: int | None = None
    thread_name: str | None = None
    invariant: str | None = None
    deadlock: tuple[BlockedThread, ...] = ()
    replay_command: str | None = None
    race: DataRace | None = None

    @property
    def signature(self) -> tuple[str, str]:
        """What "fails the same way" means for shrinking: kind plus exception type/invariant."""
        if self.kind == "invariant":
            return (self.kind, self.invariant or "")
        if self.race is not None:
            return (self.kind, self.race.location)
        if self.exception is not None:
            return (self.kind, type(self.exception).__qualname__)
        return (self.kind, "")

    @property
    def preemptions(self) -> int:
        """Number of preemptions in the failing execution."""
        return self.trace.preemptions

    def deadlock_table(self) -> str:
        """The deadlock table as aligned text ("" when this is not a deadlock)."""
        return _table(self.deadlock) if self.deadlock else ""

    def with_replay_command(self, command: str | None) -> Failure:
        """A copy carrying another replay command."""
        return attrs.evolve(self, replay_command=command)

    def __str__(self) -> str:
        return self.render()

    @property
    def detail(self) -> str:
        """The failing check's own account, when its exception carries one (a ``detail``
        string attribute: e.g. a suite's internal encodings, left out of the message
        for the reader of the code under test); "" otherwise."""
        detail = getattr(self.exception, "detail", "")
        return detail if isinstance(detail, str) else ""

    @property
    def shows_traceback(self) -> bool:
        """Whether a report shows the exception's traceback: for an exception, always; for
        an invariant, only when a frame of it is the user's own (an invariant raised by
        a test harness, whose frames all ask to be hidden, says it all in its message)."""
        if self.exception is None or self.kind not in ("exception", "invariant"):
            return False
        return self.kind == "exception" or not _harness_only(self.exception)

    def render(self, *, verbose: bool = False, description: str = "") -> str:
        """``str(failure)``; ``description`` (what the scenario does) first, and with
        ``verbose`` the check's own account (`detail`) after the message and the whole
        traceback, a harness's frames included (for whoever debugs the check)."""
        parts = [description.rstrip()] if description.strip() else []
        parts.append(f"lockstep found a failure ({self.kind}): {_said_once(self.message)}")
        if verbose and self.detail:
            parts.append("Detail (the check's own terms):\n" + self.detail)
        shown = self.shows_traceback or (verbose and self.kind in ("exception", "invariant"))
        if self.exception is not None and shown:
            parts.append(format_exception(self.exception, harness=verbose))
        if self.deadlock:
            parts.append("Blocked threads:\n" + self.deadlock_table())
        marked: dict[int, str] = {}
        if self.race is not None:
            parts.append(self.race.describe())
            marked = self.race.marks()
        parts.append(
            f"Failing interleaving ({len(self.trace)} steps, "
            f"{_plural(self.trace.preemptions, 'preemption')}):\n"
            + self.trace.swimlanes(marked=marked)
        )
        if self.replay_command:
            parts.append(f"Replay it with:\n    {self.replay_command}")
        else:
            parts.append(
                "Replay it with lockstep.replay(scenario, lockstep.Schedule.from_string("
                f"{self.schedule.to_string()!r}))"
            )
            if self.schedule.scenario_id is None:
                parts.append(
                    "This schedule names no importable scenario (a closure, a lambda or a "
                    "script's function), so a saved copy cannot be replayed by file: pass "
                    "explore(..., scenario_id='module:qualname') naming an importable "
                    "zero-argument callable that builds the same scenario (then `lockstep "
                    "replay FILE` works), or replay a file with `lockstep replay FILE "
                    "--scenario module:qualname`."
                )
        return "\n\n".join(parts)


_REPEATED_NAME = re.compile(r"^(invariant (\S+) violated after step \d+: )\2 violated: ")
"""An invariant whose exception says its own name first ("I4 violated: ...") after
lockstep's prefix ("invariant I4 violated after step 62: ")."""


def _said_once(message: str) -> str:
    """``message`` with an invariant's name and "violated" said once, not twice in a row
    ("invariant I4 violated after step 62: I4 violated: the LRU ..." reads "invariant I4
    violated after step 62: the LRU ..."); `Failure.message` itself keeps both."""
    return _REPEATED_NAME.sub(r"\1", message, count=1)

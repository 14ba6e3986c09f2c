"""Bounded exhaustive search: depth-first over every choice, with a preemption bound.

Stateless DFS (as in CHESS): each execution replays the path to the deepest choice
point that still has an unexplored alternative, takes it, and continues with the
first (non-preemptive) option at each new step. With ``preemption_bound=b`` only
schedules with at most b preemptions are explored (CHESS: every one of 9 new bugs
needed at most 2). ``end_execution`` returns False when the bounded space is
exhausted; :attr:`DFSStrategy.exhausted` says so.

A scenario that is not deterministic (different choice sets after the same choices)
is reported as a "nondeterminism" failure.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from lockstep._schedule import Choice
from lockstep.errors import InvalidArgument, InvalidArgumentType, NondeterminismDetected
from lockstep.strategies._base import NONDETERMINISM_CAUSES, ExecutionOutcome, StepContext
from lockstep.strategies._capabilities import Capabilities

__all__ = ["DFSStrategy"]


@attrs.define
class _Frame:
    choices: tuple[Choice, ...]
    options: tuple[Choice, ...]
    index: int = 0


class DFSStrategy:
    """Exhaustive DFS over schedules with at most ``preemption_bound`` preemptions.

    ``preemption_bound=None``: unbounded. ``timeouts=False`` never fires a timeout while
    some thread can run (a smaller space; a timeout still fires when nothing else can
    run). Raises InvalidArgument / InvalidArgumentType for bad arguments.
    """

    name = "dfs"
    seed: int | None = None

    def __init__(self, *, preemption_bound: int | None = 2, timeouts: bool = True) -> None:
        if preemption_bound is not None and (
            not isinstance(preemption_bound, int) or preemption_bound < 0
        ):
            raise InvalidArgument(
                f"preemption_bound must be an int >= 0 or None, got {preemption_bound!r}"
            )
        if not isinstance(timeouts, bool):
            raise InvalidArgumentType(f"timeouts must be True or False, got {timeouts!r}")
        self.preemption_bound = preemption_bound
        self.capabilities = Capabilities(
            name=self.name, systematic=True, preemption_bound=preemption_bound
        )
        self.timeouts = timeouts
        self.exhausted = False
        self.executions = 0
        self._stack: list[_Frame] = []
        self._position = 0
        self._preemptions = 0

    def begin_execution(self) -> None:
        """Start replaying the current path from the root."""
        self._position = 0
        self._preemptions = 0

    def _options(self, choices: Sequence[Choice], step: StepContext) -> tuple[Choice, ...]:
        current = step.current
        # Non-preemptive options first (after a yield: the other threads, see
        # StepContext.yielded), then the current thread's, runs before timeouts.
        ordered = sorted(
            choices,
            key=lambda c: (
                step.is_preemption(c),
                c.thread != current,
                c.kind == "timeout",
                c.thread,
            ),
        )
        if not self.timeouts and any(c.kind == "run" for c in ordered):
            ordered = [c for c in ordered if c.kind == "run"]
        if self.preemption_bound is not None and self._preemptions >= self.preemption_bound:
            ordered = [c for c in ordered if not step.is_preemption(c)]
        return tuple(ordered)

    def choose(self, choices: Sequence[Choice], step: StepContext) -> Choice:
        """Replay the path, then take the first option at each new choice point."""
        if self._position < len(self._stack):
            frame = self._stack[self._position]
            if tuple(choices) != frame.choices:
                raise NondeterminismDetected(
                    f"step {step.step}: the same earlier choices led to choices "
                    f"{[str(c) for c in choices]} now but {[str(c) for c in frame.choices]} "
                    f"before: {NONDETERMINISM_CAUSES}"
                )
        else:
            frame = _Frame(tuple(choices), self._options(choices, step))
            self._stack.append(frame)
        choice = frame.options[frame.index]
        if step.is_preemption(choice):
            self._preemptions += 1
        self._position += 1
        return choice

    def end_execution(self, outcome: ExecutionOutcome) -> bool:
        """Backtrack to the deepest frame with an untried option; False when none is left."""
        self.executions += 1
        del self._stack[self._position :]
        while self._stack and self._stack[-1].index + 1 >= len(self._stack[-1].options):
            self._stack.pop()
        if not self._stack:
            self.exhausted = True
            return False
        self._stack[-1].index += 1
        return True

    def __repr__(self) -> str:
        return f"DFSStrategy(preemption_bound={self.preemption_bound})"

"""A wrapper that runs every schedule twice and compares the choice sets.

If the same choices lead to different choice sets, the scenario depends on something
lockstep does not control (wall time, an unpatched lock, hash randomisation, global
state left over from a previous execution) and its schedules would not replay; that
is reported as a Failure of kind "nondeterminism". Each schedule costs two executions.
"""

from __future__ import annotations

from collections.abc import Sequence

from lockstep._schedule import Choice
from lockstep.errors import NondeterminismDetected
from lockstep.strategies._base import (
    NONDETERMINISM_CAUSES,
    ExecutionOutcome,
    StepContext,
    Strategy,
    check_strategy,
)
from lockstep.strategies._capabilities import Capabilities

__all__ = ["DeterminismCheck"]


class DeterminismCheck:
    """Wraps ``inner``: each of its executions is followed by an exact re-run."""

    def __init__(self, inner: Strategy) -> None:
        self.inner = inner
        inner_capabilities = check_strategy(inner)
        self.name = f"{inner_capabilities.name or type(inner).__name__}+determinism"
        self.seed = inner_capabilities.seed
        self._checking = False
        self._record: list[tuple[tuple[Choice, ...], Choice]] = []
        self._position = 0
        self._inner_more = True
        self._first_steps = 0

    @property
    def capabilities(self) -> Capabilities:
        """The inner strategy's, under this wrapper's name (re-runs change no claim)."""
        return self.inner.capabilities.replace(name=self.name)

    def begin_execution(self) -> None:
        """First pass: the inner strategy; second pass: the recorded choices."""
        self._position = 0
        if not self._checking:
            self._record = []
            self.inner.begin_execution()

    def choose(self, choices: Sequence[Choice], step: StepContext) -> Choice:
        """Record (first pass) or compare and replay (second pass)."""
        current = tuple(choices)
        if not self._checking:
            choice = self.inner.choose(choices, step)
            self._record.append((current, choice))
            return choice
        if self._position >= len(self._record):
            raise NondeterminismDetected(
                f"step {step.step}: the first run ended here but the re-run continues "
                f"with choices {[str(c) for c in current]}: {NONDETERMINISM_CAUSES}"
            )
        expected, choice = self._record[self._position]
        if current != expected:
            raise NondeterminismDetected(
                f"step {step.step}: the same earlier choices gave choices "
                f"{[str(c) for c in expected]} in the first run and "
                f"{[str(c) for c in current]} in the re-run: {NONDETERMINISM_CAUSES}"
            )
        self._position += 1
        return choice

    def end_execution(self, outcome: ExecutionOutcome) -> bool:
        """After the first pass ask for the re-run; after it, defer to the inner strategy."""
        if not self._checking:
            self._inner_more = self.inner.end_execution(outcome)
            self._checking = True
            return True
        self._checking = False
        if self._position != len(self._record):
            raise NondeterminismDetected(
                f"the re-run ended after {self._position} steps but the first run took "
                f"{len(self._record)}: {NONDETERMINISM_CAUSES}"
            )
        return self._inner_more

"""Result records of explore() and replay() (frozen values)."""

from __future__ import annotations

import attrs

from lockstep._failure import Failure
from lockstep._schedule import Schedule
from lockstep._trace import Trace
from lockstep.errors import LockstepError

__all__ = ["ExecutionResult", "ExplorationFailed", "ExploreResult"]


class ExplorationFailed(LockstepError, AssertionError):
    """Raised by ``raise_for_failure()``: carries the Failure; str() is the full report."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(str(failure))
        self.failure = failure


@attrs.frozen(slots=True)
class ExecutionResult:
    """One execution (what ``replay`` returns): its schedule, trace and failure (or None)."""

    schedule: Schedule
    trace: Trace
    failure: Failure | None

    @property
    def ok(self) -> bool:
        """True when the execution passed."""
        return self.failure is None

    @property
    def steps(self) -> int:
        """Number of steps executed."""
        return len(self.trace)

    def raise_for_failure(self) -> None:
        """Raise ExplorationFailed if the execution failed."""
        if self.failure is not None:
            raise ExplorationFailed(self.failure)


@attrs.frozen(slots=True)
class ExploreResult:
    """What ``explore`` found.

    ``executions`` run, ``exhausted`` (the strategy reported its space exhausted before
    the budget ran out, with no failure), the shrunk ``failure`` (or None), wall-clock
    ``elapsed`` seconds, ``schedules_per_second``, total ``steps``; ``pct_bound``: PCT's
    guaranteed per-execution probability 1/(n*k^(d-1)) for the observed n threads and
    k steps (None for other strategies); ``max_threads``/``max_steps_seen`` observed.
    """

    executions: int
    exhausted: bool
    failure: Failure | None
    elapsed: float
    schedules_per_second: float
    steps: int
    strategy: str
    seed: int | None = None
    pct_bound: float | None = None
    max_threads: int = 0
    max_steps_seen: int = 0
    shrink_executions: int = 0

    @property
    def ok(self) -> bool:
        """True when no failure was found."""
        return self.failure is None

    def raise_for_failure(self) -> None:
        """Raise ExplorationFailed (an AssertionError) if a failure was found."""
        if self.failure is not None:
            raise ExplorationFailed(self.failure)

    def summary(self) -> str:
        """One line: executions, rate, exhaustion and outcome."""
        outcome = "no failure" if self.failure is None else f"{self.failure.kind} failure"
        parts = [
            f"{self.executions} executions of strategy {self.strategy}",
            f"{self.schedules_per_second:.0f}/s",
            f"{self.steps} steps",
        ]
        if self.exhausted:
            parts.append("space exhausted")
        if self.pct_bound is not None:
            parts.append(f"PCT bound per execution {self.pct_bound:.3g}")
        return ", ".join(parts) + f": {outcome}"

"""Shrinking: make a failing schedule as small as possible while it fails the same way.

"The same way" is :attr:`Failure.signature`: the failure kind plus the exception type
(or the invariant's name). Smaller means fewer preemptions first, then fewer steps:
a failure with one context switch is far easier to understand than one with five.

Candidates are produced from the current best schedule and run with a *guided*
strategy that follows the candidate choices while they are available and otherwise
continues non-preemptively, so every candidate run yields a real, exact schedule:

1. truncation: keep a prefix of the choices and continue non-preemptively;
2. for each preemption, replace it by continuing the current thread;
3. delete single choices.

Work is bounded by ``budget`` executions. Never returns a failure that does not
reproduce: each accepted candidate *is* a recorded failing execution.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from lockstep.execution import Options, Scenario, run_execution
from lockstep.failure import Failure
from lockstep.schedule import Choice
from lockstep.strategies.base import ExecutionOutcome, StepContext
from lockstep.strategies.replay import default_choice

__all__ = ["GuidedStrategy", "shrink_failure"]


class GuidedStrategy:
    """Follows ``choices`` leniently: an unavailable choice is skipped; when they run out
    (or none applies) it continues non-preemptively."""

    name = "shrink"

    def __init__(self, choices: Sequence[Choice]) -> None:
        self.choices = tuple(choices)
        self.seed: int | None = None
        self._position = 0

    def begin_execution(self) -> None:
        """Restart from the first choice."""
        self._position = 0

    def choose(self, choices: Sequence[Choice], step: StepContext) -> Choice:
        """The next guiding choice that is available, else the non-preemptive default."""
        while self._position < len(self.choices):
            wanted = self.choices[self._position]
            self._position += 1
            if wanted in choices:
                return wanted
            # A skipped choice usually belonged to a thread that is not runnable here;
            # look one ahead so that a single shifted step does not derail the rest.
        return default_choice(choices, step)

    def end_execution(self, outcome: ExecutionOutcome) -> bool:
        """One execution per candidate."""
        return False


def _size(failure: Failure) -> tuple[int, int]:
    return (failure.trace.preemptions, len(failure.trace))


def _candidates(failure: Failure) -> Iterator[tuple[Choice, ...]]:
    choices = failure.schedule.choices
    steps = failure.trace.steps
    n = len(choices)
    # 1. Truncations, shortest first (coarse to fine).
    seen: set[int] = set()
    for denominator in (8, 4, 2):
        for numerator in range(1, denominator):
            cut = n * numerator // denominator
            if cut not in seen:
                seen.add(cut)
                yield choices[:cut]
    # 2. Remove each preemption: at that step let the previous thread continue.
    for step in steps:
        if step.preemption and step.index > 0:
            previous = steps[step.index - 1].thread
            yield (*choices[: step.index], Choice.of(previous), *choices[step.index :])
            yield choices[: step.index]
    # 3. Delete single choices (from the end: late choices matter least).
    for index in range(n - 1, -1, -1):
        yield choices[:index] + choices[index + 1 :]


def shrink_failure(
    scenario: Scenario, failure: Failure, options: Options, *, budget: int = 200
) -> tuple[Failure, int]:
    """Return the smallest failure found (same signature) and the executions spent."""
    best = failure
    spent = 0
    tried: set[tuple[Choice, ...]] = set()
    improved = True
    while improved and spent < budget:
        improved = False
        for candidate in _candidates(best):
            if spent >= budget:
                break
            if candidate in tried:
                continue
            tried.add(candidate)
            strategy = GuidedStrategy(candidate)
            strategy.begin_execution()
            run = run_execution(scenario, strategy, options, best.schedule.with_choices(()))
            spent += 1
            result = run.failure()
            if (
                result is not None
                and result.signature == failure.signature
                and _size(result) < _size(best)
            ):
                best = result
                improved = True
                break
    return best, spent

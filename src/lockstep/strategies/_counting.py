"""A wrapper that counts what a strategy did (executions, steps, preemptions, ...)."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from lockstep._schedule import Choice
from lockstep.strategies._base import ExecutionOutcome, StepContext, Strategy, check_strategy
from lockstep.strategies._capabilities import Capabilities

__all__ = ["CountingStrategy", "StrategyMetrics"]


@attrs.frozen
class StrategyMetrics:
    """Totals over all executions seen by a CountingStrategy."""

    executions: int
    steps: int
    preemptions: int
    failures: int
    max_threads: int
    max_steps: int
    max_choices: int


class CountingStrategy:
    """Delegates to ``inner`` and counts; ``metrics()`` returns the totals."""

    def __init__(self, inner: Strategy) -> None:
        self.inner = inner
        inner_capabilities = check_strategy(inner)
        self.name = inner_capabilities.name or type(inner).__name__
        self.seed = inner_capabilities.seed
        self._executions = self._steps = self._preemptions = self._failures = 0
        self._max_threads = self._max_steps = self._max_choices = 0

    @property
    def capabilities(self) -> Capabilities:
        """The inner strategy's, named as it is (counting changes no choice)."""
        return self.inner.capabilities.replace(name=self.name)

    def begin_execution(self) -> None:
        """Delegate."""
        self.inner.begin_execution()

    def choose(self, choices: Sequence[Choice], step: StepContext) -> Choice:
        """Delegate, noting the choice-set size."""
        self._max_choices = max(self._max_choices, len(choices))
        return self.inner.choose(choices, step)

    def end_execution(self, outcome: ExecutionOutcome) -> bool:
        """Count, then delegate."""
        self._executions += 1
        self._steps += len(outcome.steps)
        self._preemptions += sum(1 for s in outcome.steps if s.preemption)
        self._failures += outcome.failed
        self._max_steps = max(self._max_steps, len(outcome.steps))
        self._max_threads = max(
            self._max_threads, 1 + max((s.thread for s in outcome.steps), default=0)
        )
        return self.inner.end_execution(outcome)

    def metrics(self) -> StrategyMetrics:
        """The totals so far."""
        return StrategyMetrics(
            self._executions,
            self._steps,
            self._preemptions,
            self._failures,
            self._max_threads,
            self._max_steps,
            self._max_choices,
        )

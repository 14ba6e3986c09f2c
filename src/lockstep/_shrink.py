"""Shrinking: make a failing schedule as small as possible while it fails the same way.

"The same way" is :attr:`Failure.signature`: the failure kind plus the exception type
(or the invariant's name). Smaller means fewer preemptions first, then fewer steps,
then fewer deviations: one context switch is far easier to understand than five.

Two passes alternate until neither helps or ``budget`` executions are spent:

* Deviations. Given the non-preemptive default policy (:func:`default_choice`: keep
  the current thread while it can run, else the lowest runnable index, timeouts only
  when nothing can run), a schedule is determined by its *deviations*: the points
  where it chose something else (a preemption, another thread, a timeout), keyed by
  the running thread and how many steps it had executed. Delta debugging keeps only
  a chunk of them (bugs usually need one or two preemptions: few are tried first) or
  drops a chunk, and replays with the default policy everywhere else.
* Raw choices. Truncations, a preemption replaced by continuing the preempted thread,
  single deletions, followed leniently (unavailable choices are skipped).

Each accepted candidate *is* a recorded failing execution, so the result always
reproduces; when nothing smaller is found the original failure is returned.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from lockstep._backend import open_backend
from lockstep._backend_protocol import Backend
from lockstep._execution import Options, Scenario, run_execution
from lockstep._failure import Failure
from lockstep._schedule import Choice
from lockstep._trace import StepRecord
from lockstep.strategies._base import ExecutionOutcome, StepContext, Strategy
from lockstep.strategies._capabilities import Capabilities
from lockstep.strategies._replay import GuidedStrategy, default_choice

__all__ = ["DeviationStrategy", "deviations", "shrink_failure"]


DeviationKey = tuple[int, int]
"""(current thread or -1 before the first step, steps that thread has executed so far)."""


class DeviationStrategy:
    """Applies ``deviations`` where available, the default policy elsewhere.

    A deviation is keyed by *who was running and how far it had got* (the current
    thread and its number of executed steps), not by the global step number, so
    removing one deviation does not shift the meaning of the others.
    """

    name = "shrink"
    capabilities = Capabilities(name="shrink")

    def __init__(self, deviations: Mapping[DeviationKey, Choice]) -> None:
        self.deviations = dict(deviations)
        self.seed: int | None = None
        self._executed: dict[int, int] = {}

    def begin_execution(self) -> None:
        """Reset the per-thread step counts."""
        self._executed = {}

    def choose(self, choices: Sequence[Choice], step: StepContext) -> Choice:
        """The deviation for this point if it is available, else the default."""
        current = -1 if step.current is None else step.current
        wanted = self.deviations.get((current, self._executed.get(current, 0)))
        choice = wanted if wanted is not None and wanted in choices else None
        if choice is None:
            choice = default_choice(choices, step)
        self._executed[choice.thread] = self._executed.get(choice.thread, 0) + 1
        return choice

    def end_execution(self, outcome: ExecutionOutcome) -> bool:
        """One execution per candidate."""
        return False


def _choice_candidates(failure: Failure) -> Iterator[tuple[Choice, ...]]:
    choices = failure.schedule.choices
    steps = failure.trace.steps
    n = len(choices)
    for denominator in (8, 4, 2):
        for numerator in range(1, denominator):
            yield choices[: n * numerator // denominator]
    for step in steps:
        if step.preemption and step.index > 0:
            previous = steps[step.index - 1].thread
            yield (*choices[: step.index], Choice.of(previous), *choices[step.index :])
            yield choices[: step.index] + choices[step.index + 1 :]
    for index in range(n - 1, -1, -1):
        yield choices[:index] + choices[index + 1 :]


def _default_for(step: StepRecord, current: int | None) -> Choice:
    if current is not None and current in step.enabled:
        return Choice.of(current)
    if step.enabled:
        return Choice.of(min(step.enabled))
    return Choice.of(min(step.timeouts), "timeout")


def deviations(steps: Sequence[StepRecord]) -> dict[DeviationKey, Choice]:
    """The points where the recorded choice differs from the default policy."""
    result: dict[DeviationKey, Choice] = {}
    executed: dict[int, int] = {}
    current: int | None = None
    for step in steps:
        if step.choice != _default_for(step, current):
            key = -1 if current is None else current
            result[(key, executed.get(key, 0))] = step.choice
        executed[step.thread] = executed.get(step.thread, 0) + 1
        current = step.thread
    return result


def _size(failure: Failure) -> tuple[int, int, int]:
    return (failure.trace.preemptions, len(failure.trace), len(deviations(failure.trace.steps)))


def _chunks(keys: list[DeviationKey], parts: int) -> list[list[DeviationKey]]:
    size = max(1, -(-len(keys) // parts))
    return [keys[i : i + size] for i in range(0, len(keys), size)]


class _Shrinker:
    def __init__(
        self, scenario: Scenario, failure: Failure, options: Options, budget: int, backend: Backend
    ):
        self.scenario = scenario
        self.options = options
        self.backend = backend
        self.budget = budget
        self.best = failure
        self.signature = failure.signature
        self.spent = 0
        self.tried: set[object] = set()

    def attempt(self, strategy: Strategy, key: object) -> Failure | None:
        """Run one candidate; return its failure if it is the same kind and smaller."""
        if key in self.tried or self.spent >= self.budget:
            return None
        self.tried.add(key)
        strategy.begin_execution()
        run = run_execution(
            self.scenario,
            strategy,
            self.options,
            self.best.schedule.with_choices(()),
            self.backend,
        )
        self.spent += 1
        result = run.failure()
        if (
            result is not None
            and result.signature == self.signature
            and _size(result) < _size(self.best)
        ):
            self.best = result
            return result
        return None

    def try_deviations(self, candidate: dict[DeviationKey, Choice]) -> bool:
        key = ("deviations", frozenset(candidate.items()))
        return self.attempt(DeviationStrategy(candidate), key) is not None

    def try_choices(self, candidate: tuple[Choice, ...]) -> bool:
        return (
            self.attempt(GuidedStrategy(candidate, name="shrink"), ("choices", candidate))
            is not None
        )

    def ddmin(self) -> bool:
        """Delta debugging over the deviations; True if anything improved."""
        improved = False
        parts = 2
        while self.spent < self.budget:
            current = deviations(self.best.trace.steps)
            keys = sorted(current)
            if not keys:
                break
            parts = min(parts, len(keys))
            chunks = _chunks(keys, parts)
            found = any(self.try_deviations({k: current[k] for k in c}) for c in chunks)
            if found:
                parts = 2
            elif len(chunks) > 1:
                found = any(
                    self.try_deviations({k: v for k, v in current.items() if k not in c})
                    for c in chunks
                )
                if found:
                    parts = max(parts - 1, 2)
            if found:
                improved = True
                continue
            if parts >= len(keys):
                break
            parts = min(parts * 2, len(keys))
        return improved

    def guided(self) -> bool:
        """Edits of the raw choice sequence; True if anything improved."""
        improved = False
        progress = True
        while progress and self.spent < self.budget:
            progress = any(self.try_choices(c) for c in _choice_candidates(self.best))
            improved |= progress
        return improved


def shrink_failure(
    scenario: Scenario,
    failure: Failure,
    options: Options,
    *,
    budget: int = 300,
    backend: Backend | None = None,
) -> tuple[Failure, int]:
    """Return the smallest failure found (same signature) and the executions spent.

    Alternates two passes until neither helps or the budget is spent: delta debugging
    over the deviations (for each chunk, first keep *only* that chunk, since a bug
    usually needs one or two preemptions, then try removing it), and edits of the raw
    choice sequence (truncations, a preemption replaced by continuing the preempted
    thread, single deletions) replayed leniently. Candidates run on ``backend`` (default:
    a fresh one of ``options.backend``).
    """
    if backend is None:
        with open_backend(options.backend) as fresh:
            return shrink_failure(scenario, failure, options, budget=budget, backend=fresh)
    shrinker = _Shrinker(scenario, failure, options, budget, backend)
    while shrinker.spent < budget:
        if not (shrinker.ddmin() | shrinker.guided()):
            break
    return shrinker.best, shrinker.spent

"""Replay a recorded schedule exactly, and force a prefix of choices.

:class:`ReplayStrategy` returns the recorded choices one by one; when a recorded choice
is not available it raises :class:`ScheduleDivergence` with a precise message
("step 7: expected thread 2, runnable were [0, 1]"), which the runtime reports as a
Failure of kind "divergence" instead of silently doing something else.

:class:`PrefixStrategy` forces a prefix, then hands over to another strategy (or to a
non-preemptive default): the building block for DPOR and shrinking.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from lockstep._schedule import Choice, Schedule
from lockstep.errors import InvalidArgumentType, ScheduleDivergence
from lockstep.strategies._base import ExecutionOutcome, StepContext, Strategy
from lockstep.strategies._capabilities import Capabilities

__all__ = [
    "GuidedStrategy",
    "PrefixStrategy",
    "ReplayStrategy",
    "default_choice",
    "describe_choice",
]


def describe_choice(choice: Choice) -> str:
    """``thread 2`` or ``timeout of thread 2``."""
    if choice.kind == "timeout":
        return f"timeout of thread {choice.thread}"
    return f"thread {choice.thread}"


def _runnable(step: StepContext) -> str:
    text = f"runnable were {sorted(step.enabled)}"
    if step.timeouts:
        text += f", timeouts possible for {sorted(step.timeouts)}"
    return text


def default_choice(choices: Sequence[Choice], step: StepContext) -> Choice:
    """The non-preemptive default: keep the current thread, else the lowest index.

    Run choices are preferred over timeouts. A current thread that just yielded (slept
    or timed out: :attr:`StepContext.yielded`) is kept only when no other thread can
    run, so a polling loop continued by default lets the thread it waits for run.
    """
    current = step.current
    if (
        current is not None
        and current in step.enabled
        and not step.is_preemption(Choice.of(current))
    ):
        return Choice.of(current)
    for choice in choices:
        if choice.kind == "run" and not step.is_preemption(choice):
            return choice
    return choices[0]


def _as_choices(source: Schedule | Iterable[Choice]) -> tuple[Choice, ...]:
    choices = tuple(source.choices if isinstance(source, Schedule) else source)
    for choice in choices:
        if not isinstance(choice, Choice):
            raise InvalidArgumentType(f"expected Choice values, got {choice!r}")
    return choices


class ReplayStrategy:
    """Replays ``schedule`` (a Schedule or a sequence of Choice) exactly, once."""

    name = "replay"

    def __init__(self, schedule: Schedule | Iterable[Choice]) -> None:
        self.choices = _as_choices(schedule)
        self.seed = schedule.seed if isinstance(schedule, Schedule) else None
        self.capabilities = Capabilities(name=self.name, seed=self.seed)
        self._position = 0

    def begin_execution(self) -> None:
        """Restart from the first recorded choice."""
        self._position = 0

    @property
    def consumed(self) -> int:
        """How many recorded choices the last execution used."""
        return self._position

    def choose(self, choices: Sequence[Choice], step: StepContext) -> Choice:
        """The next recorded choice; ScheduleDivergence if it is not available.

        Past the schedule's end, a step with one choice is taken (it decides
        nothing: the schedule determines it); a step with more is a divergence.
        """
        if self._position >= len(self.choices):
            if len(choices) == 1:
                return choices[0]
            raise ScheduleDivergence(
                f"step {step.step}: the schedule ended after {len(self.choices)} choices but "
                f"the execution continues; {_runnable(step)}"
            )
        wanted = self.choices[self._position]
        if wanted not in choices:
            raise ScheduleDivergence(
                f"step {step.step}: expected {describe_choice(wanted)}, {_runnable(step)}"
            )
        self._position += 1
        return wanted

    def end_execution(self, outcome: ExecutionOutcome) -> bool:
        """One execution only."""
        return False


class GuidedStrategy:
    """Follows ``choices`` (a Schedule or a sequence of Choice) leniently, one
    execution: a choice that is not offered is skipped (the next one is tried), and
    when they run out the execution goes on with :func:`default_choice`.

    For a schedule recorded on other code (a known-bug variant's, replayed on the
    core, whose switch points differ) and for shrinking, where a candidate is a
    guide, not a promise. ``name`` is what the schedule it produces records as its
    strategy. Raises InvalidArgumentType for a value that is not a Choice or a
    ``name`` that is not a str.
    """

    def __init__(self, choices: Schedule | Iterable[Choice], *, name: str = "guided") -> None:
        if not isinstance(name, str):
            raise InvalidArgumentType(f"GuidedStrategy name must be a str, got {name!r}")
        self.choices = _as_choices(choices)
        self.name = name
        self.seed: int | None = None
        self.capabilities = Capabilities(name=name)
        self._position = 0

    def begin_execution(self) -> None:
        """Start again from the first choice."""
        self._position = 0

    def choose(self, choices: Sequence[Choice], step: StepContext) -> Choice:
        """The next guiding choice that is offered, else the default."""
        while self._position < len(self.choices):
            wanted = self.choices[self._position]
            self._position += 1
            if wanted in choices:
                return wanted
        return default_choice(choices, step)

    def end_execution(self, outcome: ExecutionOutcome) -> bool:
        """One execution."""
        return False


class PrefixStrategy:
    """Forces ``prefix`` (ScheduleDivergence if impossible), then defers to ``then``.

    ``then=None`` continues with the non-preemptive :func:`default_choice`. Each
    execution replays the prefix again; ``end_execution`` returns what ``then`` returns
    (False without ``then``).
    """

    name = "prefix"

    def __init__(self, prefix: Iterable[Choice], then: Strategy | None = None) -> None:
        self.prefix = _as_choices(prefix)
        self.then = then
        # A prefix run records the seed of the strategy it hands over to.
        self.capabilities = Capabilities(
            name=self.name, seed=None if then is None else then.capabilities.seed
        )
        self.seed = self.capabilities.seed
        self._replay = ReplayStrategy(self.prefix)

    def begin_execution(self) -> None:
        """Restart the prefix."""
        self._replay.begin_execution()
        if self.then is not None:
            self.then.begin_execution()

    def choose(self, choices: Sequence[Choice], step: StepContext) -> Choice:
        """The prefix's choice while it lasts, then ``then``'s (or the default)."""
        if self._replay.consumed < len(self.prefix):
            return self._replay.choose(choices, step)
        if self.then is not None:
            return self.then.choose(choices, step)
        return default_choice(choices, step)

    def end_execution(self, outcome: ExecutionOutcome) -> bool:
        """Whatever ``then`` says (False without one)."""
        if self.then is not None:
            return self.then.end_execution(outcome)
        return False

"""The strategy protocol: how the scheduler asks "who runs next?".

At every switch point the runtime computes the *choices* (each live thread whose pending
operation can proceed contributes ``Choice(t, "run")``; each blocked thread with a
pending timed wait contributes ``Choice(t, "timeout")``) and asks the strategy to pick
one. The execution is a pure function of these picks.

Calling contract (the runtime guarantees it; strategies may rely on it):

* ``begin_execution()`` is called once before each execution, ``end_execution(outcome)``
  once after it, also after a failure; calls never overlap.
* ``choose(choices, step)`` is called at each step with ``choices`` **never empty**,
  sorted by (thread, kind) with "run" before "timeout"; it must return one of them
  (the runtime raises LockstepError otherwise).
* ``choose`` may raise :class:`lockstep.errors.StrategyFailure` (e.g. ScheduleDivergence,
  NondeterminismDetected): the execution stops and is reported as a Failure of that kind.
* ``choose`` runs on the thread that reached the switch point, with every other logical
  thread parked; it must not call lockstep primitives.
* To force a prefix of choices, a strategy simply returns them from ``choose`` for the
  first steps (see :class:`lockstep.strategies._replay.PrefixStrategy`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple, Protocol, runtime_checkable

import attrs

from lockstep._failure import Failure
from lockstep._schedule import Choice
from lockstep._trace import OpDescriptor, StepRecord
from lockstep.errors import InvalidArgumentType
from lockstep.strategies._capabilities import Capabilities

__all__ = [
    "NONDETERMINISM_CAUSES",
    "Capabilities",
    "ExecutionOutcome",
    "StepContext",
    "Strategy",
    "check_strategy",
    "check_timeouts",
    "is_preemption",
    "runs_first",
]

NONDETERMINISM_CAUSES = (
    "the scenario is not a pure function of its schedule. Common causes: iterating a "
    "set of objects hashed by id(), whose order changes from one execution to the next "
    "(concurrent.futures.wait() and as_completed() build one from their futures; "
    "lockstep's own threads and primitives hash alike in every execution); time, "
    "randomness or threads of modules that are not patched; state kept from an earlier "
    "execution. Random and PCT search do not need a deterministic scenario to find "
    "failures"
)
"""The end of every "nondeterminism" message: what usually causes it, and what to do."""


class StepContext(NamedTuple):
    """What a strategy may know at one step.

    ``step``: 0-based index of the choice being made (== number of steps so far).
    ``current``: the thread that ran the previous step (None at step 0).
    ``enabled``: threads whose pending operation can run now.
    ``timeouts``: blocked threads that can fire a pending timeout now.
    ``pending``: every live thread's pending operation (enabled and blocked), with its
    kind, resource key (dependency: PrimitiveId, checkpoint resource or None) and label.
    ``thread_names``: names of all threads created so far, by index.
    ``clock``: virtual monotonic time now.
    ``yielded``: the current thread's last step was a *yield*: a ``sleep``, or a timed
    wait that timed out. Time passed for it, so a fair scheduler lets the others run:
    switching away is then no preemption, and continuing it while another thread can
    run is one (:meth:`is_preemption`). This keeps a polling loop (``while not done:
    sleep(0.01)``, ``while not event.wait(0.1)``) from starving the thread it waits
    for: DFS and DPOR bound such continuations like any preemption, PCT demotes a
    thread that yields.

    An immutable record like the others, but a ``NamedTuple`` rather than an attrs
    class: the scheduler builds one at every step, and a tuple is the record CPython
    builds fastest (about a quarter of the cost of a frozen attrs instance).
    """

    step: int
    current: int | None
    enabled: frozenset[int]
    timeouts: frozenset[int]
    pending: Mapping[int, OpDescriptor]
    thread_names: tuple[str, ...]
    clock: float
    yielded: bool = False

    @property
    def thread_count(self) -> int:
        """Number of threads created so far in this execution."""
        return len(self.thread_names)

    def is_preemption(self, choice: Choice) -> bool:
        """Would ``choice`` preempt the current thread (it is enabled and not chosen)?

        After a yield (:attr:`yielded`) the roles swap: switching away is free, and
        continuing the thread that yielded while another thread can run is the
        preemption.
        """
        return is_preemption(self.current, self.enabled, self.yielded, choice.thread)


@attrs.frozen(slots=True)
class ExecutionOutcome:
    """What happened in one execution, given to ``end_execution``.

    ``choices``: the choices made, in order (== schedule). ``steps``: per step the
    executing thread, its operation (kind, resource key, label, location), the enabled
    set, the timeouts and every live thread's pending operation: a read-only sequence
    (the scheduler builds the records on first access; ``len`` is free). ``failure``: the failure
    (None when the execution passed).
    """

    choices: tuple[Choice, ...]
    steps: Sequence[StepRecord]
    failure: Failure | None

    @property
    def failed(self) -> bool:
        """True when the execution failed."""
        return self.failure is not None


@runtime_checkable
class Strategy(Protocol):
    """Picks the next choice at each step. One implementation per file.

    ``capabilities`` (a :class:`Capabilities`, usually a class attribute, or a property
    when it depends on the constructor's arguments) declares what explore() reads of a
    strategy: the name and seed a schedule records, whether the search is systematic
    (and up to which preemption bound), whether it reduces, PCT's probability bound.
    It is part of the protocol: a strategy without it is refused (an InvalidArgumentType
    saying what to declare), so no fact falls back to a default unnoticed;
    ``Capabilities()`` declares a sampler named by its class.

    Contract: ``choices`` is never empty; ``choose`` returns one of its elements.
    ``end_execution`` returns False when no more executions are wanted (for a bounded
    exhaustive strategy: the space is exhausted).
    """

    @property
    def capabilities(self) -> Capabilities:
        """What the strategy declares about itself (see :class:`Capabilities`)."""
        ...

    def begin_execution(self) -> None:
        """Called before each execution."""

    def choose(self, choices: Sequence[Choice], step: StepContext) -> Choice:
        """Return one element of ``choices`` (never empty)."""
        ...

    def end_execution(self, outcome: ExecutionOutcome) -> bool:
        """Called after each execution; False means "no more executions wanted"."""
        ...


def check_strategy(strategy: object) -> Capabilities:
    """``strategy``'s declared capabilities, once it is known to be a Strategy.

    Raises InvalidArgumentType naming what is missing: one of the three methods, or a
    ``capabilities`` that is not a :class:`Capabilities`.
    """
    if not isinstance(strategy, Strategy):
        raise InvalidArgumentType(
            "strategy must implement lockstep.strategies.Strategy (begin_execution/choose/"
            "end_execution, and capabilities = lockstep.strategies.Capabilities(...), "
            f"Capabilities() for a sampler), got {strategy!r}"
        )
    capabilities = strategy.capabilities
    if not isinstance(capabilities, Capabilities):
        raise InvalidArgumentType(
            f"{type(strategy).__name__}.capabilities must be a lockstep.strategies."
            f"Capabilities, got {capabilities!r}"
        )
    return capabilities


def check_timeouts(owner: str, timeouts: object) -> bool:
    """Validate the ``timeouts`` knob every strategy takes (InvalidArgumentType if not a bool)."""
    if not isinstance(timeouts, bool):
        raise InvalidArgumentType(f"{owner}: timeouts must be True or False, got {timeouts!r}")
    return timeouts


def is_preemption(current: int | None, enabled: frozenset[int], yielded: bool, thread: int) -> bool:
    """Whether running ``thread`` next is a preemption (:meth:`StepContext.is_preemption`)."""
    if current is None:
        return False
    if yielded:
        return thread == current and any(other != current for other in enabled)
    return thread != current and current in enabled


def runs_first(choices: Sequence[Choice]) -> Sequence[Choice]:
    """``choices`` without its timeouts when some thread can run (``timeouts=False``: a
    timed wait times out only when nothing else can happen, as if time were unbounded)."""
    runs = [c for c in choices if c.kind == "run"]
    return runs if runs else choices

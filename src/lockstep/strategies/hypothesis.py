"""Schedules drawn from Hypothesis data: shrinkable, and replayed from Hypothesis' database.

Hypothesis' stateful and property tests control inputs but not thread schedules, so a
failure that depends on an interleaving is reported as flaky.  Drawing *every*
scheduling choice from the test's Hypothesis data turns the schedule into ordinary
test input: Hypothesis explores it, shrinks a failing one, stores it in its example
database and replays it on the next run, like any other input.

At each step with more than one choice, :class:`HypothesisStrategy` orders the
choices so that index 0 is the *non-preemptive* one (the current thread continues
if it can, else the lowest thread) and draws an index with
``integers(0, len(choices) - 1)``.  Hypothesis shrinks integers towards 0, so
shrinking removes preemptions first and the minimal failing schedule is the one
with the fewest context switches (Lincheck's "fewest switches first", obtained for
free).  Steps with a single choice draw nothing, so the data stays short.

The runtime calls ``choose`` on the logical thread that reached the switch point,
which is not the thread running the test; Hypothesis' public ``data.draw`` refuses
to run outside the test's thread (it records notes), so draws go straight to the
underlying ``ConjectureData`` when it is available (exactly one thread touches it
at a time: the test thread is parked inside ``explore`` meanwhile).

Use :func:`run_under_hypothesis` inside an ``@given(st.data())`` test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Unpack

import hypothesis.strategies as st

from lockstep._explore import explore
from lockstep._results import ExplorationFailed, ExploreResult
from lockstep._schedule import Choice
from lockstep._settings import Settings, SettingsChanges, settings_with
from lockstep.errors import InvalidArgumentType
from lockstep.strategies._base import ExecutionOutcome, StepContext, check_timeouts, runs_first
from lockstep.strategies._capabilities import Capabilities

__all__ = ["HypothesisStrategy", "run_under_hypothesis"]


class HypothesisStrategy:
    """Draw each scheduling choice from Hypothesis data (``st.data()``'s object).

    ``draws`` counts the choices drawn so far (steps with one choice draw
    nothing).  ``end_execution`` returns False: one Hypothesis example is one
    execution.  Not thread-safe beyond the runtime's contract (calls never
    overlap).  ``timeouts=False`` fires a pending timeout only when nothing can run.
    Raises ``InvalidArgumentType`` when ``data`` has no ``draw`` or ``timeouts`` is not
    a bool.
    """

    name = "hypothesis"
    seed: int | None = None
    capabilities = Capabilities(name="hypothesis")

    def __init__(self, data: Any, *, timeouts: bool = True) -> None:
        if not callable(getattr(data, "draw", None)):
            raise InvalidArgumentType(
                f"HypothesisStrategy needs the object of hypothesis.strategies.data() "
                f"(something with .draw), got {data!r}"
            )
        self._data = data
        self.timeouts = check_timeouts("HypothesisStrategy", timeouts)
        # The underlying ConjectureData draws without recording notes, so it works
        # from the runtime's threads; fall back to the public draw otherwise.
        conjecture = getattr(data, "conjecture_data", None)
        draw = getattr(conjecture, "draw", None)
        self._draw: Callable[[st.SearchStrategy[int]], int] = draw if callable(draw) else data.draw
        self._ranges: dict[int, st.SearchStrategy[int]] = {}
        self.draws = 0

    def __repr__(self) -> str:
        return f"<HypothesisStrategy draws={self.draws}>"

    def begin_execution(self) -> None:
        """Nothing to reset: every choice comes from the data."""

    def choose(self, choices: Sequence[Choice], step: StepContext) -> Choice:
        """Draw an index; 0 (what shrinking moves towards) never preempts."""
        if not self.timeouts:
            choices = runs_first(choices)
        if len(choices) == 1:
            return choices[0]
        # Index 0: no preemption, the current thread if it can go on, timeouts last.
        ordered = sorted(
            choices,
            key=lambda c: (
                step.is_preemption(c),
                c.kind == "timeout",
                c.thread != step.current,
                c.thread,
            ),
        )
        n = len(ordered)
        strategy = self._ranges.get(n)
        if strategy is None:
            strategy = self._ranges[n] = st.integers(0, n - 1)
        index = self._draw(strategy)
        self.draws += 1
        return ordered[index]

    def end_execution(self, outcome: ExecutionOutcome) -> bool:
        """One execution per Hypothesis example."""
        return False


def run_under_hypothesis(
    scenario: Callable[[], object],
    data: Any,
    settings: Settings | None = None,
    *,
    invariant: Callable[[], object] | Sequence[Callable[[], object]] | None = None,
    patch: Iterable[Any] = (),
    scenario_id: str | None = None,
    timeouts: bool = True,
    **changes: Unpack[SettingsChanges],
) -> ExploreResult:
    """Run one execution of ``scenario`` with every choice drawn from ``data``.

    Call it inside ``@given(st.data())``; a failing execution raises
    :class:`lockstep.ExplorationFailed` (an ``AssertionError`` whose message is the
    failure with its trace and replay command), so Hypothesis shrinks the schedule
    and saves it in its database.  lockstep's own shrinking is off: Hypothesis
    shrinks.  ``settings`` and keyword ``changes`` (``max_steps``, ``races``, ...) as for
    :func:`lockstep.explore`, except that the budget is one execution, unshrunk, without
    a progress line; ``timeouts`` as for :class:`HypothesisStrategy`. Arguments are
    validated as :func:`lockstep.explore` does.
    """
    result = explore(
        scenario,
        settings_with(settings, changes).replace(budget=1, shrink=False, progress=False),
        strategy=HypothesisStrategy(data, timeouts=timeouts),
        invariant=invariant,
        patch=patch,
        scenario_id=scenario_id,
    )
    if result.failure is not None:
        raise ExplorationFailed(result.failure)
    return result

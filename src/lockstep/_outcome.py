"""What a replay of a saved schedule showed: one of four outcomes, each its own exit code.

A schedule saved from a failing execution records what failed
(``Schedule.failure``: kind and label).  Replaying it (``lockstep.replay``) then
ends in exactly one of:

* ``reproduced`` (exit 1): the same failure again, same kind and label (the same
  invariant, the same exception type).  A schedule that records no failure (written
  before lockstep recorded it) reproduces on any failure that is not a divergence;
* ``different failure`` (exit 3): it failed, but not as recorded;
* ``diverged`` (exit 4): the code no longer takes a recorded step (a thread the
  schedule picks is not runnable, or the execution ends before or after the
  schedule does): the code changed there, so the recorded bug may be fixed; the
  schedule must be re-recorded to say anything more;
* ``passed`` (exit 0): it ran to the end, every recorded step taken, no failure.

`classify_replay` decides; `combined_exit_code` is the exit code of several replays:
the code of the first outcome present in ``different failure``, ``reproduced``,
``diverged``, ``passed`` (what most needs a look first).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final, Literal

import attrs

from lockstep._failure import Failure
from lockstep._results import ExecutionResult
from lockstep._schedule import RecordedFailure, Schedule
from lockstep.errors import InvalidArgumentType

__all__ = [
    "REPLAY_EXIT_CODES",
    "REPLAY_OUTCOMES",
    "ReplayOutcome",
    "ReplayOutcomeName",
    "classify_replay",
    "combined_exit_code",
]

ReplayOutcomeName = Literal["reproduced", "different failure", "diverged", "passed"]

REPLAY_OUTCOMES: Final[tuple[ReplayOutcomeName, ...]] = (
    "different failure",
    "reproduced",
    "diverged",
    "passed",
)
"""The outcomes, most urgent first (the order `combined_exit_code` uses)."""

REPLAY_EXIT_CODES: Final[dict[ReplayOutcomeName, int]] = {
    "passed": 0,
    "reproduced": 1,
    "different failure": 3,
    "diverged": 4,
}
"""The exit code of ``lockstep replay`` for each outcome (2 stays the usage error)."""

_STEP: Final = re.compile(r"^step (\d+): ")


@attrs.frozen
class ReplayOutcome:
    """One replay's outcome: `name` (see the module docstring), `exit_code`, `headline`
    (one line saying what happened, starting with the name), `brief` (a few words for
    a table row: "invariant I4", "at step 7"), the `recorded` failure the schedule
    expected (None: it records none) and the replay's `failure` (None: it passed)."""

    name: ReplayOutcomeName
    exit_code: int
    headline: str
    brief: str
    recorded: RecordedFailure | None
    failure: Failure | None = attrs.field(eq=False)


def classify_replay(schedule: Schedule, result: ExecutionResult) -> ReplayOutcome:
    """The outcome of ``result = lockstep.replay(scenario, schedule)``.

    Raises InvalidArgumentType when `schedule` is not a Schedule or `result` not an
    ExecutionResult.
    """
    if not isinstance(schedule, Schedule):
        raise InvalidArgumentType(f"schedule must be a lockstep.Schedule, got {schedule!r}")
    if not isinstance(result, ExecutionResult):
        raise InvalidArgumentType(f"result must be a lockstep.ExecutionResult, got {result!r}")
    recorded = schedule.failure
    expected = "no failure recorded" if recorded is None else f"recorded {recorded.describe()}"
    failure = result.failure
    if failure is None:
        if recorded is None:
            headline = f"passed: {result.steps} steps, no failure"
        else:
            headline = (
                f"passed: every recorded step taken, no failure ({expected}): the bug may be fixed"
            )
        return _outcome("passed", headline, expected, recorded, None)
    if failure.kind == "divergence":
        match = _STEP.match(failure.message)
        where = f" at step {match.group(1)}" if match else ""
        detail = _STEP.sub("", failure.message)
        headline = (
            f"diverged{where}: the code no longer takes the recorded step ({detail}); "
            f"the code changed here: the bug may be fixed; re-record ({expected})"
        )
        brief = f"{where.strip() or 'at the end'} ({expected})"
        return _outcome("diverged", headline, brief, recorded, failure)
    got = RecordedFailure(*failure.signature)
    if recorded is None or got == recorded:
        what = got.describe() if recorded is None else f"the recorded {recorded.describe()}"
        return _outcome("reproduced", f"reproduced: {what}", got.describe(), recorded, failure)
    brief = f"{got.describe()}, {expected}"
    return _outcome("different failure", f"different failure: {brief}", brief, recorded, failure)


def _outcome(
    name: ReplayOutcomeName,
    headline: str,
    brief: str,
    recorded: RecordedFailure | None,
    failure: Failure | None,
) -> ReplayOutcome:
    return ReplayOutcome(name, REPLAY_EXIT_CODES[name], headline, brief, recorded, failure)


def combined_exit_code(outcomes: Iterable[ReplayOutcome]) -> int:
    """The exit code of several replays: that of the most urgent outcome among them
    (`REPLAY_OUTCOMES` order); 0 when there are none."""
    names = {outcome.name for outcome in outcomes}
    for name in REPLAY_OUTCOMES:
        if name in names:
            return REPLAY_EXIT_CODES[name]
    return 0

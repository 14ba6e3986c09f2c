"""The exceptions lockstep raises: one root, builtin mix-ins where the meaning is shared.

Every public entry point validates its arguments and raises one of these with the
offending value and what was expected; nothing changes state when it does.

`InvalidArgument` and `InvalidArgumentType` have namesakes in `modelmanager.errors` on
purpose: lockstep and the model manager never import each other (lockstep knows
nothing of models, the core nothing of its test harness), and each package's errors
share one root, so ``except LockstepError`` catches every error lockstep raises.  A
shared class would need a third package both depend on, for two lines; both derive
from the same builtins (``ValueError``, and ``TypeError`` for the type error), which
is what a caller that handles either catches.
"""

from __future__ import annotations

__all__ = [
    "BackendUnavailable",
    "InvalidArgument",
    "InvalidArgumentType",
    "LockstepError",
    "NondeterminismDetected",
    "NotInRunError",
    "ScenarioImportError",
    "ScheduleDivergence",
    "ScheduleExistsError",
    "ScheduleFormatError",
    "SchedulingError",
    "StrategyFailure",
    "UncontrolledThread",
    "UnsupportedScheduleVersion",
]


class LockstepError(Exception):
    """Root of every error lockstep raises on purpose."""


class InvalidArgument(LockstepError, ValueError):
    """An argument has the right type but a value lockstep cannot use."""


class InvalidArgumentType(InvalidArgument, TypeError):
    """An argument has the wrong type."""


class BackendUnavailable(LockstepError):
    """The requested backend cannot run here: greenlet is not installed, or importing it
    would turn the GIL of a free-threaded CPython back on (the message says which, and
    names the thread backend)."""


class NotInRunError(LockstepError, RuntimeError):
    """An operation that only makes sense inside a lockstep run was called outside one."""


class UncontrolledThread(LockstepError, RuntimeError):
    """A real OS thread was started inside a run (a ``threading.Thread`` whose class or
    module lockstep did not patch): it would run outside lockstep's control."""


class ScenarioImportError(LockstepError, ImportError):
    """A scenario id ("module:qualname") could not be imported or resolved."""


class SchedulingError(LockstepError):
    """Root of the errors about schedules: files, strings, versions, replay."""


class ScheduleFormatError(SchedulingError, ValueError):
    """A schedule file or string is malformed (the message says which field and why)."""


class UnsupportedScheduleVersion(ScheduleFormatError):
    """A schedule was written in a format version this lockstep cannot read."""


class ScheduleExistsError(SchedulingError, FileExistsError):
    """Schedule.save() refuses to overwrite an existing file (files are created exclusively)."""


class StrategyFailure(SchedulingError):
    """Raised by a strategy's ``choose`` to end the execution with a failure of ``kind``.

    The runtime catches it and turns it into a :class:`lockstep.Failure` of that kind
    (e.g. "divergence" for replay, "nondeterminism" for the determinism check).
    """

    kind: str = "divergence"


class ScheduleDivergence(StrategyFailure):
    """Replay met a step where the recorded choice is not available."""

    kind = "divergence"


class NondeterminismDetected(StrategyFailure):
    """The same choices led to different choice sets: the scenario is not deterministic."""

    kind = "nondeterminism"

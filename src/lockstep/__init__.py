"""lockstep: a deterministic scheduler for threaded Python code.

Run unmodified threaded code with exactly one thread running at a time, choose every
context switch, record the choices as a schedule, replay it exactly, explore many
schedules, shrink a failure and render it.

This namespace is the documented public API (``docs/api.md``; a test checks that
``__all__`` is exactly that set). Further public namespaces: :mod:`lockstep.threading`,
:mod:`lockstep.queue` and :mod:`lockstep.time` (the controlled stand-ins, with the
standard modules' API), :mod:`lockstep.strategies`, :mod:`lockstep.errors`,
:mod:`lockstep.linearizability`, :mod:`lockstep.report`, :mod:`lockstep.suites`,
:mod:`lockstep.lowlevel` and :mod:`lockstep.pytest_plugin`. Modules whose names start
with ``_`` are the implementation: they may change in any release.
"""

from lockstep import errors as errors
from lockstep import linearizability as linearizability
from lockstep import lowlevel as lowlevel
from lockstep import queue as queue
from lockstep import report as report
from lockstep import strategies as strategies
from lockstep import threading as threading
from lockstep import time as time
from lockstep._explore import explore as explore
from lockstep._explore import replay as replay
from lockstep._failure import Failure as Failure
from lockstep._memory._watch import watch as watch
from lockstep._outcome import ReplayOutcome as ReplayOutcome
from lockstep._outcome import classify_replay as classify_replay
from lockstep._patching import patched as patched
from lockstep._primitives import spawn as spawn
from lockstep._results import ExecutionResult as ExecutionResult
from lockstep._results import ExplorationFailed as ExplorationFailed
from lockstep._results import ExploreResult as ExploreResult
from lockstep._results import Verdict as Verdict
from lockstep._runtime import add_invariant as add_invariant
from lockstep._runtime import checkpoint as checkpoint
from lockstep._runtime import in_run as in_run
from lockstep._schedule import RecordedFailure as RecordedFailure
from lockstep._schedule import Schedule as Schedule
from lockstep._settings import Settings as Settings
from lockstep._version import LOCKSTEP_VERSION
from lockstep.errors import InvalidArgument as InvalidArgument
from lockstep.errors import LockstepError as LockstepError
from lockstep.strategies import DFSStrategy as DFSStrategy
from lockstep.strategies import DporStrategy as DporStrategy
from lockstep.strategies import PCTStrategy as PCTStrategy
from lockstep.strategies import RandomStrategy as RandomStrategy
from lockstep.strategies import ReplayStrategy as ReplayStrategy
from lockstep.strategies import Strategy as Strategy

__version__ = LOCKSTEP_VERSION

__all__ = [
    "DFSStrategy",
    "DporStrategy",
    "ExecutionResult",
    "ExplorationFailed",
    "ExploreResult",
    "Failure",
    "InvalidArgument",
    "LockstepError",
    "PCTStrategy",
    "RandomStrategy",
    "RecordedFailure",
    "ReplayOutcome",
    "ReplayStrategy",
    "Schedule",
    "Settings",
    "Strategy",
    "Verdict",
    "__version__",
    "add_invariant",
    "checkpoint",
    "classify_replay",
    "explore",
    "in_run",
    "patched",
    "replay",
    "spawn",
    "watch",
]

"""lockstep: a deterministic scheduler for threaded Python code.

Run unmodified threaded code with exactly one thread running at a time, choose every
context switch, record the choices as a schedule, replay it exactly, explore many
schedules, shrink a failure and render it. Only re-exports live here; each module
states its contracts.
"""

from lockstep._version import LOCKSTEP_VERSION as LOCKSTEP_VERSION
from lockstep.barrier import Barrier as Barrier
from lockstep.errors import InvalidArgument as InvalidArgument
from lockstep.errors import InvalidArgumentType as InvalidArgumentType
from lockstep.errors import LockstepError as LockstepError
from lockstep.errors import NondeterminismDetected as NondeterminismDetected
from lockstep.errors import NotInRunError as NotInRunError
from lockstep.errors import ScenarioImportError as ScenarioImportError
from lockstep.errors import ScheduleDivergence as ScheduleDivergence
from lockstep.errors import ScheduleExistsError as ScheduleExistsError
from lockstep.errors import ScheduleFormatError as ScheduleFormatError
from lockstep.errors import SchedulingError as SchedulingError
from lockstep.errors import StrategyFailure as StrategyFailure
from lockstep.errors import UnsupportedScheduleVersion as UnsupportedScheduleVersion
from lockstep.explore import explore as explore
from lockstep.explore import replay as replay
from lockstep.failure import BlockedThread as BlockedThread
from lockstep.failure import Failure as Failure
from lockstep.linearizability import CheckResult as CheckResult
from lockstep.linearizability import HistoryRecorder as HistoryRecorder
from lockstep.linearizability import Operation as Operation
from lockstep.linearizability import check_linearizability as check_linearizability
from lockstep.patching import patched as patched
from lockstep.primitives import BoundedSemaphore as BoundedSemaphore
from lockstep.primitives import Condition as Condition
from lockstep.primitives import Event as Event
from lockstep.primitives import Lock as Lock
from lockstep.primitives import RLock as RLock
from lockstep.primitives import Semaphore as Semaphore
from lockstep.primitives import Thread as Thread
from lockstep.primitives import Timer as Timer
from lockstep.primitives import spawn as spawn
from lockstep.queues import LifoQueue as LifoQueue
from lockstep.queues import PriorityQueue as PriorityQueue
from lockstep.queues import Queue as Queue
from lockstep.results import ExecutionResult as ExecutionResult
from lockstep.results import ExplorationFailed as ExplorationFailed
from lockstep.results import ExploreResult as ExploreResult
from lockstep.runtime import add_invariant as add_invariant
from lockstep.runtime import checkpoint as checkpoint
from lockstep.runtime import in_run as in_run
from lockstep.schedule import Choice as Choice
from lockstep.schedule import Schedule as Schedule
from lockstep.strategies import CountingStrategy as CountingStrategy
from lockstep.strategies import DeterminismCheck as DeterminismCheck
from lockstep.strategies import DFSStrategy as DFSStrategy
from lockstep.strategies import DporStrategy as DporStrategy
from lockstep.strategies import ExecutionOutcome as ExecutionOutcome
from lockstep.strategies import PCTStrategy as PCTStrategy
from lockstep.strategies import PrefixStrategy as PrefixStrategy
from lockstep.strategies import RandomStrategy as RandomStrategy
from lockstep.strategies import ReplayStrategy as ReplayStrategy
from lockstep.strategies import StepContext as StepContext
from lockstep.strategies import Strategy as Strategy
from lockstep.strategies import make_strategy as make_strategy
from lockstep.trace import OpDescriptor as OpDescriptor
from lockstep.trace import PrimitiveId as PrimitiveId
from lockstep.trace import StepRecord as StepRecord
from lockstep.trace import Trace as Trace

__version__ = LOCKSTEP_VERSION

__all__ = [
    "LOCKSTEP_VERSION",
    "Barrier",
    "BlockedThread",
    "BoundedSemaphore",
    "CheckResult",
    "Choice",
    "Condition",
    "CountingStrategy",
    "DFSStrategy",
    "DeterminismCheck",
    "DporStrategy",
    "Event",
    "ExecutionOutcome",
    "ExecutionResult",
    "ExplorationFailed",
    "ExploreResult",
    "Failure",
    "HistoryRecorder",
    "InvalidArgument",
    "InvalidArgumentType",
    "LifoQueue",
    "Lock",
    "LockstepError",
    "NondeterminismDetected",
    "NotInRunError",
    "OpDescriptor",
    "Operation",
    "PCTStrategy",
    "PrefixStrategy",
    "PrimitiveId",
    "PriorityQueue",
    "Queue",
    "RLock",
    "RandomStrategy",
    "ReplayStrategy",
    "ScenarioImportError",
    "Schedule",
    "ScheduleDivergence",
    "ScheduleExistsError",
    "ScheduleFormatError",
    "SchedulingError",
    "Semaphore",
    "StepContext",
    "StepRecord",
    "Strategy",
    "StrategyFailure",
    "Thread",
    "Timer",
    "Trace",
    "UnsupportedScheduleVersion",
    "__version__",
    "add_invariant",
    "check_linearizability",
    "checkpoint",
    "explore",
    "in_run",
    "make_strategy",
    "patched",
    "replay",
    "spawn",
]

"""lockstep: a deterministic scheduler for threaded Python code.

Only re-exports live here; see each module for contracts.
"""

from lockstep.errors import (
    InvalidArgument as InvalidArgument,
)
from lockstep.errors import (
    InvalidArgumentType as InvalidArgumentType,
)
from lockstep.errors import (
    LockstepError as LockstepError,
)
from lockstep.errors import (
    NotInRunError as NotInRunError,
)
from lockstep.errors import (
    ScheduleExistsError as ScheduleExistsError,
)
from lockstep.errors import (
    ScheduleFormatError as ScheduleFormatError,
)
from lockstep.errors import (
    SchedulingError as SchedulingError,
)
from lockstep.errors import (
    UnsupportedScheduleVersion as UnsupportedScheduleVersion,
)
from lockstep.failure import Failure as Failure
from lockstep.runtime import add_invariant as add_invariant
from lockstep.runtime import checkpoint as checkpoint
from lockstep.schedule import Choice as Choice
from lockstep.schedule import Schedule as Schedule
from lockstep.trace import Trace as Trace

__all__ = [
    "Choice",
    "Failure",
    "InvalidArgument",
    "InvalidArgumentType",
    "LockstepError",
    "NotInRunError",
    "Schedule",
    "ScheduleExistsError",
    "ScheduleFormatError",
    "SchedulingError",
    "Trace",
    "UnsupportedScheduleVersion",
    "add_invariant",
    "checkpoint",
]

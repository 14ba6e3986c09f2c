"""A stand-in for the ``threading`` module whose primitives are lockstep's.

``patched(module)`` puts this module where ``module`` had ``threading``, so code that
calls ``threading.Lock()`` gets a controlled lock. Every name not defined here falls
back to the real ``threading`` module; outside a run everything behaves like the real
thing.
"""

from __future__ import annotations

import threading as _threading
from typing import Any

from lockstep._barrier import Barrier, BrokenBarrierError
from lockstep._local import local
from lockstep._primitives import (
    TIMEOUT_MAX,
    BoundedSemaphore,
    Condition,
    Event,
    Lock,
    RLock,
    Semaphore,
    Thread,
    Timer,
    active_count,
    current_thread,
    enumerate_threads,
    get_ident,
    get_native_id,
    main_thread,
)

__all__ = [
    "TIMEOUT_MAX",
    "Barrier",
    "BoundedSemaphore",
    "BrokenBarrierError",
    "Condition",
    "Event",
    "Lock",
    "RLock",
    "Semaphore",
    "Thread",
    "Timer",
    "active_count",
    "current_thread",
    "enumerate",
    "get_ident",
    "get_native_id",
    "local",
    "main_thread",
]

enumerate = enumerate_threads  # mirrors threading.enumerate (shadowing is the point)


def __getattr__(name: str) -> Any:
    return getattr(_threading, name)

"""A stand-in for the ``time`` module with lockstep's virtual clock.

monotonic/perf_counter/time (and their _ns forms) and sleep are virtual inside a run
(see :mod:`lockstep._clock`); every other name is the real ``time`` module's.
"""

from __future__ import annotations

import time as _time
from typing import Any

from lockstep._clock import (
    monotonic,
    monotonic_ns,
    perf_counter,
    perf_counter_ns,
    sleep,
    time,
    time_ns,
)

__all__ = [
    "monotonic",
    "monotonic_ns",
    "perf_counter",
    "perf_counter_ns",
    "sleep",
    "time",
    "time_ns",
]


def __getattr__(name: str) -> Any:
    return getattr(_time, name)

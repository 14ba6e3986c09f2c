"""A stand-in for the ``queue`` module whose queues are built on lockstep primitives."""

from __future__ import annotations

import queue as _queue
from typing import Any

from lockstep._queues import Empty, Full, LifoQueue, PriorityQueue, Queue, SimpleQueue

__all__ = ["Empty", "Full", "LifoQueue", "PriorityQueue", "Queue", "SimpleQueue"]


def __getattr__(name: str) -> Any:
    return getattr(_queue, name)

"""queue.Queue and friends built on lockstep's primitives (so they are controlled).

The algorithm is the standard one (a mutex and three conditions: not_empty, not_full,
all_tasks_done); timeouts are measured on lockstep's clock, which is virtual inside a
run and real outside, so these queues work in both modes. Raises queue.Empty /
queue.Full (the standard exceptions), and ValueError for a negative timeout and for
too many task_done() calls, with CPython's messages.

Unlike a lock, a queue holds data: its items and unfinished-task count are *not*
reset between executions, so build queues inside the scenario (a queue shared by all
executions makes them depend on each other; DeterminismCheck reports that).
"""

from __future__ import annotations

import heapq
import queue as _real_queue
import types
from collections import deque
from typing import TYPE_CHECKING, Any, TypeVar

from lockstep import _clock
from lockstep._primitives import Condition, Lock

__all__ = ["Empty", "Full", "LifoQueue", "PriorityQueue", "Queue", "SimpleQueue"]

Empty = _real_queue.Empty
Full = _real_queue.Full
_T = TypeVar("_T")

if TYPE_CHECKING:
    from typing import Generic as _Subscriptable
else:

    class _Subscriptable:
        """``Queue[int]`` at run time without ``typing.Generic`` in the MRO: the real
        ``queue.Queue`` has none either, so a class that subclasses it can have its base
        swapped for this one (``__bases__`` assignment needs the same instance layout;
        :func:`lockstep._patching.patched`)."""

        def __class_getitem__(cls, item: Any) -> Any:
            return types.GenericAlias(cls, item)


class Queue(_Subscriptable[_T]):
    """queue.Queue: FIFO, optionally bounded by ``maxsize`` (<= 0: unbounded)."""

    def __init__(self, maxsize: int = 0) -> None:
        self.maxsize = maxsize
        self._init(maxsize)
        self.mutex = Lock()
        self.not_empty = Condition(self.mutex)
        self.not_full = Condition(self.mutex)
        self.all_tasks_done = Condition(self.mutex)
        self.unfinished_tasks = 0

    # -- storage hooks (overridden by LifoQueue / PriorityQueue) ----------------------

    def _init(self, maxsize: int) -> None:
        self.queue: Any = deque()

    def _qsize(self) -> int:
        return len(self.queue)

    def _put(self, item: _T) -> None:
        self.queue.append(item)

    def _get(self) -> _T:
        item: _T = self.queue.popleft()
        return item

    # -- API -------------------------------------------------------------------------

    def task_done(self) -> None:
        """Mark one fetched item done; ValueError if called more often than put()."""
        with self.all_tasks_done:
            unfinished = self.unfinished_tasks - 1
            if unfinished <= 0:
                if unfinished < 0:
                    raise ValueError("task_done() called too many times")
                self.all_tasks_done.notify_all()
            self.unfinished_tasks = unfinished

    def join(self) -> None:
        """Block until every item put has been marked done."""
        with self.all_tasks_done:
            while self.unfinished_tasks:
                self.all_tasks_done.wait()

    def qsize(self) -> int:
        """Approximate size."""
        with self.mutex:
            return self._qsize()

    def empty(self) -> bool:
        """True if empty (approximate)."""
        with self.mutex:
            return not self._qsize()

    def full(self) -> bool:
        """True if full (approximate)."""
        with self.mutex:
            return 0 < self.maxsize <= self._qsize()

    def put(self, item: _T, block: bool = True, timeout: float | None = None) -> None:
        """Put ``item``; with a full bounded queue wait (or raise Full)."""
        with self.not_full:
            if self.maxsize > 0:
                if not block:
                    if self._qsize() >= self.maxsize:
                        raise Full
                elif timeout is None:
                    while self._qsize() >= self.maxsize:
                        self.not_full.wait()
                elif timeout < 0:
                    raise ValueError("'timeout' must be a non-negative number")
                else:
                    end = _clock.monotonic() + timeout
                    while self._qsize() >= self.maxsize:
                        remaining = end - _clock.monotonic()
                        if remaining <= 0.0:
                            raise Full
                        self.not_full.wait(remaining)
            self._put(item)
            self.unfinished_tasks += 1
            self.not_empty.notify()

    def get(self, block: bool = True, timeout: float | None = None) -> _T:
        """Remove and return an item; with an empty queue wait (or raise Empty)."""
        with self.not_empty:
            if not block:
                if not self._qsize():
                    raise Empty
            elif timeout is None:
                while not self._qsize():
                    self.not_empty.wait()
            elif timeout < 0:
                raise ValueError("'timeout' must be a non-negative number")
            else:
                end = _clock.monotonic() + timeout
                while not self._qsize():
                    remaining = end - _clock.monotonic()
                    if remaining <= 0.0:
                        raise Empty
                    self.not_empty.wait(remaining)
            item = self._get()
            self.not_full.notify()
            return item

    def put_nowait(self, item: _T) -> None:
        """put(item, block=False)."""
        self.put(item, block=False)

    def get_nowait(self) -> _T:
        """get(block=False)."""
        return self.get(block=False)


class LifoQueue(Queue[_T]):
    """queue.LifoQueue: last in, first out."""

    def _init(self, maxsize: int) -> None:
        self.queue = []

    def _get(self) -> _T:
        item: _T = self.queue.pop()
        return item


class PriorityQueue(Queue[_T]):
    """queue.PriorityQueue: lowest first."""

    def _init(self, maxsize: int) -> None:
        self.queue = []

    def _put(self, item: _T) -> None:
        heapq.heappush(self.queue, item)

    def _get(self) -> _T:
        item: _T = heapq.heappop(self.queue)
        return item


class SimpleQueue(Queue[_T]):
    """queue.SimpleQueue: unbounded FIFO without task tracking."""

    def __init__(self) -> None:
        super().__init__(0)

    def put(self, item: _T, block: bool = True, timeout: float | None = None) -> None:
        """Put ``item`` (never blocks)."""
        super().put(item, block, timeout)

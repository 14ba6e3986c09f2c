"""Primitives a module binds when it is imported: defaults, class attributes, bases.

``lockstep.patched`` renames the module's globals; these were evaluated at import
time, so patching must swap them too (``lock_factory=threading.Lock`` is how
``readerwriterlock`` builds its locks; ``timer=time.monotonic`` how ``cachetools``
reads the clock; ``class Worker(threading.Thread)`` is everyday code).
"""

import queue
import threading
import time

from samples.foreign_defaults import foreign


class Gate:
    def __init__(self, lock_factory=threading.Lock, *, clock=time.monotonic):
        self._lock = lock_factory()
        self._clock = clock
        self.value = 0
        self.stamp = 0.0

    def bump(self) -> None:
        with self._lock:
            self.value += 1
            self.stamp = self._clock()

    class Inner:
        @staticmethod
        def make(factory=threading.Event):
            return factory()

        @property
        def lock(self, factory=threading.RLock):  # noqa: PLR0206 - the default is the point
            return factory()


class Ticker:
    """Holds its factory and its clock as class attributes."""

    lock_factory = threading.Lock
    clock = time.monotonic

    def __init__(self):
        self.lock = self.lock_factory()

    def now(self):
        return self.clock()


class Worker(threading.Thread):
    """A thread subclass: its base was bound when the module was imported."""

    def __init__(self, sink, lock=None):
        super().__init__()
        self.sink = sink
        self.lock = lock

    def run(self):
        if self.lock is None:
            self.sink.append("worker")
        else:
            with self.lock:
                self.sink.append("worker")


class Latch(threading.Event):
    pass


class Mailbox(queue.Queue):
    """A queue subclass: its base was bound when the module was imported."""


class Slots(threading.local):
    """A C base lockstep cannot swap: stays real (documented)."""


def make_lock(factory=threading.RLock):
    return factory()


__all__ = ["Gate", "Latch", "Mailbox", "Slots", "Ticker", "Worker", "foreign", "make_lock"]

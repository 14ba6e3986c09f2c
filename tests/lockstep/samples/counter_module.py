"""A small module written against the standard library, for patched() tests."""

import threading
import time
from threading import Lock


class Counter:
    """Increments with an optional lock; the unlocked path has a lost-update race."""

    def __init__(self, locked: bool) -> None:
        self.value = 0
        self.locked = locked
        self.lock = Lock()
        self.cond = threading.Condition()

    def increment(self) -> None:
        if self.locked:
            with self.lock:
                self._unsafe_increment()
        else:
            self._unsafe_increment()

    def _unsafe_increment(self) -> None:
        current = self.value
        time.sleep(0)  # a switch point when patched: the read-modify-write can interleave
        self.value = current + 1


def now() -> float:
    return time.monotonic()


def make_lock() -> object:
    return threading.Lock()

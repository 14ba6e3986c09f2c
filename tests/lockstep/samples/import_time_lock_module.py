"""A counter guarded by a lock made at import time (a real lock, even once patched)."""

import threading

_LOCK = threading.Lock()  # made before any patching: lockstep never controls it


class Counter:
    def __init__(self) -> None:
        self.value = 0
        self._lock = threading.Lock()  # made while patched: lockstep's

    def add_under_import_time_lock(self) -> None:
        with _LOCK:
            self.value += 1

    def add_under_own_lock(self) -> None:
        with self._lock:
            self.value += 1

"""A job scheduler that keeps its jobs in a heap (``heapq`` changes the list in C).

``Scheduler.submit`` pushes without the lock: two submitters race on the heap.
``Scheduler.submit_locked`` and ``Scheduler.take`` hold it.
"""

import heapq
import threading
from heapq import heappop


class Scheduler:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.jobs: list[tuple[int, str]] = []

    def submit(self, priority: int, name: str) -> None:
        heapq.heappush(self.jobs, (priority, name))

    def submit_locked(self, priority: int, name: str) -> None:
        with self.lock:
            heapq.heappush(self.jobs, (priority, name))

    def take(self) -> str | None:
        with self.lock:
            try:
                return heappop(self.jobs)[1]
            except IndexError:
                return None

"""QuietLog: warnings said once per key per interval, with how many were held back.

A full cache under load meets the same condition thousands of times a
second ("admitting model X over max_size"); logging each one floods the log
(12,500 lines in a 30 s soak) while the statistics already count every
event exactly. :class:`QuietLog` logs the first occurrence of a key, holds
back repeats for ``interval`` seconds, and logs the next one after that with
the number held back, so a steady condition costs one line per key per
interval and nothing is lost from the counts. Keys are small tuples such as
``("overflow", resolved_id)``; at most ``max_keys`` are remembered (the
oldest are forgotten first), so arbitrary ids cannot grow it without bound.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable

__all__ = ["QuietLog"]


class QuietLog:
    """Rate-limited warnings for one logger. Thread-safe; never blocks for long.

    ``warning(key, message, *args)`` logs ``message % args`` at WARNING the
    first time ``key`` is seen and again at most once per ``interval``
    seconds, appending "(N more since the last report)" when repeats were
    held back. Returns whether it logged.
    """

    def __init__(
        self,
        logger: logging.Logger,
        interval: float = 60.0,
        max_keys: int = 1024,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self._logger = logger
        self._interval = interval
        self._max_keys = max_keys
        self._clock = clock  # None: time.monotonic, looked up at each call
        self._lock = threading.Lock()
        # key -> [monotonic time of the last report, repeats held back since]
        self._seen: OrderedDict[Hashable, list[float]] = OrderedDict()

    def warning(self, key: Hashable, message: str, *args: object) -> bool:
        """Log ``message % args`` unless ``key`` was reported within the interval."""
        now = self._clock() if self._clock is not None else time.monotonic()
        with self._lock:
            seen = self._seen.get(key)
            if seen is not None and now - seen[0] < self._interval:
                seen[1] += 1
                return False
            held_back = int(seen[1]) if seen is not None else 0
            self._seen[key] = [now, 0]
            self._seen.move_to_end(key)
            while len(self._seen) > self._max_keys:
                self._seen.popitem(last=False)
        if held_back:
            self._logger.warning(message + " (%d more since the last report)", *args, held_back)
        else:
            self._logger.warning(message, *args)
        return True

    def held_back(self) -> int:
        """Repeats held back and not reported yet, over every key (a snapshot)."""
        with self._lock:
            return sum(int(seen[1]) for seen in self._seen.values())

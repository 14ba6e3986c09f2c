"""Process-wide hooks that stay installed while at least one lockstep session is open.

:mod:`lockstep._quiet_teardown` and :mod:`lockstep._thread_guard` replace a process-wide
callable (``logging.Logger.handle``, ``sys.unraisablehook``, ``threading.Thread.start``)
for the duration of every exploration. Sessions nest and may run concurrently, so the
replacement is counted: installed when the first session opens, removed when the last
one closes.
"""

from __future__ import annotations

import _thread
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["CountedInstall"]


class CountedInstall:
    """``install()`` when the first holder enters, ``uninstall()`` when the last leaves.

    Reentrant and thread-safe (a real lock, never a lockstep stand-in).
    """

    def __init__(self, install: Callable[[], None], uninstall: Callable[[], None]) -> None:
        self._install = install
        self._uninstall = uninstall
        self._lock = _thread.allocate_lock()
        self._depth = 0

    @contextmanager
    def held(self) -> Iterator[None]:
        """Keep the installation for the duration of the block."""
        with self._lock:
            if self._depth == 0:
                self._install()
            self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0:
                    self._uninstall()

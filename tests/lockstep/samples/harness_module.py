"""A test harness's module: it uses real locks on purpose and says so."""

import _thread

__lockstep_harness__ = True

_LOG_LOCK = _thread.allocate_lock()


class Recorder:
    def __init__(self) -> None:
        self._lock = _thread.allocate_lock()
        self.calls = 0

    def record(self) -> None:
        with self._lock:
            self.calls += 1


def call(function, recorder):  # type: ignore[no-untyped-def]
    """Run ``function`` for the harness (holding its real log lock, as harnesses do)."""
    with _LOG_LOCK:
        recorder.record()
    with _LOG_LOCK:
        return function()

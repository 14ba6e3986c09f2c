"""Virtual time: time.monotonic/time/perf_counter/sleep inside a lockstep run.

Inside an execution time stands still except when the scheduler moves it: choosing a
blocked thread's timeout jumps the clock to ``max(now, deadline)``, and a ``sleep(x)``
that starts at ``t0`` ends, when that thread is next chosen, at ``max(now, t0 + x)``.
Time never goes backwards. The clock is the execution's (``Run.clock``, moved by
the Run only); this module reads it. Outside a run every function is the real one.

The virtual clock starts at 0 for each execution; monotonic()/perf_counter() report
``1000.0 + t`` and time() reports a fixed epoch (2026-01-01T00:00Z) plus ``t``, so
executions are deterministic.
"""

from __future__ import annotations

import time as _real_time

from lockstep._runtime import current_logical_thread

__all__ = [
    "monotonic",
    "monotonic_ns",
    "perf_counter",
    "perf_counter_ns",
    "sleep",
    "time",
    "time_ns",
]

MONOTONIC_BASE = 1000.0
EPOCH = 1_767_225_600.0


def _virtual() -> float | None:
    lt = current_logical_thread()
    return None if lt is None else lt.run.clock


def monotonic() -> float:
    """time.monotonic(), virtual inside a run."""
    now = _virtual()
    return _real_time.monotonic() if now is None else MONOTONIC_BASE + now


def monotonic_ns() -> int:
    """time.monotonic_ns(), virtual inside a run."""
    now = _virtual()
    return _real_time.monotonic_ns() if now is None else int((MONOTONIC_BASE + now) * 1e9)


def perf_counter() -> float:
    """time.perf_counter(), virtual inside a run."""
    now = _virtual()
    return _real_time.perf_counter() if now is None else MONOTONIC_BASE + now


def perf_counter_ns() -> int:
    """time.perf_counter_ns(), virtual inside a run."""
    now = _virtual()
    return _real_time.perf_counter_ns() if now is None else int((MONOTONIC_BASE + now) * 1e9)


def time() -> float:
    """time.time(), virtual inside a run."""
    now = _virtual()
    return _real_time.time() if now is None else EPOCH + now


def time_ns() -> int:
    """time.time_ns(), virtual inside a run."""
    now = _virtual()
    return _real_time.time_ns() if now is None else int((EPOCH + now) * 1e9)


def sleep(secs: float) -> None:
    """time.sleep(): inside a run a switch point ("sleep") that advances the clock.

    ValueError("sleep length must be non-negative") for a negative length, as time.sleep.
    """
    lt = current_logical_thread()
    if lt is None:
        _real_time.sleep(secs)
        return
    if secs < 0:
        raise ValueError("sleep length must be non-negative")
    run = lt.run
    if run.in_invariant:
        return
    run.sleep(lt, secs)

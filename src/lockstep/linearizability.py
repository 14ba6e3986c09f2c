"""Linearizability checking: record a concurrent history, check it against a sequential spec.

A history is a list of :class:`Operation` records (process, invoke time, return time,
input, output); :class:`HistoryRecorder` builds one from inside threads.
:func:`check_linearizability` searches for a sequential order consistent with real time
that the spec accepts (Wing & Gong with Porcupine's state cache and per-key
partitions), returning a :class:`CheckResult` whose verdict is True, False or
:data:`UNKNOWN` (out of budget). The spec is a step function ``(state, input, output)
-> (ok, new_state)`` or an object with ``init()`` and ``step`` (:class:`SequentialSpec`).
"""

from lockstep._linearizability import (
    UNKNOWN,
    CheckResult,
    HistoryRecorder,
    Operation,
    PendingOperation,
    SequentialSpec,
    StepFunction,
    Verdict,
    check_linearizability,
    partition_by,
)

__all__ = [
    "UNKNOWN",
    "CheckResult",
    "HistoryRecorder",
    "Operation",
    "PendingOperation",
    "SequentialSpec",
    "StepFunction",
    "Verdict",
    "check_linearizability",
    "partition_by",
]

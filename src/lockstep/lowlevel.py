"""Low-level introspection of the running execution, for suites and invariants.

Like ``trio.lowlevel``: public and stable, but rarely needed. Everything here is cheap,
never blocks and never creates a switch point, so it is safe inside invariants (which
run with every thread stopped).
"""

from __future__ import annotations

from lockstep._primitives import Lock, RLock
from lockstep._runtime import current_logical_thread

__all__ = ["current_step", "held_by_current_thread"]


def current_step() -> int | None:
    """Steps taken so far in the current execution; None outside a run.

    Invariants registered with ``add_invariant`` all run at one switch point before the
    next step, so the value identifies "this stopped state" (e.g. to compute one snapshot
    per step and share it between several invariants).
    """
    lt = current_logical_thread()
    return None if lt is None else lt.run.step


def held_by_current_thread(lock: object) -> bool | None:
    """Whether the calling logical thread holds ``lock`` in the current execution.

    ``lock`` is a controlled ``lockstep.threading.Lock`` or ``RLock`` (what a patched
    module's ``threading.Lock()`` creates). A plain ``Lock`` has no owner in the standard
    library; here its owner is the logical thread whose ``acquire`` took it. Returns None
    outside a run or for anything else (an uncontrolled lock cannot be introspected).
    """
    lt = current_logical_thread()
    if lt is None or not isinstance(lock, Lock | RLock):
        return None
    if lock._ls_run is not lt.run:  # not used in this execution yet: free
        return False
    return lock._owner is lt

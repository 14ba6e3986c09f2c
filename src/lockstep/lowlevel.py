"""Low-level introspection of the running execution, for suites and invariants.

Like ``trio.lowlevel``: public and stable, but rarely needed. Everything here is cheap,
never blocks and never creates a switch point, so it is safe inside invariants (which
run with every thread stopped).
"""

from __future__ import annotations

import attrs

from lockstep._fastattrs import fast_constructor
from lockstep._primitives import Condition, Lock, RLock
from lockstep._runtime import LogicalThread, Run, current_logical_thread

__all__ = [
    "ThreadState",
    "current_step",
    "held_by_current_thread",
    "thread_states",
    "watched_writes",
]


def current_step() -> int | None:
    """Steps taken so far in the current execution; None outside a run.

    Invariants registered with ``add_invariant`` all run at one switch point before the
    next step, so the value identifies "this stopped state" (e.g. to compute one snapshot
    per step and share it between several invariants).
    """
    lt = current_logical_thread()
    return None if lt is None else lt.run.step


def watched_writes() -> int | None:
    """How many writes to watched state (``lockstep.watch``) the current execution has
    made so far; None outside a run or before anything is watched in it.

    Every write the race detector sees counts (an attribute assigned or deleted, a
    container changed, ``move_to_end``): equal values at two stopped states mean no
    watched state changed in between, so an invariant may reuse what it derived from
    watched state alone (state that is not watched, such as the fields of a
    ``__slots__`` object, must be read again).
    """
    lt = current_logical_thread()
    if lt is None:
        return None
    memory = lt.run.memory
    return None if memory is None else memory.writes


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


@attrs.frozen
class ThreadState:
    """What one live (unfinished) logical thread is doing at this stopped state.

    * ``name``: the thread's name; ``daemon``: whether it is a daemon thread.
    * ``runnable``: the strategy may run it now.
    * ``waiting_for``: "" when runnable; else its pending operation and resource,
      e.g. ``"Condition.wake Condition#3"`` or ``"Lock.acquire Lock#2"``.
    * ``bounded``: it is blocked in a wait with a timeout, so the strategy may choose
      to time it out (a timeout is a scheduling choice under the virtual clock).
    * ``lost_wakeup``: it is blocked in ``Condition.wait_for`` although the predicate
      it waits for holds now, the condition's lock is free and no notified waiter of
      that condition is about to run. Code that notifies under the lock every waiter
      whose predicate may have changed (``notify_all``) never leaves such a thread:
      only a notification that went to another waiter (``notify()`` picking the wrong
      one), or none at all, does. The thread stays blocked until its timeout, or for
      ever. Waits by plain ``Condition.wait`` state no predicate and are never
      judged.
    * ``due``: its wait is bounded and its time is already up (a zero timeout:
      ``acquire(timeout=0)``, ``Event.wait(0)``; a try, not a wait), so timing it out
      is the next thing that happens to it, not a wait that lasts.
    """

    name: str
    daemon: bool
    runnable: bool
    waiting_for: str
    bounded: bool
    lost_wakeup: bool
    due: bool = False


def _runnable(t: LogicalThread) -> bool:
    return t.enabled is None or bool(t.enabled())


def _woken_waiter_of(t: LogicalThread, condition: Condition) -> bool:
    """A runnable thread notified by ``condition`` that has not reacquired its lock yet."""
    pending = t.pending
    if pending is None:
        return False
    return (t.blocker is condition and pending.kind == "Condition.wake") or (
        t.blocker is condition._lock and pending.kind == "Condition.reacquire"
    )


def _lost_wakeup(run: Run, t: LogicalThread, runnable: dict[LogicalThread, bool]) -> bool:
    condition = t.blocker
    if runnable[t] or not isinstance(condition, Condition):
        return False
    predicate = condition._ls_predicates.get(t)
    pending = t.pending
    if predicate is None or pending is None or pending.kind != "Condition.wake":
        return False
    lock = condition._lock
    if not isinstance(lock, Lock) or not lock._ls_free():
        return False  # whoever holds the lock may still be about to notify
    if any(runnable[u] and _woken_waiter_of(u, condition) for u in runnable if u is not t):
        return False  # a notified waiter may consume the condition or pass it on
    saved = run.in_invariant
    run.in_invariant = True  # the predicate must not switch or block
    try:
        return bool(predicate())
    except Exception:
        return False
    finally:
        run.in_invariant = saved
        if not saved and run.memory is not None:
            run.memory.wake_after_invariants()  # what the predicate's reads quieted


_new_state = fast_constructor(ThreadState)  # built for every live thread at every step
# The state of a runnable thread, by (name, daemon): the same at every step it runs.
_ready_states: dict[tuple[str, bool], ThreadState] = {}
_READY_STATES_KEPT = 1024


def thread_states() -> tuple[ThreadState, ...] | None:
    """The live threads of the current execution, in thread order; None outside a run.

    For invariants about progress under the virtual clock: "no thread is left waiting
    for something that already holds" (any ``lost_wakeup``) and "never does every live
    thread wait, so that only a timeout can end a wait" (none ``runnable`` or
    ``due``, some ``bounded``). Predicates of ``Condition.wait_for`` are evaluated with the world
    stopped (lock operations inside them are no-ops); one that raises counts as false.
    """
    lt = current_logical_thread()
    if lt is None:
        return None
    run = lt.run
    live = [t for t in run.threads if not t.finished]
    enabled = run.enabled_now  # the scheduler's answer for this step, while it is current
    if enabled is None:
        runnable = {t: _runnable(t) for t in live}
    else:
        runnable = {t: t.index in enabled for t in live}
    states = []
    make = _new_state
    ready = _ready_states
    for t in live:
        if runnable[t]:
            # A runnable thread waits for nothing (and so has no lost wake-up): one
            # (frozen) state per name, built once.
            state = ready.get((t.name, t.daemon))
            if state is None:
                if len(ready) >= _READY_STATES_KEPT:
                    ready.clear()
                state = make(t.name, t.daemon, True, "", False, False, False)
                ready[t.name, t.daemon] = state
            states.append(state)
            continue
        pending = t.pending
        waiting = "" if pending is None else f"{pending.kind} {pending.label}"
        deadline = t.deadline
        states.append(
            make(
                t.name,
                t.daemon,
                False,
                waiting,
                deadline is not None,
                _lost_wakeup(run, t, runnable),
                deadline is not None and deadline <= run.clock,
            )
        )
    return tuple(states)

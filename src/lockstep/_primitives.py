"""Controlled stand-ins for threading's primitives, with threading's exact API.

Each class mirrors its ``threading`` counterpart (signatures, return values, the
exceptions and messages raised on misuse). Inside a lockstep execution every operation
is a switch point handled by :mod:`lockstep._runtime`; blocking is modelled by a pending
operation that is not enabled, and a timed wait offers its timeout as a scheduling
choice. Outside an execution every object delegates to a real ``threading`` object, so
code that uses these classes directly keeps working.

State per execution: a primitive used in an execution binds to it on first use (and
gets its readable id, e.g. ``Lock#2``, numbered in order of first use so ids are stable
across executions). A primitive created once and reused by many executions (a module
global) starts every execution fresh: unlocked, unset, at its initial value. Its
real-mode state (outside executions) is separate.

Inside an invariant (the world is stopped) acquire/release are no-ops and waits raise.
"""

from __future__ import annotations

import _thread
import sys
import threading as _real_threading
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, TypeVar

from lockstep import _clock
from lockstep._runtime import (
    LogicalThread,
    Run,
    code_location,
    current_logical_thread,
    user_location,
)
from lockstep._trace import PrimitiveId
from lockstep.errors import InvalidArgumentType, LockstepError

__all__ = [
    "TIMEOUT_MAX",
    "BoundedSemaphore",
    "Condition",
    "Event",
    "Lock",
    "RLock",
    "Semaphore",
    "Thread",
    "Timer",
    "active_count",
    "current_thread",
    "enumerate_threads",
    "get_ident",
    "get_native_id",
    "main_thread",
    "spawn",
]

TIMEOUT_MAX: float = _real_threading.TIMEOUT_MAX
_SPAWN_RESOURCE = PrimitiveId("Threads", 0)
# CPython reworded this message in 3.13; mirror the running interpreter.
_NEGATIVE_TIMEOUT = (
    "timeout value must be a non-negative number"
    if sys.version_info >= (3, 13)
    else "timeout value must be positive"
)
_T = TypeVar("_T")


def _no_wait_in_invariant(what: str) -> LockstepError:
    return LockstepError(
        f"{what} inside an invariant: invariants run with every thread stopped and must "
        "not block; read the state directly"
    )


def _thread_label(lt: LogicalThread) -> str:
    return f"{lt.index}:{lt.name}"


def _lock_deadline(run: Run, blocking: bool, timeout: float) -> float | None:
    """Validate Lock.acquire's arguments like CPython; the deadline (None = forever)."""
    if not blocking and timeout != -1:
        raise ValueError("can't specify a timeout for a non-blocking call")
    if timeout < 0 and timeout != -1:
        raise ValueError(_NEGATIVE_TIMEOUT)
    if timeout > TIMEOUT_MAX:
        raise OverflowError("timeout value is too large")
    if timeout == -1:
        return None
    return run.clock + timeout


def _wait_deadline(run: Run, timeout: float | None) -> float | None:
    """Deadline of a wait(timeout) (Condition, Event, join): negative means no wait."""
    if timeout is None:
        return None
    return run.clock + max(float(timeout), 0.0)


class _Bound:
    """Per-execution binding shared by all controlled primitives."""

    _ls_kind = "Primitive"

    def __init__(self) -> None:
        self._ls_run: Run | None = None
        self._ls_id = PrimitiveId(self._ls_kind, 0)
        self._ls_label = str(self._ls_id)  # str(_ls_id), kept: it labels every operation
        lt = current_logical_thread()
        # Created in a run: hashed by creation order, so that sets of primitives
        # iterate alike in every execution (Run.new_hash); equality stays identity.
        self._ls_hash = object.__hash__(self) if lt is None else lt.run.new_hash()

    def __hash__(self) -> int:
        return self._ls_hash

    def _ls_bind(self, run: Run) -> PrimitiveId:
        if self._ls_run is not run:
            self._ls_run = run
            self._ls_id = run.new_id(self._ls_kind)
            self._ls_label = str(self._ls_id)
            self._ls_reset()
        return self._ls_id

    def _ls_reset(self) -> None:
        """Reset the controlled state at the start of a new execution."""

    def _ls_holders(self, run: Run) -> list[str]:
        return []


class Lock(_Bound):
    """threading.Lock: a non-reentrant lock that any thread may release."""

    _ls_kind = "Lock"

    def __init__(self) -> None:
        super().__init__()
        self._real = _thread.allocate_lock()
        self._owner: LogicalThread | None = None

    def _ls_reset(self) -> None:
        self._owner = None

    def _ls_holders(self, run: Run) -> list[str]:
        return [] if self._owner is None else [_thread_label(self._owner)]

    def _ls_free(self) -> bool:
        return self._owner is None

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        """Acquire; block (or time out after ``timeout`` s) while another holds it."""
        lt = current_logical_thread()
        if lt is None:
            return self._real.acquire(blocking, timeout)
        run = lt.run
        # _lock_deadline's answer for the default arguments, without the call
        deadline = None if timeout == -1 and blocking else _lock_deadline(run, blocking, timeout)
        if run.in_invariant:
            return True
        rid = self._ls_bind(run)
        label = self._ls_label
        if not blocking:
            run.switch(lt, "Lock.acquire", rid, label)
            if self._owner is not None:
                return False
        elif not run.switch(
            lt, "Lock.acquire", rid, label, enabled=self._ls_free, deadline=deadline, blocker=self
        ):
            return False
        self._owner = lt
        return True

    def _ls_acquire_restore(self, lt: LogicalThread, saved: int, label: str) -> None:
        run = lt.run
        rid = self._ls_bind(run)
        run.switch(lt, "Condition.reacquire", rid, label, enabled=self._ls_free, blocker=self)
        self._owner = lt

    def _ls_release_save(self, lt: LogicalThread) -> int:
        self._owner = None
        return 1

    def _ls_owned(self, lt: LogicalThread) -> bool:
        # CPython's Condition treats a plain Lock as owned when it is locked by anyone.
        return self._owner is not None

    def release(self) -> None:
        """Release; RuntimeError("release unlocked lock") if it is not locked."""
        lt = current_logical_thread()
        if lt is None:
            self._real.release()
            return
        run = lt.run
        if run.in_invariant:
            return
        rid = self._ls_bind(run)
        run.switch(lt, "Lock.release", rid, self._ls_label)
        if self._owner is None:
            raise RuntimeError("release unlocked lock")
        self._owner = None

    def locked(self) -> bool:
        """True if the lock is held (a switch point inside a run)."""
        lt = current_logical_thread()
        if lt is None:
            return self._real.locked()
        run = lt.run
        if run.in_invariant:
            return self._ls_run is run and self._owner is not None
        rid = self._ls_bind(run)
        run.switch(lt, "Lock.locked", rid, self._ls_label)
        return self._owner is not None

    def __enter__(self) -> bool:
        # acquire(), inlined for the with statement (the commonest use of a lock, one
        # step in many): the step's location, the with's line, is two frames up from
        # here, found without walking through acquire's frame. Subclasses (RLock, a
        # user's) go through their acquire().
        lt = current_logical_thread()
        if lt is None or type(self) is not Lock:
            return self.acquire()
        run = lt.run
        if run.in_invariant:  # what acquire() answers there
            return True
        run.switch(
            lt,
            "Lock.acquire",
            self._ls_bind(run),
            self._ls_label,
            enabled=self._ls_free,
            blocker=self,
            location=user_location(2),
        )
        self._owner = lt
        return True

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # release(), inlined like __enter__
        lt = current_logical_thread()
        if lt is None or type(self) is not Lock:
            self.release()
            return
        run = lt.run
        if run.in_invariant:
            return
        run.switch(
            lt, "Lock.release", self._ls_bind(run), self._ls_label, location=user_location(2)
        )
        if self._owner is None:
            raise RuntimeError("release unlocked lock")
        self._owner = None

    def __repr__(self) -> str:
        lt = current_logical_thread()
        if lt is not None and self._ls_run is lt.run:
            state = "locked" if self._owner is not None else "unlocked"
            return f"<lockstep.threading.Lock {self._ls_id} {state}>"
        return f"<lockstep.threading.Lock wrapping {self._real!r}>"


class RLock(Lock):
    """threading.RLock: reentrant; only the owner may release."""

    _ls_kind = "RLock"

    def __init__(self) -> None:
        super().__init__()
        self._real = _thread.RLock()  # type: ignore[assignment]
        self._count = 0

    def _ls_reset(self) -> None:
        self._owner = None
        self._count = 0

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        """Acquire (again, if the caller owns it); see threading.RLock.acquire."""
        lt = current_logical_thread()
        if lt is None:
            return self._real.acquire(blocking, timeout)
        run = lt.run
        # _lock_deadline's answer for the default arguments, without the call
        deadline = None if timeout == -1 and blocking else _lock_deadline(run, blocking, timeout)
        if run.in_invariant:
            return True
        rid = self._ls_bind(run)
        label = self._ls_label
        if self._owner is lt:
            run.switch(lt, "RLock.acquire", rid, label)
            self._count += 1
            return True
        if not blocking:
            run.switch(lt, "RLock.acquire", rid, label)
            if self._owner is not None and self._owner is not lt:
                return False
        elif not run.switch(
            lt, "RLock.acquire", rid, label, enabled=self._ls_free, deadline=deadline, blocker=self
        ):
            return False
        if self._owner is lt:
            self._count += 1
        else:
            self._owner, self._count = lt, 1
        return True

    def release(self) -> None:
        """Release once; RuntimeError("cannot release un-acquired lock") if not the owner."""
        lt = current_logical_thread()
        if lt is None:
            self._real.release()
            return
        run = lt.run
        if run.in_invariant:
            return
        rid = self._ls_bind(run)
        run.switch(lt, "RLock.release", rid, self._ls_label)
        if self._owner is not lt:
            raise RuntimeError("cannot release un-acquired lock")
        self._count -= 1
        if self._count == 0:
            self._owner = None

    def _ls_owned(self, lt: LogicalThread) -> bool:
        return self._owner is lt

    def _ls_release_save(self, lt: LogicalThread) -> int:
        saved = self._count
        self._owner, self._count = None, 0
        return saved

    def _ls_acquire_restore(self, lt: LogicalThread, saved: int, label: str) -> None:
        super()._ls_acquire_restore(lt, saved, label)
        self._count = saved

    def __repr__(self) -> str:
        lt = current_logical_thread()
        if lt is not None and self._ls_run is lt.run:
            owner = "-" if self._owner is None else _thread_label(self._owner)
            return f"<lockstep.threading.RLock {self._ls_id} owner={owner} count={self._count}>"
        return f"<lockstep.threading.RLock wrapping {self._real!r}>"


class _Waiter:
    __slots__ = ("notified",)

    def __init__(self) -> None:
        self.notified = False

    def is_notified(self) -> bool:
        return self.notified


class Condition(_Bound):
    """threading.Condition over a lockstep Lock/RLock (a new RLock by default).

    Inside a run, ``wait`` takes three steps: "Condition.wait" (register and release),
    "Condition.wake" (notified, or its timeout chosen), "Condition.reacquire".
    Condition operations use the lock's id as their resource (dependent on the lock).
    """

    _ls_kind = "Condition"

    def __init__(self, lock: Lock | Any | None = None) -> None:
        super().__init__()
        if lock is None:
            lock = RLock()
        self._lock = lock
        real_lock = lock._real if isinstance(lock, Lock) else lock
        self._real = _real_threading.Condition(real_lock)
        self._waiters: list[_Waiter] = []
        # The predicate of each logical thread inside wait_for, so introspection
        # (lockstep.lowlevel.thread_states) can tell a lost wake-up: a waiter left
        # blocked although what it waits for already holds.
        self._ls_predicates: dict[LogicalThread, Callable[[], object]] = {}

    def _ls_reset(self) -> None:
        self._waiters = []
        self._ls_predicates = {}

    def _ls_controlled_lock(self) -> Lock:
        if not isinstance(self._lock, Lock):
            raise LockstepError(
                f"Condition built on an uncontrolled lock {self._lock!r} cannot be used inside "
                "a lockstep run; create the lock with lockstep.threading.Lock/RLock or patch "
                "its module"
            )
        return self._lock

    def _ls_enter(self) -> tuple[LogicalThread, Lock, PrimitiveId, str] | None:
        lt = current_logical_thread()
        if lt is None:
            return None
        lock = self._ls_controlled_lock()
        run = lt.run
        self._ls_bind(run)
        return lt, lock, lock._ls_bind(run), self._ls_label

    # -- lock delegation ---------------------------------------------------------------

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        """Acquire the underlying lock."""
        return bool(self._lock.acquire(blocking, timeout))

    def release(self) -> None:
        """Release the underlying lock."""
        self._lock.release()

    def __enter__(self) -> bool:
        return bool(self._lock.__enter__())

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._lock.__exit__(exc_type, exc, tb)

    # -- waiting -----------------------------------------------------------------------

    def wait(self, timeout: float | None = None) -> bool:
        """Release the lock, wait for a notify (or the timeout), reacquire; True if notified.

        RuntimeError("cannot wait on un-acquired lock") if the lock is not held.
        """
        bound = self._ls_enter()
        if bound is None:
            return self._real.wait(timeout)
        lt, lock, rid, label = bound
        run = lt.run
        if run.in_invariant:
            raise _no_wait_in_invariant("Condition.wait")
        if not lock._ls_owned(lt):
            raise RuntimeError("cannot wait on un-acquired lock")
        run.switch(lt, "Condition.wait", rid, label)
        deadline = _wait_deadline(run, timeout)
        waiter = _Waiter()
        self._waiters.append(waiter)
        saved = lock._ls_release_save(lt)
        try:
            notified = run.switch(
                lt,
                "Condition.wake",
                rid,
                label,
                enabled=waiter.is_notified,
                deadline=deadline,
                blocker=self,
            )
        finally:
            if not waiter.notified and waiter in self._waiters:
                self._waiters.remove(waiter)
        lock._ls_acquire_restore(lt, saved, label)
        return notified

    def wait_for(self, predicate: Callable[[], _T], timeout: float | None = None) -> _T:
        """Wait until ``predicate()`` is true (or the timeout passes); return its last value."""
        lt = current_logical_thread()
        if lt is None:
            return self._real.wait_for(predicate, timeout)
        self._ls_bind(lt.run)
        self._ls_predicates[lt] = predicate
        try:
            end: float | None = None
            remaining = timeout
            result = predicate()
            while not result:
                if remaining is not None:
                    if end is None:
                        end = _clock.monotonic() + remaining
                    else:
                        remaining = end - _clock.monotonic()
                        if remaining <= 0:
                            break
                self.wait(remaining)
                result = predicate()
            return result
        finally:
            self._ls_predicates.pop(lt, None)

    def notify(self, n: int = 1) -> None:
        """Wake up to ``n`` waiters; RuntimeError if the lock is not held."""
        bound = self._ls_enter()
        if bound is None:
            self._real.notify(n)
            return
        lt, lock, rid, label = bound
        run = lt.run
        if run.in_invariant:
            return
        run.switch(lt, "Condition.notify", rid, label)
        if not lock._ls_owned(lt):
            raise RuntimeError("cannot notify on un-acquired lock")
        self._ls_wake(n)

    def notify_all(self) -> None:
        """Wake every waiter; RuntimeError if the lock is not held."""
        bound = self._ls_enter()
        if bound is None:
            self._real.notify_all()
            return
        lt, lock, rid, label = bound
        run = lt.run
        if run.in_invariant:
            return
        run.switch(lt, "Condition.notify_all", rid, label)
        if not lock._ls_owned(lt):
            raise RuntimeError("cannot notify on un-acquired lock")
        self._ls_wake(len(self._waiters))

    def _ls_wake(self, n: int) -> None:
        woken, self._waiters = self._waiters[:n], self._waiters[n:]
        for waiter in woken:
            waiter.notified = True

    def _ls_holders(self, run: Run) -> list[str]:
        return ["nobody: waiting for notify"]

    def __repr__(self) -> str:
        return f"<lockstep.threading.Condition({self._lock!r}, {len(self._waiters)})>"


class Event(_Bound):
    """threading.Event: a flag threads can wait for."""

    _ls_kind = "Event"

    def __init__(self) -> None:
        super().__init__()
        self._real = _real_threading.Event()
        self._flag = False

    def _ls_reset(self) -> None:
        self._flag = False

    def _ls_is_flag(self) -> bool:
        return self._flag

    def _ls_op(self, kind: str) -> LogicalThread | None:
        lt = current_logical_thread()
        if lt is None:
            return None
        run = lt.run
        if not run.in_invariant:
            rid = self._ls_bind(run)
            run.switch(lt, kind, rid, self._ls_label)
        return lt

    def is_set(self) -> bool:
        """True if the flag is set."""
        lt = self._ls_op("Event.is_set")
        if lt is None:
            return self._real.is_set()
        return self._ls_run is lt.run and self._flag

    def set(self) -> None:
        """Set the flag, waking every waiter."""
        lt = current_logical_thread()
        if lt is None:
            self._real.set()
        elif not lt.run.in_invariant:
            self._ls_op("Event.set")
            self._flag = True

    def clear(self) -> None:
        """Clear the flag."""
        lt = current_logical_thread()
        if lt is None:
            self._real.clear()
        elif not lt.run.in_invariant:
            self._ls_op("Event.clear")
            self._flag = False

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the flag is set (or the timeout is chosen); return the flag."""
        lt = current_logical_thread()
        if lt is None:
            return self._real.wait(timeout)
        run = lt.run
        if run.in_invariant:
            raise _no_wait_in_invariant("Event.wait")
        rid = self._ls_bind(run)
        deadline = _wait_deadline(run, timeout)
        run.switch(
            lt,
            "Event.wait",
            rid,
            self._ls_label,
            enabled=self._ls_is_flag,
            deadline=deadline,
            blocker=self,
        )
        return self._flag

    def _ls_holders(self, run: Run) -> list[str]:
        return ["nobody: waiting for set()"]

    def __repr__(self) -> str:
        return f"<lockstep.threading.Event {self._ls_id}>"


class Semaphore(_Bound):
    """threading.Semaphore: a counter; acquire blocks at zero."""

    _ls_kind = "Semaphore"

    def __init__(self, value: int = 1) -> None:
        if value < 0:
            raise ValueError("semaphore initial value must be >= 0")
        super().__init__()
        self._initial = value
        self._value = value
        self._holders: list[LogicalThread] = []
        self._real: _real_threading.Semaphore = self._make_real(value)

    def _make_real(self, value: int) -> _real_threading.Semaphore:
        return _real_threading.Semaphore(value)

    def _ls_reset(self) -> None:
        self._value = self._initial
        self._holders = []

    def _ls_positive(self) -> bool:
        return self._value > 0

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        """Decrement; block (or time out) while the value is zero."""
        if not blocking and timeout is not None:
            raise ValueError("can't specify timeout for non-blocking acquire")
        lt = current_logical_thread()
        if lt is None:
            return self._real.acquire(blocking, timeout)
        run = lt.run
        if run.in_invariant:
            return True
        rid = self._ls_bind(run)
        kind = f"{self._ls_kind}.acquire"
        if not blocking:
            run.switch(lt, kind, rid, self._ls_label)
            if self._value == 0:
                return False
        elif not run.switch(
            lt,
            kind,
            rid,
            self._ls_label,
            enabled=self._ls_positive,
            deadline=_wait_deadline(run, timeout),
            blocker=self,
        ):
            return False
        self._value -= 1
        self._holders.append(lt)
        return True

    def release(self, n: int = 1) -> None:
        """Increment by ``n`` (ValueError if n < 1), waking waiters."""
        if n < 1:
            raise ValueError("n must be one or more")
        lt = current_logical_thread()
        if lt is None:
            self._real.release(n)
            return
        run = lt.run
        if run.in_invariant:
            return
        rid = self._ls_bind(run)
        run.switch(lt, f"{self._ls_kind}.release", rid, self._ls_label)
        self._ls_check_release(n)
        self._value += n
        for _ in range(n):
            if lt in self._holders:
                self._holders.remove(lt)
            elif self._holders:
                self._holders.pop(0)

    def _ls_check_release(self, n: int) -> None:
        """Hook for BoundedSemaphore."""

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def _ls_holders(self, run: Run) -> list[str]:
        return [_thread_label(t) for t in self._holders]

    def __repr__(self) -> str:
        return f"<lockstep.{type(self).__name__} {self._ls_id}: value={self._value}>"


class BoundedSemaphore(Semaphore):
    """threading.BoundedSemaphore: release above the initial value is a ValueError."""

    _ls_kind = "BoundedSemaphore"

    def _make_real(self, value: int) -> _real_threading.Semaphore:
        return _real_threading.BoundedSemaphore(value)

    def _ls_check_release(self, n: int) -> None:
        if self._value + n > self._initial:
            raise ValueError("Semaphore released too many times")


class _StartFlag:
    """``Thread._started`` of a Thread built inside a run: a flag with Event's methods.

    A real ``threading.Event`` (a Condition over a Lock) is the most expensive part of
    ``threading.Thread.__init__``; a logical thread only needs the flag.
    """

    __slots__ = ("_flag",)

    def __init__(self) -> None:
        self._flag = False

    def is_set(self) -> bool:
        return self._flag

    def set(self) -> None:
        self._flag = True

    def clear(self) -> None:
        self._flag = False

    def wait(self, timeout: float | None = None) -> bool:
        return self._flag


_PER_THREAD = frozenset({"_target", "_name", "_args", "_kwargs", "_daemonic", "_started"})
_prototype: dict[str, Any] | None = None


def _thread_prototype() -> dict[str, Any]:
    """The attributes ``threading.Thread.__init__`` sets that are the same for every
    never-started thread, on this interpreter (computed once)."""
    global _prototype
    if _prototype is None:
        real = _real_threading.Thread(target=None, name="lockstep-prototype", daemon=True)
        _prototype = {k: v for k, v in vars(real).items() if k not in _PER_THREAD}
    return _prototype


class Thread(_real_threading.Thread):
    """threading.Thread; inside a run, a logical thread scheduled by lockstep.

    Outside a run it *is* a real thread. Inside one, ``start`` creates a logical thread
    (the step "Thread.start"), ``join`` blocks until it ends (a timed join offers its
    timeout as a choice), ``is_alive`` is a switch point, ``ident`` is a virtual,
    deterministic id. Default names are deterministic ("Thread-1 (target)"), and
    ``daemon`` defaults to the creating logical thread's. Subclasses overriding ``run``
    work in both modes. A Thread created inside a run skips what only an OS thread
    needs (it gets that if it is ever started outside a run).
    """

    _ls_thread: LogicalThread | None = None
    _ls_light = False  # built by _ls_light_init: no OS-thread state yet
    _ls_hash: int | None = None  # created in a run: its creation number (Run.new_hash)
    _started: Any  # set by threading.Thread.__init__ (CPython internals) or _ls_light_init

    def __init__(
        self,
        group: None = None,
        target: Callable[..., object] | None = None,
        name: str | None = None,
        args: Iterable[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
        *,
        daemon: bool | None = None,
    ) -> None:
        lt = current_logical_thread()
        if lt is None:
            super().__init__(group, target, name, args, kwargs, daemon=daemon)
            self._ls_thread = None
            return
        if name is None:
            name = lt.run.new_thread_name(target)
        if group is not None:
            raise AssertionError("group argument must be None for now")
        if daemon is None:
            daemon = lt.daemon
        self._ls_light_init(target, name, args, kwargs, daemon=daemon)
        self._ls_hash = lt.run.new_hash()

    def __hash__(self) -> int:
        """Inside a run, the thread's creation number (sets of threads iterate alike in
        every execution with the same choices); outside one, the default."""
        seq = self._ls_hash
        return object.__hash__(self) if seq is None else seq

    def _ls_light_init(
        self,
        target: Callable[..., object] | None,
        name: str,
        args: Iterable[Any],
        kwargs: Mapping[str, Any] | None,
        *,
        daemon: bool,
    ) -> None:
        """threading.Thread.__init__ without the state only an OS thread needs."""
        namespace = vars(self)
        namespace.update(_thread_prototype())
        namespace.update(
            _target=target,
            _name=str(name),
            _args=args,
            _kwargs={} if kwargs is None else kwargs,
            _daemonic=bool(daemon),
            _started=_StartFlag(),
            _stderr=sys.stderr,
            _ls_thread=None,
            _ls_light=True,
        )

    @classmethod
    def _ls_for_run(cls, lt: LogicalThread) -> Thread:
        """The Thread object of a run's thread 0, bound to ``lt`` (never an OS thread):
        the Run's ``thread_factory``."""
        thread = cls.__new__(cls)
        thread._ls_light_init(None, lt.name, (), None, daemon=lt.daemon)
        thread._ls_bind_thread(lt)
        return thread

    def _ls_bind_thread(self, lt: LogicalThread) -> None:
        """Make this object logical thread ``lt``'s (started: it is alive in the run)."""
        self._ls_thread = lt
        self._started.set()

    def start(self) -> None:
        """Start the thread (inside a run: create a logical thread, step "Thread.start")."""
        lt = current_logical_thread()
        if lt is None:
            if self._ls_light and self._ls_thread is None:
                # Built inside a run, started outside one: give it an OS thread's state.
                built = vars(self)
                super().__init__(
                    None,
                    built.get("_target"),
                    self.name,
                    built.get("_args", ()),
                    built.get("_kwargs"),
                    daemon=self.daemon,
                )
                self._ls_light = False
            super().start()
            return
        if self._started.is_set() or self._ls_thread is not None:
            raise RuntimeError("threads can only be started once")
        run = lt.run
        if run.in_invariant:
            raise _no_wait_in_invariant("Thread.start")
        run.switch(lt, "Thread.start", _SPAWN_RESOURCE, self.name)
        target = getattr(self, "_target", None)  # CPython internals: the target= callable
        started = run.new_thread(
            self.name,
            self.run,
            daemon=self.daemon,
            thread_obj=self,
            location=code_location(target if target is not None else self.run),
        )
        self._ls_bind_thread(started)

    def join(self, timeout: float | None = None) -> None:
        """Wait until the thread ends (or, with a timeout, until its timeout is chosen)."""
        lt = current_logical_thread()
        target = self._ls_thread
        if lt is None:
            if target is not None:
                return  # its execution is over: the logical thread ended or was torn down
            super().join(timeout)
            return
        if target is None:
            if not self._started.is_set():
                raise RuntimeError("cannot join thread before it is started")
            raise LockstepError(
                f"{self!r} was started outside this lockstep run; it cannot be joined in it"
            )
        if target is lt:
            raise RuntimeError("cannot join current thread")
        run = lt.run
        if target.run is not run:
            raise LockstepError(f"{self!r} belongs to another lockstep execution")
        if run.in_invariant:
            raise _no_wait_in_invariant("Thread.join")
        run.switch(
            lt,
            "Thread.join",
            target.resource,
            _thread_label(target),
            enabled=lambda: target.finished,
            deadline=_wait_deadline(run, timeout),
            blocker=self,
        )

    def _ls_holders(self, run: Run) -> list[str]:
        target = self._ls_thread
        return [] if target is None else [f"{_thread_label(target)} (still running)"]

    def is_alive(self) -> bool:
        """True between start and the end of run() (a switch point inside a run)."""
        lt = current_logical_thread()
        target = self._ls_thread
        if target is None:
            if lt is not None and self._started.is_set():
                raise LockstepError(f"{self!r} was started outside this lockstep run")
            return False if lt is not None else super().is_alive()
        if lt is not None and not lt.run.in_invariant:
            lt.run.switch(lt, "Thread.is_alive", target.resource, _thread_label(target))
        return not target.finished

    @property
    def ident(self) -> int | None:
        """Thread identifier (virtual and deterministic for logical threads)."""
        if self._ls_thread is not None:
            return self._ls_thread.ident
        return super().ident

    @property
    def native_id(self) -> int | None:
        """Native id (the virtual ident for logical threads)."""
        if self._ls_thread is not None:
            return self._ls_thread.ident
        return super().native_id

    def __repr__(self) -> str:
        target = self._ls_thread
        if target is None:
            state = "started" if self.ident else "initial"
            return f"<lockstep.threading.Thread({self.name}, {state})>"
        status = "stopped" if target.finished else "started"
        daemon = " daemon" if self.daemon else ""
        return f"<lockstep.threading.Thread({self.name}, {status}{daemon} {target.ident})>"


def spawn(fn: Callable[..., object], *args: Any, name: str | None = None, **kwargs: Any) -> Thread:
    """Create and start a :class:`Thread` running ``fn(*args, **kwargs)``; return it."""
    if not callable(fn):
        raise InvalidArgumentType(f"spawn expects a callable, got {fn!r}")
    if name is not None and not isinstance(name, str):
        raise InvalidArgumentType(f"spawn name must be a str or None, got {name!r}")
    thread = Thread(target=fn, args=args, kwargs=kwargs, name=name)
    thread.start()
    return thread


def current_thread() -> _real_threading.Thread:
    """threading.current_thread(): the lockstep Thread of the current logical thread."""
    lt = current_logical_thread()
    if lt is None or lt.thread_obj is None:
        return _real_threading.current_thread()
    return lt.thread_obj


def main_thread() -> _real_threading.Thread:
    """threading.main_thread(): logical thread 0 ("main") inside a run."""
    lt = current_logical_thread()
    if lt is None:
        return _real_threading.main_thread()
    main = lt.run.threads[0].thread_obj
    return main if main is not None else _real_threading.main_thread()


def get_ident() -> int:
    """threading.get_ident(): virtual and deterministic inside a run."""
    lt = current_logical_thread()
    return _thread.get_ident() if lt is None else lt.ident


def get_native_id() -> int:
    """threading.get_native_id(): the virtual ident inside a run."""
    lt = current_logical_thread()
    return _thread.get_native_id() if lt is None else lt.ident


def enumerate_threads() -> list[_real_threading.Thread]:
    """threading.enumerate(): the live logical threads inside a run."""
    lt = current_logical_thread()
    if lt is None:
        return _real_threading.enumerate()
    return [t.thread_obj for t in lt.run.threads if not t.finished and t.thread_obj is not None]


def active_count() -> int:
    """threading.active_count()."""
    return len(enumerate_threads())


class Timer(Thread):
    """threading.Timer: run ``function`` after ``interval`` seconds unless cancelled."""

    def __init__(
        self,
        interval: float,
        function: Callable[..., object],
        args: Iterable[Any] | None = None,
        kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.interval = interval
        self.function = function
        self.args = list(args) if args is not None else []
        self.kwargs = dict(kwargs) if kwargs is not None else {}
        self.finished = Event()

    def cancel(self) -> None:
        """Stop the timer if it has not fired yet."""
        self.finished.set()

    def run(self) -> None:
        """Wait ``interval`` (virtual inside a run), then call ``function`` unless cancelled."""
        self.finished.wait(self.interval)
        if not self.finished.is_set():
            self.function(*self.args, **self.kwargs)
        self.finished.set()

"""threading.Barrier built on lockstep's Condition (so it is controlled inside a run).

The standard algorithm: a barrier fills until ``parties`` threads wait, the last one
runs ``action`` and releases everybody (draining); ``reset`` and ``abort`` break it for
current waiters, who get ``threading.BrokenBarrierError``. Timeouts (``timeout=`` or
the barrier's default) are scheduling choices inside a run, and break the barrier as in
CPython. Outside a run it works on real locks, like every lockstep primitive.
"""

from __future__ import annotations

import sys
import threading as _real_threading
from collections.abc import Callable

from lockstep._primitives import Condition, Lock

__all__ = ["Barrier", "BrokenBarrierError"]

BrokenBarrierError = _real_threading.BrokenBarrierError

_FILLING, _DRAINING, _RESETTING, _BROKEN = 0, 1, -1, -2


class Barrier:
    """threading.Barrier(parties, action=None, timeout=None)."""

    def __init__(
        self,
        parties: int,
        action: Callable[[], object] | None = None,
        timeout: float | None = None,
    ) -> None:
        if parties < 1 and sys.version_info >= (3, 13):
            raise ValueError("parties must be > 0")  # as CPython 3.13+ (earlier: accepted)
        self._cond = Condition(Lock())
        self._action = action
        self._timeout = timeout
        self._parties = parties
        self._state = _FILLING
        self._count = 0

    def wait(self, timeout: float | None = None) -> int:
        """Wait until ``parties`` threads wait; return this thread's arrival index.

        Raises BrokenBarrierError if the barrier is (or becomes) broken, reset, or the
        timeout passes.
        """
        if timeout is None:
            timeout = self._timeout
        with self._cond:
            self._enter()
            index = self._count
            self._count += 1
            try:
                if index + 1 == self._parties:
                    self._release()
                else:
                    self._wait(timeout)
                return index
            finally:
                self._count -= 1
                self._exit()

    def _enter(self) -> None:
        while self._state in (_DRAINING, _RESETTING):
            self._cond.wait()
        if self._state < 0:
            raise BrokenBarrierError

    def _release(self) -> None:
        try:
            if self._action is not None:
                self._action()
            self._state = _DRAINING
            self._cond.notify_all()
        except BaseException:
            self._break()
            raise

    def _wait(self, timeout: float | None) -> None:
        if not self._cond.wait_for(lambda: self._state != _FILLING, timeout):
            self._break()
            raise BrokenBarrierError
        if self._state < 0:
            raise BrokenBarrierError

    def _exit(self) -> None:
        if self._count == 0 and self._state in (_RESETTING, _DRAINING):
            self._state = _FILLING
            self._cond.notify_all()

    def reset(self) -> None:
        """Return to the empty state; current waiters get BrokenBarrierError."""
        with self._cond:
            if self._count > 0:
                if self._state in (_FILLING, _BROKEN):
                    self._state = _RESETTING
            else:
                self._state = _FILLING
            self._cond.notify_all()

    def abort(self) -> None:
        """Break the barrier: current and future waiters get BrokenBarrierError."""
        with self._cond:
            self._break()

    def _break(self) -> None:
        self._state = _BROKEN
        self._cond.notify_all()

    @property
    def parties(self) -> int:
        """Threads required to pass the barrier."""
        return self._parties

    @property
    def n_waiting(self) -> int:
        """Threads currently waiting (0 while draining)."""
        return self._count if self._state == _FILLING else 0

    @property
    def broken(self) -> bool:
        """True when the barrier is broken."""
        return self._state == _BROKEN

    def __repr__(self) -> str:
        if self.broken:
            return f"<lockstep.threading.Barrier broken, parties={self.parties}>"
        return f"<lockstep.threading.Barrier parties={self.parties} waiting={self.n_waiting}>"

"""The contract between the scheduler and a backend: where logical threads run.

The scheduler (:class:`lockstep._runtime.Run`) makes every decision: which thread runs
next, what is recorded, when the execution is over. A *backend* only provides the
execution contexts: it starts a logical thread, parks the running one and resumes the
chosen one, tells the watchdog which OS thread a logical thread runs on, and tears
everything down. Two implementations, one file each (chosen by name in
:mod:`lockstep._backend`):

* ``"greenlet"`` (:mod:`lockstep._greenlet_backend`, the default): every logical
  thread of an execution is a greenlet on one *carrier* OS thread; a switch is a
  greenlet switch (about a microsecond).
* ``"thread"`` (:mod:`lockstep._thread_backend`): every logical thread is an OS
  thread that waits on its own baton (a raw lock); a switch hands the baton over.
  Choose it for code that needs a real OS thread per logical thread (see
  ``docs/backends.md``).

Both give the same schedules: an execution is a function of its choices only, so the
same choices give the same trace on either backend.

Calling contract (Run and explore/replay guarantee it; backends rely on it):

* ``run_session(body)`` runs ``body()`` (which runs a series of executions: an
  exploration, a replay) where executions are cheapest, and returns its result; the
  caller's thread (the *controller*) waits, and the watchdog (:mod:`lockstep._watchdog`)
  reports a run that stops taking steps. When a stalled run cannot be unwound it raises
  :class:`SessionAbandoned` carrying that run (its failure recorded): the process stays
  usable, the session's state is lost.
* ``execute(run)`` runs one execution: the first decision (``run.first_decision()``),
  then the logical threads until control comes back (``run.release_controller()``),
  then unwinds every logical thread (raising ``_Abort`` at its switch point). A
  logical thread that cannot be unwound is abandoned and counted in ``run.leaked``.
* ``spawn(run, lt)`` creates ``lt``'s context, parked. When first resumed it runs
  ``run.thread_main(lt)`` and then resumes the thread that returns (None: the
  controller). Called by the running logical thread, or by Run before ``execute`` for
  thread 0.
* ``transfer(run, current, target)`` is called by the running logical thread
  ``current``: it parks ``current`` and resumes ``target`` (None: the execution is
  over), and returns when ``current`` is resumed.
* ``os_thread_ident(lt)`` names the OS thread ``lt`` runs on (for stack dumps).
* ``close()`` releases what the backend keeps between executions (idempotent).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from lockstep._runtime import LogicalThread, Run

__all__ = ["Backend", "SessionAbandoned"]

_T = TypeVar("_T")


class SessionAbandoned(Exception):
    """A session's executor was stuck in uncontrolled code and had to be abandoned.

    ``run`` is the execution that stalled; its stall failure is recorded.
    """

    def __init__(self, run: Run) -> None:
        super().__init__("the execution stalled and could not be unwound")
        self.run = run


class Backend(Protocol):
    """Execution contexts for logical threads (see the module docstring for the contract)."""

    name: str

    def run_session(self, body: Callable[[], _T]) -> _T:
        """Run ``body`` (a series of executions), watched; raises SessionAbandoned."""
        ...

    def execute(self, run: Run) -> None:
        """Run ``run`` from its first decision to its end and tear it down (controller)."""
        ...

    def spawn(self, run: Run, lt: LogicalThread) -> None:
        """Create ``lt``'s context, parked until it is first resumed."""
        ...

    def transfer(self, run: Run, current: LogicalThread, target: LogicalThread | None) -> None:
        """Park ``current`` and resume ``target`` (None: the controller)."""
        ...

    def os_thread_ident(self, lt: LogicalThread) -> int | None:
        """The OS thread ``lt`` runs on (None if it has none yet)."""
        ...

    def close(self) -> None:
        """Release what is kept between executions (idempotent)."""
        ...

"""Backends: where the logical threads of an execution actually run.

The scheduler (:class:`lockstep._runtime.Run`) makes every decision: which thread runs
next, what is recorded, when the execution is over. A *backend* only provides the
execution contexts: it starts a logical thread, parks the running one and resumes the
chosen one, tells the watchdog which OS thread a logical thread runs on, and tears
everything down. Two implementations, one file each:

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

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Final, Protocol, TypeVar

from lockstep._quiet_teardown import quiet_teardown
from lockstep._thread_guard import guard_real_threads
from lockstep.errors import InvalidArgument, InvalidArgumentType, LockstepError

if TYPE_CHECKING:
    from lockstep._runtime import LogicalThread, Run

__all__ = [
    "BACKEND_NAMES",
    "ENV_VAR",
    "Backend",
    "BackendUnavailable",
    "SessionAbandoned",
    "default_backend",
    "make_backend",
    "open_backend",
    "resolve_backend",
    "set_default_backend",
]

BACKEND_NAMES: Final = ("greenlet", "thread")
ENV_VAR: Final = "LOCKSTEP_BACKEND"
"""The environment variable naming the default backend (inherited by worker processes)."""


class BackendUnavailable(LockstepError):
    """The requested backend cannot run here (e.g. greenlet is not installed)."""


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


_default: str | None = None


def _greenlet_available() -> bool:
    try:
        import greenlet  # noqa: F401, PLC0415 - probing an optional import
    except ImportError:
        return False
    return True


def default_backend() -> str:
    """The backend used when none is named.

    ``set_default_backend``'s choice, else the ``LOCKSTEP_BACKEND`` environment variable,
    else "greenlet" when greenlet is installed, else "thread". Raises InvalidArgument
    for a ``LOCKSTEP_BACKEND`` that names no backend.
    """
    if _default is not None:
        return _default
    named = os.environ.get(ENV_VAR)
    if named:
        if named not in BACKEND_NAMES:
            raise InvalidArgument(
                f"{ENV_VAR}={named!r} names no backend; expected one of "
                f"{', '.join(map(repr, BACKEND_NAMES))}"
            )
        return named
    return "greenlet" if _greenlet_available() else "thread"


def set_default_backend(name: str | None) -> str | None:
    """Make ``name`` the default (None: back to automatic); return the previous setting."""
    global _default
    previous = _default
    _default = None if name is None else resolve_backend(name)
    return previous


def resolve_backend(name: object) -> str:
    """Validate a backend name (None: the default). Raises InvalidArgument(Type)."""
    if name is None:
        return default_backend()
    if not isinstance(name, str):
        raise InvalidArgumentType(
            f"backend must be one of {', '.join(map(repr, BACKEND_NAMES))} or None, got {name!r}"
        )
    if name not in BACKEND_NAMES:
        raise InvalidArgument(
            f"unknown backend {name!r}; expected one of {', '.join(map(repr, BACKEND_NAMES))}"
        )
    return name


def make_backend(name: str) -> Backend:
    """A fresh backend instance. Raises BackendUnavailable when it cannot run here."""
    if name == "thread":
        from lockstep._thread_backend import ThreadBackend  # noqa: PLC0415 - one per name

        return ThreadBackend()
    if name == "greenlet":
        if not _greenlet_available():
            raise BackendUnavailable(
                "the greenlet backend needs the 'greenlet' package (pip install greenlet); "
                "or run on the thread backend: backend='thread' (lockstep check --backend "
                "thread, @pytest.mark.lockstep(backend='thread'))"
            )
        from lockstep._greenlet_backend import GreenletBackend  # noqa: PLC0415

        return GreenletBackend()
    raise InvalidArgument(f"unknown backend {name!r}")


@contextmanager
def open_backend(name: str) -> Iterator[Backend]:
    """A backend for a series of executions (an exploration), closed at the end."""
    backend = make_backend(name)
    try:
        with quiet_teardown(), guard_real_threads():
            yield backend
    finally:
        backend.close()

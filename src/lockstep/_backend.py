"""Backends: where the logical threads of an execution actually run.

The scheduler (:class:`lockstep._runtime.Run`) makes every decision: which thread runs
next, what is recorded, when the execution is over. A *backend* only provides the
execution contexts: it starts a logical thread, parks the running one and resumes the
chosen one, tells the watchdog which OS thread a logical thread runs on, and tears
everything down. Two implementations, one file each:

* ``"thread"`` (:mod:`lockstep._thread_backend`): every logical thread is an OS
  thread that waits on its own baton (a raw lock); a switch hands the baton over.

An execution is a function of its choices only, so the same choices give the same
trace on every backend.

Calling contract (Run guarantees it; backends rely on it):

* ``execute(run)`` is called on the *controller* thread (the caller of explore/replay).
  It makes the first decision (``run.first_decision()``), runs the execution until
  control comes back (``run.release_controller()``), waits with ``run.wait_done()``
  (the backend-independent watchdog), then unwinds every logical thread (raising
  ``_Abort`` at its switch point) and returns. A logical thread that cannot be unwound
  is abandoned and counted in ``run.leaked``; the process stays usable.
* ``spawn(run, lt)`` creates ``lt``'s context, parked. When first resumed it runs
  ``run.thread_main(lt)`` and then resumes the thread that returns (None: the
  controller). Called by the running logical thread, or by Run on the controller
  before ``execute`` for thread 0.
* ``transfer(run, current, target)`` is called by the running logical thread
  ``current``: it parks ``current`` and resumes ``target`` (None: the execution is
  over, control goes back to the controller), and returns when ``current`` is resumed.
* ``os_thread_ident(lt)`` names the OS thread ``lt`` runs on (for stack dumps).
* ``close()`` releases what the backend keeps between executions (idempotent).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Final, Protocol

from lockstep.errors import InvalidArgument, InvalidArgumentType, LockstepError

if TYPE_CHECKING:
    from lockstep._runtime import LogicalThread, Run

__all__ = [
    "BACKEND_NAMES",
    "Backend",
    "BackendUnavailable",
    "default_backend",
    "make_backend",
    "open_backend",
    "resolve_backend",
    "set_default_backend",
]

BACKEND_NAMES: Final = ("thread",)


class BackendUnavailable(LockstepError):
    """The requested backend cannot run here (e.g. greenlet is not installed)."""


class Backend(Protocol):
    """Execution contexts for logical threads (see the module docstring for the contract)."""

    name: str

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


def default_backend() -> str:
    """The backend used when none is named."""
    if _default is not None:
        return _default
    return "thread"


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
    raise InvalidArgument(f"unknown backend {name!r}")


@contextmanager
def open_backend(name: str) -> Iterator[Backend]:
    """A backend for a series of executions (an exploration), closed at the end."""
    backend = make_backend(name)
    try:
        yield backend
    finally:
        backend.close()

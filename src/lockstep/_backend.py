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

import _thread
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Final, Protocol, TypeVar

from lockstep._quiet_teardown import quiet_teardown
from lockstep._thread_guard import guard_real_threads
from lockstep.errors import BackendUnavailable, InvalidArgument, InvalidArgumentType

if TYPE_CHECKING:
    from lockstep._runtime import LogicalThread, Run

__all__ = [
    "BACKEND_NAMES",
    "ENV_VAR",
    "Backend",
    "BackendUnavailable",
    "SessionAbandoned",
    "automatic_fallback",
    "default_backend",
    "gil_disabled",
    "greenlet_unavailable",
    "make_backend",
    "open_backend",
    "resolve_backend",
    "set_default_backend",
]

BACKEND_NAMES: Final = ("greenlet", "thread")
ENV_VAR: Final = "LOCKSTEP_BACKEND"
"""The environment variable naming the default backend (inherited by worker processes)."""


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

_PROBE: Final = """
import sys
try:
    import greenlet
except ImportError as error:
    print("missing", error)
else:
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()  # a GIL build: always on
    print("gil" if gil else "ok", greenlet.__version__)
"""
"""Run by a fresh interpreter: does greenlet import, and does the GIL stay off?"""

_unavailable: list[str | None] = []
"""The cached answer of greenlet_unavailable() (empty: not asked yet)."""
_asking = _thread.allocate_lock()
"""Held while the answer is worked out: threads that ask at once wait for one answer."""


def gil_disabled() -> bool:
    """True on a free-threaded CPython (3.13t) whose GIL is off in this process."""
    is_gil_enabled = getattr(sys, "_is_gil_enabled", None)
    return is_gil_enabled is not None and not is_gil_enabled()


def _import_greenlet() -> str | None:
    """Import greenlet here; why it cannot be imported (None: imported)."""
    try:
        import greenlet  # noqa: F401, PLC0415 - probing an optional import
    except ImportError as error:
        return f"greenlet is not installed ({error})"
    return None


def _probe_greenlet_without_importing() -> str | None:
    """On a free-threaded CPython: import greenlet in a fresh interpreter, not here.

    An extension module that does not declare free-threading support turns the GIL
    back on for the whole process when it is imported (for good: there is no way to
    turn it off again), so the question is asked in a child process, with the same
    ``sys.path`` and without ``PYTHON_GIL`` (which would force the answer). Returns
    why greenlet cannot be used here (None: it imports and the GIL stays off).
    """
    env = {name: value for name, value in os.environ.items() if name != "PYTHON_GIL"}
    env["PYTHONPATH"] = os.pathsep.join(entry for entry in sys.path if entry)
    try:
        done = subprocess.run(
            [sys.executable, "-W", "ignore", "-c", _PROBE],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"importing greenlet could not be tried in a child interpreter ({error})"
    answer, _, detail = done.stdout.strip().partition(" ")
    if answer == "ok":
        return None
    if answer == "missing":
        return f"greenlet is not installed ({detail})"
    if answer == "gil":
        return (
            f"importing greenlet {detail} would re-enable the GIL of this free-threaded "
            "Python (it does not declare free-threading support)"
        )
    return (
        "importing greenlet failed in a child interpreter "
        f"(exit {done.returncode}: {done.stderr.strip()[-300:]})"
    )


def greenlet_unavailable() -> str | None:
    """Why the greenlet backend cannot run in this process; None when it can.

    It cannot when greenlet is not installed, and on a free-threaded CPython whose
    GIL is off when importing greenlet would turn the GIL back on (asked in a child
    interpreter, see ``_probe_greenlet_without_importing``; an import that already
    happened is taken as it is). Asked once per process; the answer is cached.
    """
    with _asking:
        if not _unavailable:
            if gil_disabled() and "greenlet" not in sys.modules:
                _unavailable.append(_probe_greenlet_without_importing())
            else:
                _unavailable.append(_import_greenlet())
        return _unavailable[0]


def _greenlet_available() -> bool:
    return greenlet_unavailable() is None


def default_backend() -> str:
    """The backend used when none is named.

    ``set_default_backend``'s choice, else the ``LOCKSTEP_BACKEND`` environment variable,
    else "greenlet" when it can run here (``greenlet_unavailable``), else "thread".
    Raises InvalidArgument for a ``LOCKSTEP_BACKEND`` that names no backend.
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


def automatic_fallback() -> str | None:
    """The line that says the thread backend was chosen by itself; None when it was not.

    Not None only when no backend is named (no ``set_default_backend`` choice, no
    ``LOCKSTEP_BACKEND``) and the greenlet backend cannot run here: the default then
    is "thread", and the line says why.
    """
    if _default is not None or os.environ.get(ENV_VAR):
        return None
    reason = greenlet_unavailable()
    if reason is None:
        return None
    return f"backend: thread, chosen by itself: the greenlet backend cannot run here: {reason}"


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
        reason = greenlet_unavailable()
        if reason is not None:
            raise BackendUnavailable(
                f"the greenlet backend cannot run here: {reason}; install a greenlet that "
                "supports this Python (pip install greenlet), or run on the thread backend: "
                "backend='thread' (lockstep check --backend thread, "
                "@pytest.mark.lockstep(backend='thread'))"
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

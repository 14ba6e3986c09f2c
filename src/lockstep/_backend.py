"""Backends by name: which one runs an exploration, and opening it.

The contract a backend fulfils, and the two implementations, are described in
:mod:`lockstep._backend_protocol`. This module picks one by name (``"greenlet"``, the
default when greenlet is installed, or ``"thread"``) and opens it for a series of
executions.
"""

from __future__ import annotations

import _thread
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from lockstep._backend_protocol import Backend
from lockstep._quiet_teardown import quiet_teardown
from lockstep._thread_backend import ThreadBackend
from lockstep._thread_guard import guard_real_threads
from lockstep.errors import BackendUnavailable, InvalidArgument, InvalidArgumentType

__all__ = [
    "BACKEND_NAMES",
    "ENV_VAR",
    "BackendUnavailable",
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


def set_default_backend(name: str | None) -> str | None:
    """Make ``name`` the default (None: back to automatic); return the previous setting."""
    global _default
    previous = _default
    _default = None if name is None else resolve_backend(name)
    return previous


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
        # Imported only now, once it is known to run here: on a free-threaded Python an
        # extension that does not declare free-threading support turns the GIL back on
        # for good when it is imported (the one import inside a function of the kernel).
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

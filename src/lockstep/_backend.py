"""Backends by name: which one runs an exploration, and opening it.

The contract a backend fulfils, and the two implementations, are described in
:mod:`lockstep._backend_protocol`. This module picks one by name (``"greenlet"``, the
default when greenlet is installed, or ``"thread"``) and opens it for a series of
executions.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from lockstep._backend_protocol import Backend
from lockstep._quiet_teardown import quiet_teardown
from lockstep._thread_backend import ThreadBackend
from lockstep._thread_guard import guard_real_threads
from lockstep.errors import InvalidArgument, InvalidArgumentType, LockstepError

try:
    from lockstep._greenlet_backend import GreenletBackend
except ModuleNotFoundError as _missing:  # greenlet is optional: the thread backend only
    if _missing.name != "greenlet":
        raise
    GreenletBackend = None  # type: ignore[assignment, misc]

__all__ = [
    "BACKEND_NAMES",
    "ENV_VAR",
    "BackendUnavailable",
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


_default: str | None = None


def _greenlet_available() -> bool:
    return GreenletBackend is not None


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
        return ThreadBackend()
    if name == "greenlet":
        if not _greenlet_available():
            raise BackendUnavailable(
                "the greenlet backend needs the 'greenlet' package (pip install greenlet); "
                "or run on the thread backend: backend='thread' (lockstep check --backend "
                "thread, @pytest.mark.lockstep(backend='thread'))"
            )
        assert GreenletBackend is not None
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

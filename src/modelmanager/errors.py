"""The exceptions of the model manager.

One root, :class:`ModelManagerError`, with builtin mix-ins where the meaning is
shared, so callers can catch either the precise class or the builtin one
(``except KeyError`` still catches :class:`ModelNotFound`).

A constructor's own exception is never wrapped: it propagates unchanged, and a
secondary failure during cleanup is attached to it as a note, never
substituted for it (invariant I16).

:class:`InvalidArgument` and :class:`InvalidArgumentType` have namesakes in
``lockstep.errors`` on purpose: the model manager and lockstep never import each
other (the product carries no test harness), and each package's errors share one
root, so ``except ModelManagerError`` catches every error the manager raises.  A
shared class would need a third package both depend on, for two lines; both derive
from the same builtins (``ValueError``, and ``TypeError`` for the type error), which
is what a caller that handles either catches.
"""

from __future__ import annotations

__all__ = [
    "CacheFull",
    "InvalidArgument",
    "InvalidArgumentType",
    "LockTimeout",
    "ModelManagerError",
    "ModelManagerLockAcquisitionError",
    "ModelNotFound",
    "UnsupportedOperation",
    "attach_secondary",
    "note_swallowed",
    "swallowed",
]


class ModelManagerError(Exception):
    """Root of every error the model manager raises on its own account."""


class ModelNotFound(ModelManagerError, KeyError):
    """The model is not loaded (or no factory is registered for it).

    Also a :class:`KeyError`, so mapping-style code keeps working; unlike
    ``KeyError`` its message is a readable sentence, not a repr.
    """

    def __init__(self, model_id: str, detail: str | None = None) -> None:
        super().__init__(model_id)
        self.model_id = model_id
        self.detail = detail if detail is not None else f"model {model_id!r} is not loaded"

    def __str__(self) -> str:
        return self.detail


class ModelManagerLockAcquisitionError(ModelManagerError):
    """A lock could not be acquired (the upstream name, kept for callers)."""


class LockTimeout(ModelManagerLockAcquisitionError, TimeoutError):
    """A bounded wait ran out. Nothing changed state when this is raised.

    ``resource`` names what was waited for, ``timeout`` is the bound in seconds.
    """

    def __init__(self, resource: str, timeout: float) -> None:
        super().__init__(f"timed out after {timeout:g} s waiting for {resource}")
        self.resource = resource
        self.timeout = timeout


class CacheFull(ModelManagerError):
    """A cold add was refused at once: every model in the cache is pinned or leased.

    Raised only by a cache built with ``on_full="refuse"``; nothing changed.
    Retryable: the cache has room again once a lease is given back or a model
    unpinned (an inference server answers 503 with a retry hint).
    ``model_id`` is the refused resolved id.
    """

    def __init__(self, model_id: str, message: str) -> None:
        super().__init__(message)
        self.model_id = model_id


class InvalidArgument(ModelManagerError, ValueError):
    """An argument has the right type but a value outside what is accepted."""


class InvalidArgumentType(InvalidArgument, TypeError):
    """An argument has the wrong type."""


class UnsupportedOperation(ModelManagerError, AttributeError):
    """The stack has no layer providing this operation (e.g. pinning without a cache).

    Also an :class:`AttributeError`, so ``hasattr(stack, "pin_model")`` is False.
    """


def attach_secondary(primary: BaseException, secondary: BaseException, doing: str) -> None:
    """Record ``secondary`` (raised while ``doing`` cleanup) on ``primary``.

    The primary error stays the one raised (I16); the secondary is kept as a
    note and in ``primary.__notes__`` so it is never lost.
    """
    primary.add_note(f"while {doing}, a secondary error occurred: {secondary!r}")


_SWALLOWED = "swallowed: "


def note_swallowed(error: BaseException, by: str) -> None:
    """Mark ``error`` as swallowed by design by ``by`` (a cache's restoration).

    The error is not raised to anyone: a note on it says so, for whoever logs or
    inspects it later (:func:`swallowed` reads it back). Nothing else changes.
    """
    error.add_note(f"{_SWALLOWED}{by}")


def swallowed(error: BaseException) -> bool:
    """Whether ``error`` was marked by :func:`note_swallowed` (never raised by design)."""
    return any(
        isinstance(note, str) and note.startswith(_SWALLOWED)
        for note in getattr(error, "__notes__", ())
    )

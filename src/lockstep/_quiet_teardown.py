"""Keep the teardown of an execution out of the user's logs and stderr.

When an execution ends, every logical thread still parked at a switch point is unwound
by raising :data:`lockstep._runtime.Abort` (a ``BaseException``) there. Well-written
third-party code catches ``BaseException`` to log it and re-raise it
(``concurrent.futures``' worker logs "Exception in worker" at CRITICAL), and finalizers
and weakref callbacks that run during the unwinding report it through
``sys.unraisablehook`` ("Exception ignored in ..."). None of that is about the code
under test: it is lockstep ending an execution, hundreds of times per exploration, and
it buries the one report that matters.

While at least one lockstep session (an exploration, a replay, a shrink) is open,
:func:`quiet_teardown` drops exactly those reports: a log record whose ``exc_info``
exception, or an unraisable report whose exception, is ``Abort`` or was raised while
handling one (its ``__cause__``/``__context__`` chain holds one). Every other record and
report passes through unchanged, to the handlers and hook in place when the first
session opened. The hooks are process-wide, counted, and restored when the last session
closes (unless something else replaced them meanwhile, which is then left alone).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from lockstep._counted import CountedInstall
from lockstep._runtime import Abort

__all__ = ["is_teardown_exception", "quiet_teardown"]

_original_handle: Callable[..., Any] | None = None
_original_unraisablehook: Callable[[Any], Any] | None = None


def is_teardown_exception(exc: BaseException | None) -> bool:
    """Whether ``exc`` is lockstep's teardown ``Abort`` or was raised while handling one."""
    pending = [exc]
    seen: set[int] = set()
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        if isinstance(current, Abort):
            return True
        seen.add(id(current))
        pending.append(current.__cause__)
        pending.append(current.__context__)
    return False


def _quiet_handle(self: Any, record: Any) -> Any:
    """``logging.Logger.handle`` that drops a record about an execution's teardown."""
    exc_info = record.exc_info
    if exc_info and isinstance(exc_info, tuple) and is_teardown_exception(exc_info[1]):
        return None
    assert _original_handle is not None
    return _original_handle(self, record)


def _quiet_unraisablehook(unraisable: Any) -> None:
    """``sys.unraisablehook`` that drops a report about an execution's teardown."""
    if is_teardown_exception(unraisable.exc_value):
        return
    hook = _original_unraisablehook or sys.__unraisablehook__
    hook(unraisable)


def _install() -> None:
    global _original_handle, _original_unraisablehook
    _original_handle = logging.Logger.handle
    logging.Logger.handle = _quiet_handle  # type: ignore[method-assign]
    _original_unraisablehook = sys.unraisablehook
    sys.unraisablehook = _quiet_unraisablehook


def _uninstall() -> None:
    global _original_handle, _original_unraisablehook
    if logging.Logger.handle is _quiet_handle:
        logging.Logger.handle = _original_handle  # type: ignore[method-assign,assignment]
    if sys.unraisablehook is _quiet_unraisablehook:
        sys.unraisablehook = _original_unraisablehook or sys.__unraisablehook__
    _original_handle = None
    _original_unraisablehook = None


_installation = CountedInstall(_install, _uninstall)


def quiet_teardown() -> AbstractContextManager[None]:
    """Drop teardown reports (see the module docstring) for the duration of the block.

    Reentrant and thread-safe: nested and concurrent sessions share one installation,
    removed when the last of them exits.
    """
    return _installation.held()

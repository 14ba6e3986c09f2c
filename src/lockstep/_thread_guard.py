"""Refuse a real OS thread started inside a run.

A ``threading.Thread`` whose class lockstep did not swap for its own (defined in a
module that is not patched: ``class Worker(threading.Thread)`` in a library, or
``concurrent.futures`` used from an unpatched module) would run as a real OS thread,
outside lockstep's control: its steps are not scheduled and its accesses to watched
state are not seen, so an exploration of it proves nothing while reading as a pass.

While at least one lockstep session is open, the real ``threading.Thread.start`` is
wrapped: called from a logical thread, it raises :class:`~lockstep.errors.
UncontrolledThread` naming the thread's class and the module to patch, so the execution
fails with that message instead. Threads started outside a run, and lockstep's own
(``_ls_internal``), start as usual. Process-wide and counted
(:class:`lockstep._counted.CountedInstall`); the original is restored when the last
session closes.
"""

from __future__ import annotations

import sys
import threading as _real_threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from lockstep._counted import CountedInstall
from lockstep._runtime import current_logical_thread
from lockstep.errors import UncontrolledThread

__all__ = ["guard_real_threads"]

_original_start: Callable[[Any], None] | None = None
_REAL_START: Callable[[Any], None] = _real_threading.Thread.start


def _guarded_start(self: Any) -> None:
    """``threading.Thread.start`` that refuses a real thread started inside a run."""
    if current_logical_thread() is not None and not getattr(self, "_ls_internal", False):
        cls = type(self)
        caller = sys._getframe(1).f_globals.get("__name__", "?")
        owner = cls.__module__ if cls.__module__ != "threading" else caller
        raise UncontrolledThread(
            f"a real OS thread was started inside a lockstep run: {cls.__qualname__} "
            f"{self.name!r} (class from module {cls.__module__!r}, started from "
            f"{caller!r}). It would run outside lockstep's control: its steps are not "
            "scheduled and its accesses to watched state are not seen, so no verdict "
            f"about it could be trusted. Patch the module that defines or starts it "
            f"(probably {owner!r}: patch=[...], --patch, or your adapter's "
            "patch_modules()): its threading names, and the bases of the Thread "
            "subclasses it defines, become lockstep's"
        )
    (_original_start or _REAL_START)(self)  # the original, even after an uninstall


def _install() -> None:
    global _original_start
    _original_start = _real_threading.Thread.start
    _real_threading.Thread.start = _guarded_start  # type: ignore[method-assign]


def _uninstall() -> None:
    global _original_start
    if _real_threading.Thread.start is _guarded_start:
        _real_threading.Thread.start = _original_start  # type: ignore[method-assign,assignment]
    _original_start = None


_installation = CountedInstall(_install, _uninstall)


def guard_real_threads() -> AbstractContextManager[None]:
    """Refuse real threads started inside a run for the duration of the block.

    Reentrant and thread-safe: nested and concurrent sessions share one installation.
    """
    return _installation.held()

"""Tearing an execution down leaves the user's logs and stderr alone.

At the end of every execution lockstep unwinds each parked thread by raising its
``Abort`` at the thread's switch point. Third-party code that logs every
``BaseException`` (``concurrent.futures``' worker: "Exception in worker") and finalizers
that run during the unwinding ("Exception ignored in ...") used to print one traceback
per thread per execution, burying the report. These tests park a thread inside such
code deterministically (an Event shows it is in the ``try`` before the execution ends)
and check that only the teardown reports are dropped: a real exception logged or
reported the same way still comes through.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import pytest

import lockstep
from lockstep import threading as ls_threading
from lockstep._quiet_teardown import is_teardown_exception, quiet_teardown
from lockstep._runtime import Abort

LOG = logging.getLogger("lockstep-tests.quiet-teardown")


def _explore_once(scenario: Any) -> lockstep.ExploreResult:
    return lockstep.explore(scenario, budget=1, shrink=False, races=False)


def _logging_scenario() -> None:
    """A worker logs one real error, then is parked, holding a logging ``except``, at teardown."""
    lock = ls_threading.Lock()
    inside = ls_threading.Event()

    def worker() -> None:
        try:
            raise ValueError("a real problem")
        except ValueError:
            LOG.exception("real problem")
        try:
            inside.set()
            with lock:  # the main thread holds it: the worker parks here until teardown
                pass
        except BaseException:
            LOG.critical("Exception in worker", exc_info=True)
            raise

    with lock:
        ls_threading.Thread(target=worker).start()
        inside.wait()
        raise AssertionError("the scenario's own failure")


def test_teardown_abort_logged_by_the_code_under_test_is_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOG.name)
    result = _explore_once(_logging_scenario)
    assert result.failure is not None
    assert "the scenario's own failure" in result.failure.message
    # The real error passes through; the record about the teardown's Abort does not.
    assert [r.getMessage() for r in caplog.records if r.name == LOG.name] == ["real problem"]
    assert not any(r.exc_info and is_teardown_exception(r.exc_info[1]) for r in caplog.records)


class _Finalized:
    """Takes ``lock`` in ``__del__``: during teardown that switch point raises Abort."""

    def __init__(self, lock: Any, fail_with: BaseException | None = None) -> None:
        self.lock = lock
        self.fail_with = fail_with

    def __del__(self) -> None:
        if self.fail_with is not None:
            raise self.fail_with
        with self.lock:
            pass


def _unraisable_scenario() -> None:
    lock = ls_threading.Lock()
    inside = ls_threading.Event()

    def worker() -> None:
        real = _Finalized(lock, fail_with=ValueError("a real finalizer bug"))
        del real  # reported through sys.unraisablehook, as it should be
        held = _Finalized(lock)
        try:
            inside.set()
            with lock:  # parked here at teardown
                pass
        finally:
            del held  # while unwinding: its __del__ reaches a switch point, which raises Abort

    with lock:
        ls_threading.Thread(target=worker).start()
        inside.wait()
        raise AssertionError("the scenario's own failure")


def test_teardown_abort_in_a_finalizer_is_not_reported_as_unraisable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reported: list[BaseException | None] = []

    def hook(unraisable: Any) -> None:
        reported.append(unraisable.exc_value)

    monkeypatch.setattr(sys, "unraisablehook", hook)
    result = _explore_once(_unraisable_scenario)
    assert result.failure is not None
    assert [type(exc) for exc in reported] == [ValueError]
    # The hooks in place before the exploration are back.
    assert sys.unraisablehook is hook


def test_hooks_are_restored_after_an_exploration() -> None:
    handle, hook = logging.Logger.handle, sys.unraisablehook
    seen: list[bool] = []

    def scenario() -> None:
        seen.append(logging.Logger.handle is not handle and sys.unraisablehook is not hook)

    result = _explore_once(scenario)
    assert result.failure is None
    assert seen == [True]
    assert logging.Logger.handle is handle
    assert sys.unraisablehook is hook


def test_nested_sessions_share_one_installation() -> None:
    handle = logging.Logger.handle
    with quiet_teardown():
        installed = logging.Logger.handle
        assert installed is not handle
        with quiet_teardown():
            assert logging.Logger.handle is installed
        assert logging.Logger.handle is installed  # the outer session is still open
    assert logging.Logger.handle is handle


def test_a_hook_replaced_during_the_session_is_left_alone() -> None:
    def theirs(unraisable: Any) -> None:
        del unraisable

    before = sys.unraisablehook
    try:
        with quiet_teardown():
            assert sys.unraisablehook is not before
            sys.unraisablehook = theirs
        assert sys.unraisablehook is theirs
    finally:
        sys.unraisablehook = before


def _raised(exc: BaseException, *, during: BaseException | None = None) -> BaseException:
    try:
        try:
            if during is not None:
                raise during
        finally:
            raise exc
    except BaseException as caught:
        return caught
    raise AssertionError("unreachable")


def test_is_teardown_exception_follows_the_cause_and_context_chain() -> None:
    assert is_teardown_exception(Abort())
    assert is_teardown_exception(_raised(RuntimeError("cleanup"), during=Abort()))
    caused = RuntimeError("wrapped")
    caused.__cause__ = Abort()
    assert is_teardown_exception(caused)
    assert not is_teardown_exception(None)
    assert not is_teardown_exception(ValueError("real"))
    assert not is_teardown_exception(_raised(RuntimeError("x"), during=KeyError("k")))
    looped = ValueError("a")
    looped.__context__ = ValueError("b")
    looped.__context__.__context__ = looped  # a cycle ends the walk
    assert not is_teardown_exception(looped)

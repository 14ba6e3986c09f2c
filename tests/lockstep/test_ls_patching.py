"""patched(): swap threading/time/queue names inside chosen modules, restore after."""

from __future__ import annotations

import queue
import threading
import time

import pytest
import samples.counter_module as cm

import lockstep
import lockstep.queue
import lockstep.threading
import lockstep.time
from lockstep import DFSStrategy, explore, patched, spawn


def test_patched_swaps_module_and_imported_names_and_restores():
    """`import threading` and `from threading import Lock` are both swapped, then restored."""
    assert cm.threading is threading
    with patched(cm) as modules:
        assert modules == (cm,)
        assert cm.threading is lockstep.threading
        assert cm.time is lockstep.time
        assert cm.Lock is lockstep.threading.Lock
    assert cm.threading is threading
    assert cm.time is time
    assert cm.Lock is threading.Lock


def test_patched_restores_on_exception_and_accepts_dotted_names():
    """Names are restored when the body raises; modules may be given by name."""

    def body():
        with patched("samples.counter_module"):
            assert cm.threading is lockstep.threading
            raise KeyError("boom")

    with pytest.raises(KeyError):
        body()
    assert cm.threading is threading
    assert cm.Lock is threading.Lock


def test_patched_module_still_works_outside_a_run():
    """The stand-ins fall back to real objects between executions."""
    with patched(cm):
        lock = cm.make_lock()
        assert lock.acquire(timeout=1)
        lock.release()
        assert cm.now() > 0
        counter = cm.Counter(locked=True)
        counter.increment()
        assert counter.value == 1


def test_patched_finds_the_race_only_in_the_unlocked_module_code():
    """Under explore(patch=...), the unlocked counter loses an update; the locked one never."""

    def scenario(locked):
        def run():
            counter = cm.Counter(locked)
            threads = [spawn(counter.increment) for _ in range(2)]
            for t in threads:
                t.join()
            assert counter.value == 2, counter.value

        return run

    racy = explore(scenario(False), strategy=DFSStrategy(), budget=1000, patch=[cm])
    assert racy.failure is not None
    assert racy.failure.kind == "exception"
    safe = explore(scenario(True), strategy=DFSStrategy(), budget=1000, patch=[cm])
    assert safe.failure is None
    assert safe.exhausted
    assert cm.threading is threading


def test_patched_refuses_stdlib_and_lockstep_modules():
    """Patching threading itself (or lockstep) is refused with a clear message."""
    with pytest.raises(lockstep.InvalidArgument, match="refusing to patch 'threading'"):
        patched(threading).__enter__()
    with pytest.raises(lockstep.InvalidArgument, match="cannot import module"):
        patched("no_such_module_for_lockstep").__enter__()
    with pytest.raises(lockstep.errors.InvalidArgumentType):
        patched(42).__enter__()  # type: ignore[arg-type]


def test_facades_fall_back_to_the_real_modules():
    """Names the stand-ins do not define come from the real modules."""
    assert lockstep.threading.excepthook is threading.excepthook
    assert lockstep.time.strftime is time.strftime
    assert lockstep.queue.Empty is queue.Empty
    assert lockstep.threading.TIMEOUT_MAX == threading.TIMEOUT_MAX

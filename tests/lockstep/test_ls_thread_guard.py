"""A real OS thread started inside a run fails the execution, naming what to patch.

Before, ``Worker(threading.Thread)`` from a module that was not patched ran as a real
thread next to the logical ones: nothing scheduled it, its accesses to watched state
were not seen, and a racy program passed ("explored every interleaving").
"""

from __future__ import annotations

import threading

import pytest
from samples.unpatched_worker import Worker

import lockstep
from lockstep import DporStrategy, RandomStrategy, explore
from lockstep.errors import UncontrolledThread


def _scenario() -> None:
    sink = lockstep.watch([])
    worker = Worker(sink)
    worker.start()
    sink.append("main")
    worker.join()


@pytest.mark.parametrize(
    "strategy", [RandomStrategy(seed=0), DporStrategy()], ids=["random", "dpor"]
)
def test_a_real_thread_started_in_a_run_fails_the_execution(strategy: lockstep.Strategy) -> None:
    result = explore(_scenario, strategy=strategy, budget=20, shrink=False)
    assert result.failure is not None, result.summary()
    message = result.failure.message
    assert message.startswith("UncontrolledThread in thread 0:main: ")
    assert "Worker 'unpatched-worker'" in message
    assert "probably 'samples.unpatched_worker'" in message


def test_patching_the_module_makes_it_a_logical_thread() -> None:
    result = explore(
        _scenario, strategy=DporStrategy(), budget=20, patch=["samples.unpatched_worker"]
    )
    assert result.failure is not None
    assert result.failure.kind == "data-race"  # now seen: the two appends race


def test_real_threads_outside_a_run_start_as_usual() -> None:
    done = threading.Event()
    explore(lambda: None, budget=1)  # a session opened and closed
    thread = threading.Thread(target=done.set)
    thread.start()
    thread.join()
    assert done.is_set()
    assert threading.Thread.start.__name__ == "start"  # the original is back


def test_the_error_is_a_lockstep_error_and_a_runtime_error() -> None:
    assert issubclass(UncontrolledThread, lockstep.LockstepError)
    assert issubclass(UncontrolledThread, RuntimeError)

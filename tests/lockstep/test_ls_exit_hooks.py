"""The main thread's end runs the patched modules' interpreter-exit hooks.

When the main thread's code is done, CPython runs what modules registered with
``threading._register_atexit`` before it waits for the non-daemon threads: that is
how an idle ``ThreadPoolExecutor`` worker stops. Without it, a pool kept alive past
the scenario (a server's, a manager's) left its worker waiting forever, reported as
a deadlock on correct code.
"""

from __future__ import annotations

import concurrent.futures
import concurrent.futures._base
import concurrent.futures.thread
import threading
from typing import Any

import lockstep
from tests.lockstep.samples import exit_hook_module

_KEEP: list[Any] = []  # what a long-lived server would hold: the pools stay referenced


def _explore(body: Any, *modules: Any, budget: int = 10) -> lockstep.ExploreResult:
    with lockstep.patched(*modules):
        return lockstep.explore(
            body, strategy=lockstep.RandomStrategy(0), budget=budget, progress=False
        )


def test_a_long_lived_pool_is_not_a_deadlock() -> None:
    """A pool that outlives the scenario: its workers stop at the main thread's end."""
    lock = lockstep.threading.Lock()

    def body() -> None:
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=2)
        _KEEP.append(pool)
        total = []

        def work(i: int) -> int:
            with lock:
                total.append(i)
            return i

        assert sorted(f.result() for f in [pool.submit(work, i) for i in range(3)]) == [0, 1, 2]

    result = _explore(body, concurrent.futures.thread, concurrent.futures._base)
    _KEEP.clear()
    assert result.failure is None, result.failure.message if result.failure else ""
    assert result.executions == 10


def test_the_hook_s_rebound_globals_come_back_and_a_real_pool_still_works() -> None:
    """``_python_exit`` sets the module's ``_shutdown``; after the exploration it is
    False again and a real pool accepts work."""

    def body() -> None:
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        _KEEP.append(pool)
        pool.submit(int).result()

    result = _explore(body, concurrent.futures.thread, concurrent.futures._base, budget=3)
    _KEEP.clear()
    assert result.failure is None
    assert concurrent.futures.thread._shutdown is False  # type: ignore[attr-defined]
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        assert pool.submit(lambda: 7).result() == 7


def test_a_module_s_own_exit_hook_stops_its_workers_in_every_execution() -> None:
    """A patched module's hook runs once per execution that needs it; the threads of
    earlier executions are dropped from its registry, not joined from this one."""
    before = len(exit_hook_module.hook_calls)

    def body() -> None:
        exit_hook_module.start_worker()

    result = _explore(body, exit_hook_module, budget=5)
    assert result.failure is None, result.failure.message if result.failure else ""
    assert len(exit_hook_module.hook_calls) - before == 5
    assert exit_hook_module.stopping() is False, "the hook's rebinding is undone"


def test_without_a_hook_a_thread_left_waiting_is_still_a_deadlock() -> None:
    """An unpatched registry means no hook: a worker nobody stops is a real hang at exit."""

    def body() -> None:
        event = lockstep.threading.Event()
        lockstep.threading.Thread(target=event.wait, name="forgotten").start()

    result = _explore(body, budget=2)
    assert result.failure is not None
    assert result.failure.kind == "deadlock"
    assert [row.thread_name for row in result.failure.deadlock] == ["forgotten"]
    assert "the main thread's code is done" in result.failure.message
    assert "would wait at exit for ever" in result.failure.message


def test_hooks_do_not_run_when_nothing_is_left_running() -> None:
    """With every other thread done, the main thread's end runs no hook."""
    before = len(exit_hook_module.hook_calls)

    def body() -> None:
        worker = lockstep.threading.Thread(target=lambda: None)
        worker.start()
        worker.join()

    result = _explore(body, exit_hook_module, budget=3)
    assert result.failure is None
    assert len(exit_hook_module.hook_calls) == before
    assert threading.main_thread().is_alive()

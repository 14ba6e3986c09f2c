"""The race detector's view of which threads hold a lock, followed from the steps.

A read of a location declared intentionally racy is a switch point only when its
thread holds no lock (``lockstep._memory._state._explored``), so the detector must
know at every access whether the thread holds one: Lock, RLock (re-entered),
Condition (its lock given up while waiting and taken back), a lock released by
another thread. Each thread asserts what it knows it holds.
"""

from __future__ import annotations

from ls_helpers import backend_budget

import lockstep
from lockstep import DFSStrategy, RandomStrategy, explore
from lockstep._runtime import current_logical_thread

threading = lockstep.threading


class Shared:
    def __init__(self) -> None:
        self.value = 0


def _holds() -> bool:
    lt = current_logical_thread()
    assert lt is not None
    memory = lt.run.memory
    assert memory is not None
    assert memory.detector is not None
    return memory.detector.holds_lock(lt)


def scenario() -> None:
    lockstep.watch(Shared())  # a watched run: the detector exists
    lock, rlock = threading.Lock(), threading.RLock()
    cond = threading.Condition()
    handed = threading.Lock()
    handed.acquire()  # held by main, released by another thread below
    ready: list[bool] = []

    def nested() -> None:
        assert not _holds()
        with rlock:
            assert _holds()
            with rlock:
                assert _holds()
            assert _holds()  # still held once
            with lock:
                assert _holds()
            assert _holds()
        assert not _holds()

    def waiter() -> None:
        with cond:
            assert _holds()
            cond.wait_for(lambda: bool(ready), timeout=5)
            assert _holds()  # taken back after the wait
        assert not _holds()

    def notifier() -> None:
        with cond:
            ready.append(True)
            cond.notify_all()
        assert not _holds()
        handed.release()  # a lock main acquired, released here
        assert not _holds()

    assert _holds()  # main holds `handed` until the notifier releases it
    threads = [lockstep.spawn(f) for f in (nested, waiter, notifier)]
    for t in threads:
        t.join()
    assert not _holds()


# The waiter waits on the condition (its lock given up and taken back) in all of DFS's
# first 60 executions and in two of three random ones, and every execution hands
# ``handed`` from main to the notifier: 40 executions cover each case many times.
# (Asked inside each test: the ``backend`` fixture names the backend after import.)
def _budget() -> int:
    return backend_budget(greenlet=300, thread=40)


def test_every_thread_knows_what_it_holds_dfs() -> None:
    result = explore(scenario, strategy=DFSStrategy(), budget=_budget(), shrink=False)
    assert result.failure is None, result.failure


def test_every_thread_knows_what_it_holds_random() -> None:
    strategy = RandomStrategy(seed=1)
    result = explore(scenario, strategy=strategy, budget=_budget(), shrink=False)
    assert result.failure is None, result.failure

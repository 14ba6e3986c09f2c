"""Patching swaps what a module bound at import time, not only its global names.

``def __init__(self, lock_factory=threading.Lock)``, ``clock = time.monotonic`` in a
class body and ``class Worker(threading.Thread)`` / ``class Mailbox(queue.Queue)`` are
all evaluated once, when the module is imported; renaming the module's globals does
not reach them, so a patched module still built real locks, read the real clock and
started real threads: its synchronisation was invisible, the race detector reported
the accesses it orders as data races (``readerwriterlock`` builds its locks exactly
this way), and DPOR "explored every interleaving" in one execution.
"""

from __future__ import annotations

import queue
import threading
import time

from samples import bindings_module, foreign_defaults
from samples.bindings_module import Gate, Latch, Mailbox, Slots, Ticker, Worker

import lockstep
from lockstep import DporStrategy, RandomStrategy, explore
from lockstep import queue as ls_queue
from lockstep import threading as ls_threading
from lockstep import time as ls_time

PATCH = ["samples.bindings_module"]


def test_defaults_are_swapped_inside_and_restored_after() -> None:
    init = Gate.__init__
    with lockstep.patched(bindings_module):
        assert init.__defaults__ == (ls_threading.Lock,)
        assert init.__kwdefaults__ == {"clock": ls_time.monotonic}
        assert Gate.Inner.make.__defaults__ == (ls_threading.Event,)
        assert Gate.Inner.lock.fget.__defaults__ == (ls_threading.RLock,)
        assert bindings_module.make_lock.__defaults__ == (ls_threading.RLock,)
        # defined in another module: not this module's to patch
        assert foreign_defaults.foreign.__defaults__ == (threading.Lock,)
    assert init.__defaults__ == (threading.Lock,)
    assert init.__kwdefaults__ == {"clock": time.monotonic}
    assert Gate.Inner.make.__defaults__ == (threading.Event,)
    assert Gate.Inner.lock.fget.__defaults__ == (threading.RLock,)
    assert bindings_module.make_lock.__defaults__ == (threading.RLock,)


def _two_bumps() -> None:
    gate = lockstep.watch(Gate())
    thread = lockstep.spawn(gate.bump)
    gate.bump()
    thread.join()
    assert gate.value == 2


def test_a_lock_from_a_default_orders_memory() -> None:
    """The lock the default built is lockstep's: no data race, every order explored."""
    result = explore(_two_bumps, strategy=DporStrategy(), budget=100, patch=PATCH)
    assert result.failure is None, result.failure
    assert result.exhausted
    sampled = explore(_two_bumps, strategy=RandomStrategy(seed=0), budget=50, patch=PATCH)
    assert sampled.failure is None, sampled.failure


def test_a_clock_from_a_default_is_virtual() -> None:
    def scenario() -> None:
        gate = Gate()
        start = ls_time.monotonic()
        ls_time.sleep(5.0)
        gate.bump()
        assert gate.stamp == start + 5.0  # the run's virtual clock, exactly

    result = explore(scenario, budget=1, patch=PATCH)
    assert result.failure is None, result.failure


def test_class_attributes_are_swapped_and_a_builtin_stays_unbound() -> None:
    """``clock = time.monotonic`` in a class body does not bind (a builtin); its Python
    stand-in must not bind either, or ``self.clock()`` would pass ``self``."""

    def scenario() -> None:
        ticker = Ticker()
        assert isinstance(ticker.lock, ls_threading.Lock)
        start = ls_time.monotonic()
        ls_time.sleep(2.0)
        assert ticker.now() == start + 2.0

    result = explore(scenario, budget=1, patch=PATCH)
    assert result.failure is None, result.failure
    assert vars(Ticker)["lock_factory"] is threading.Lock
    assert vars(Ticker)["clock"] is time.monotonic


def test_thread_subclasses_defined_in_the_module_get_lockstep_bases() -> None:
    with lockstep.patched(bindings_module):
        assert Worker.__bases__ == (ls_threading.Thread,)
        assert Latch.__bases__ == (ls_threading.Event,)
        assert Mailbox.__bases__ == (ls_queue.Queue,)
        assert Slots.__bases__ == (threading.local,)
    assert Worker.__bases__ == (threading.Thread,)
    assert Latch.__bases__ == (threading.Event,)
    assert Mailbox.__bases__ == (queue.Queue,)


def _worker_scenario(locked: bool) -> None:
    sink = lockstep.watch([])
    lock = ls_threading.Lock() if locked else None
    worker = Worker(sink, lock)
    worker.start()
    if lock is None:
        sink.append("main")
    else:
        with lock:
            sink.append("main")
    worker.join()
    assert sorted(sink) == ["main", "worker"]


def test_a_thread_subclass_runs_as_a_logical_thread() -> None:
    """Before, Worker.start() began a real OS thread: its accesses were invisible (no
    race reported) and DPOR certified one interleaving."""
    racy = explore(
        lambda: _worker_scenario(locked=False), strategy=DporStrategy(), budget=50, patch=PATCH
    )
    assert racy.failure is not None
    assert racy.failure.kind == "data-race"
    assert "bindings_module.py" in racy.failure.message  # the worker's side, in Worker.run
    locked = explore(
        lambda: _worker_scenario(locked=True), strategy=DporStrategy(), budget=50, patch=PATCH
    )
    assert locked.failure is None, locked.failure
    assert locked.exhausted
    assert locked.executions >= 2  # both orders of the two locked appends


def test_a_queue_subclass_is_a_controlled_queue() -> None:
    """A consumer waiting on an empty ``Mailbox`` (``queue.Queue`` subclass bound at
    import) used to block on the real queue's condition: a stall. It is lockstep's now."""

    def scenario() -> None:
        box = Mailbox()
        got = lockstep.watch([])
        consumer = lockstep.spawn(lambda: got.append(box.get()))
        box.put("mail")
        consumer.join()
        assert got == ["mail"]

    result = explore(scenario, strategy=DporStrategy(), budget=50, patch=PATCH, stall_diagnosis=1.0)
    assert result.failure is None, result.failure
    assert result.exhausted
    # Both orders of put and get were explored: with the real queue its operations were
    # no switch points, and DPOR "explored every interleaving" in one execution.
    assert result.executions >= 2

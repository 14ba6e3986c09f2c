"""Real-thread regression scenarios, one per reported interleaving (B*).

Each scenario takes the scripted registry and a stack built on it, drives
real threads into the interleaving the bug needs (with gates the fakes block
on and bounded waits on observable conditions), and asserts the invariant the
bug breaks. It passes on every schedule of correct code; ``broken.py`` holds,
for each scenario, a variant of the core with exactly that bug, and
``test_broken_variants.py`` proves the scenario fails on it.

A thread is seen "blocked inside the core" either through the lifecycle table
(a second reservation on an entry another thread holds) or, where the core
waits on a condition, through :func:`parked` (its innermost Python frame is a
``threading`` wait). A variant may expose a pause point (``NonAtomicAcquire``
does) that a scenario drives to reach the window it must prove unreachable in
the core.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable
from typing import Any

from modelmanager import (
    ModelManager,
    ModelManagerDecorator,
    ModelNotFound,
    WithFixedSizeCache,
)

from .helpers import (
    GATE_TIMEOUT,
    FakeRegistry,
    ScriptedFailure,
    Step,
    Worker,
    lru_matches_registry,
    quiescent,
    start,
    wait_until,
)

__all__ = [
    "SCENARIOS",
    "PressureOnce",
    "Scenario",
    "build_cache",
    "build_manager",
    "build_pressure_cache",
    "parked",
    "reservations",
]

Stack = Any
Scenario = Callable[[FakeRegistry, Stack], None]


def build_manager(registry: FakeRegistry, *, depth: int = 0) -> Stack:
    """A ``ModelManager`` inside ``depth`` pass-through ``ModelManagerDecorator`` layers."""
    stack: Stack = ModelManager(registry, lock_timeout=GATE_TIMEOUT)
    for _ in range(depth):
        stack = ModelManagerDecorator(stack)
    return stack


def build_cache(registry: FakeRegistry, max_size: int = 2, *, depth: int = 0) -> Stack:
    """A cache over :func:`build_manager` (pass-through layers between them).

    ``on_full="proceed"``: the scenarios check the spec's policy for a full
    cache (admit over the bound), not the default bounded wait.
    """
    return WithFixedSizeCache(
        build_manager(registry, depth=depth),
        max_size=max_size,
        queue_lock_timeout=GATE_TIMEOUT,
        on_full="proceed",
    )


def reservations(stack: Stack, model_id: str) -> int:
    """Callers holding or waiting for ``model_id``'s lifecycle entry (0: none)."""
    entry = stack.lifecycle_snapshot().get(model_id)
    return 0 if entry is None else entry.reservations


def parked(worker: threading.Thread) -> bool:
    """Whether ``worker`` is blocked in a ``threading`` wait (Condition/Event).

    Observed from its innermost Python frame; a thread blocked in a C-level
    lock acquire is not "parked" by this definition.
    """
    frame = sys._current_frames().get(worker.ident or -1)
    return (
        frame is not None
        and frame.f_code.co_filename == threading.__file__
        and frame.f_code.co_name in {"wait", "wait_for"}
    )


def _blocked_behind(stack: Stack, model_id: str, worker: Worker, what: str) -> None:
    """Wait until ``worker`` waits on ``model_id``'s entry (two reservations) or returned."""
    wait_until(
        lambda: worker.done.is_set() or reservations(stack, model_id) >= 2,
        f"{worker.name} to wait for {model_id!r}'s lifecycle ({what})",
    )


# --------------------------------------------------------------- B1, B3


def remove_then_add_is_single_flight(registry: FakeRegistry, stack: Stack) -> None:
    """B1/B3: R removes X while W waits to add it; N arrives while W constructs.

    A split generation lets N construct X on a new entry while W constructs
    it on the old one. Invariant I2: at most one constructor of X at a time.
    """
    stack.add_model("X")
    clear_gate = registry.gate("R inside clear_cache(X)")
    w_gate = registry.gate("W constructing X")
    n_gate = registry.gate("N constructing X")
    registry.script_clear("X", Step(gate=clear_gate))
    registry.script_load("X", Step(gate=w_gate), Step(gate=n_gate))

    remover = start("R", lambda: stack.remove("X"))
    clear_gate.wait_entered()
    waiter = start("W", lambda: stack.add_model("X"))
    _blocked_behind(stack, "X", waiter, "held by R's removal")
    clear_gate.open()
    remover.finish()
    w_gate.wait_entered()
    newcomer = start("N", lambda: stack.add_model("X"))
    wait_until(
        lambda: n_gate.entered.is_set() or reservations(stack, "X") >= 2,
        "N to wait for X (or to start a second constructor)",
    )
    assert registry.ghost.max_live_constructors["X"] == 1, (
        "two constructors of 'X' ran at once: N used a second lifecycle generation (I2)"
    )
    w_gate.open()
    n_gate.open()
    waiter.finish()
    newcomer.finish()
    assert stack.keys() == ["X"]
    assert registry.ghost.constructor_calls["X"] == 2, "N must find X loaded, not rebuild it"
    quiescent(stack, registry.ghost)


# --------------------------------------------------------------------- B2


def failed_constructor_is_single_flight(registry: FakeRegistry, stack: Stack) -> None:
    """B2: H's constructor of X fails while W waits; N arrives while W constructs.

    Invariant I2 again, on the constructor-failure path; and I10: the failed
    add leaves nothing behind.
    """
    h_gate = registry.gate("H constructing X (will fail)")
    w_gate = registry.gate("W constructing X")
    n_gate = registry.gate("N constructing X")
    registry.script_load("X", Step(gate=h_gate, fail=True), Step(gate=w_gate), Step(gate=n_gate))

    holder = start("H", lambda: stack.add_model("X"))
    h_gate.wait_entered()
    waiter = start("W", lambda: stack.add_model("X"))
    _blocked_behind(stack, "X", waiter, "held by H's constructor")
    h_gate.open()
    holder.join(GATE_TIMEOUT)
    assert isinstance(holder.error, ScriptedFailure), f"H must fail with its own error: {holder}"
    w_gate.wait_entered()
    newcomer = start("N", lambda: stack.add_model("X"))
    wait_until(
        lambda: n_gate.entered.is_set() or reservations(stack, "X") >= 2,
        "N to wait for X (or to start a second constructor)",
    )
    assert registry.ghost.max_live_constructors["X"] == 1, (
        "two constructors of 'X' ran at once after a failed constructor (I2)"
    )
    w_gate.open()
    n_gate.open()
    waiter.finish()
    newcomer.finish()
    assert stack.keys() == ["X"]
    assert registry.ghost.constructor_calls["X"] == 2
    quiescent(stack, registry.ghost)


# --------------------------------------------------------------------- B4


def add_during_removal_returns_a_live_model(registry: FakeRegistry, stack: Stack) -> None:
    """B4: A adds X while R is inside X's clear_cache.

    Invariant I3: when add_model(X) returns, X is registered with a live model
    (not torn down, not being torn down); I4 at quiescence (no phantom).
    """
    stack.add_model("X")
    clear_gate = registry.gate("R inside clear_cache(X)")
    registry.script_clear("X", Step(gate=clear_gate))
    observed: list[str] = []

    def add_and_look() -> None:
        stack.add_model("X")
        try:
            model = stack["X"]
        except ModelNotFound:
            observed.append("add_model('X') returned but X is not registered")
            return
        if model.teardown_started:
            observed.append(f"add_model('X') returned {model!r}, which is being torn down")

    remover = start("R", lambda: stack.remove("X"))
    clear_gate.wait_entered()
    adder = start("A", add_and_look)
    _blocked_behind(stack, "X", adder, "held by R's removal")
    clear_gate.open()
    remover.finish()
    adder.finish()
    assert not observed, f"I3 violated: {observed}"
    lru_matches_registry(stack)
    assert stack.keys() == ["X"]
    quiescent(stack, registry.ghost)


# --------------------------------------------------------------------- B7


def concurrent_cold_adds_leave_one_lru_entry(registry: FakeRegistry, stack: Stack) -> None:
    """B7: T1 and T2 both cold-add X; T2 arrives while T1 constructs.

    Invariants I2 (one constructor) and I4 (no duplicate, LRU == registered).
    """
    gate = registry.gate("T1 constructing X")
    registry.script_load("X", Step(gate=gate))
    first = start("T1", lambda: stack.add_model("X"))
    gate.wait_entered()
    second = start("T2", lambda: stack.add_model("X"))
    _blocked_behind(stack, "X", second, "held by T1's constructor")
    gate.open()
    first.finish()
    second.finish()
    lru_matches_registry(stack)
    assert stack.lru_order() == ["X"]
    assert registry.ghost.constructor_calls["X"] == 1
    quiescent(stack, registry.ghost)


# --------------------------------------------------------------------- B8


def failed_add_keeps_concurrent_success_in_lru(registry: FakeRegistry, stack: Stack) -> None:
    """B8: T1's load of X fails while T2 waits to load X, which then succeeds.

    Invariant I4: X, loaded by T2, is in the LRU exactly once; I10: T1's
    failure left nothing behind.
    """
    gate = registry.gate("T1 constructing X (will fail)")
    registry.script_load("X", Step(gate=gate, fail=True))
    first = start("T1", lambda: stack.add_model("X"))
    gate.wait_entered()
    second = start("T2", lambda: stack.add_model("X"))
    _blocked_behind(stack, "X", second, "held by T1's constructor")
    gate.open()
    first.join(GATE_TIMEOUT)
    assert isinstance(first.error, ScriptedFailure), f"T1 must fail with its own error: {first}"
    second.finish()
    lru_matches_registry(stack)
    assert stack.keys() == ["X"]
    quiescent(stack, registry.ghost)


# -------------------------------------------------------------------- B14


def admission_counts_in_flight_loads(registry: FakeRegistry, stack: Stack) -> None:
    """B14: cache of 2 holding A; T1 cold-loads B; T2 cold-adds C meanwhile.

    Invariant I11: registered plus in-flight never exceeds max_size (nothing
    is pinned or leased), so T2 must evict A before constructing C.
    """
    assert stack.max_size == 2
    stack.add_model("A")
    b_gate = registry.gate("T1 constructing B")
    c_gate = registry.gate("T2 constructing C")
    registry.script_load("B", Step(gate=b_gate))
    registry.script_load("C", Step(gate=c_gate))
    first = start("T1", lambda: stack.add_model("B"))
    b_gate.wait_entered()
    second = start("T2", lambda: stack.add_model("C"))
    wait_until(
        lambda: c_gate.entered.is_set() or second.done.is_set(),
        "T2 to start constructing C",
    )
    assert registry.ghost.max_live_total <= 2, (
        f"{registry.ghost.max_live_total} models live or loading in a cache of 2 (I11)"
    )
    b_gate.open()
    c_gate.open()
    first.finish()
    second.finish()
    assert sorted(stack.keys()) == ["B", "C"]
    lru_matches_registry(stack)
    quiescent(stack, registry.ghost)


def admission_waits_for_in_flight_load(registry: FakeRegistry, stack: Stack) -> None:
    """B14: cache of 1, empty; T1 cold-loads A; T2 cold-adds B meanwhile.

    The only slot is held by an in-flight load, which is not evictable: T2
    must wait for it (I11), then evict A and load B; it never constructs B
    while A is loading.
    """
    assert stack.max_size == 1
    a_gate = registry.gate("T1 constructing A")
    b_gate = registry.gate("T2 constructing B")
    registry.script_load("A", Step(gate=a_gate))
    registry.script_load("B", Step(gate=b_gate))
    first = start("T1", lambda: stack.add_model("A"))
    a_gate.wait_entered()
    second = start("T2", lambda: stack.add_model("B"))
    wait_until(
        lambda: b_gate.entered.is_set() or second.done.is_set() or parked(second),
        "T2 to wait for the in-flight load of A (or to construct B)",
    )
    assert registry.ghost.max_live_total <= 1, (
        f"{registry.ghost.max_live_total} models live or loading in a cache of 1 (I11)"
    )
    a_gate.open()
    first.finish()
    b_gate.wait_entered()
    assert registry.ghost.constructed("A")[0].successful_clears == 1, "A is evicted for B"
    b_gate.open()
    second.finish()
    assert stack.keys() == ["B"]
    assert stack.statistics().pinned_overflow == 0
    lru_matches_registry(stack)
    quiescent(stack, registry.ghost)


# -------------------------------------------------------------------- B15


def refresh_is_not_blocked_by_slow_eviction(registry: FakeRegistry, stack: Stack) -> None:
    """B15: T1's add of C evicts A, whose clear_cache is slow.

    Invariant I14: the LRU lock is never held across clear_cache, so hits on
    B (refresh, a lease, a warm add, lru_order) complete while A's unload is
    still blocked.
    """
    assert stack.max_size == 2
    stack.add_model("A")
    stack.add_model("B")
    clear_gate = registry.gate("eviction inside clear_cache(A)")
    registry.script_clear("A", Step(gate=clear_gate))
    adder = start("T1", lambda: stack.add_model("C"))
    clear_gate.wait_entered()
    try:
        stack.refresh("B")
        with stack.lease("B"):
            pass
        stack.add_model("B")
        order = stack.lru_order()
    except TimeoutError as error:
        raise AssertionError(
            f"an inference-path call waited on the LRU lock during clear_cache: {error}"
        ) from error
    assert not clear_gate.released.is_set()
    assert order == ["A", "B"], f"A keeps its place until its unload succeeds: {order}"
    clear_gate.open()
    adder.finish()
    assert stack.lru_order() == ["B", "C"]
    lru_matches_registry(stack)
    quiescent(stack, registry.ghost)


class PressureOnce:
    """A memory probe that reports pressure on the measurements after :meth:`arm`.

    ``arm(n)`` makes the next ``n`` measurements report 10% free; every other
    measurement reports 90% free. ``release_cache`` calls are counted.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pressured = 0
        self.release_calls = 0

    def arm(self, measurements: int = 1) -> None:
        with self._lock:
            self._pressured = measurements

    def free_fraction(self) -> float | None:
        with self._lock:
            if self._pressured:
                self._pressured -= 1
                return 0.1
        return 0.9

    def release_cache(self) -> None:
        with self._lock:
            self.release_calls += 1


def build_pressure_cache(
    registry: FakeRegistry,
    *,
    cls: type[WithFixedSizeCache] = WithFixedSizeCache,
    queue_lock_timeout: float = GATE_TIMEOUT,
    depth: int = 0,
) -> WithFixedSizeCache:
    """A cache of 3 with a :class:`PressureOnce` probe and a 50% free threshold."""
    return cls(
        build_manager(registry, depth=depth),
        max_size=3,
        memory_probe=PressureOnce(),
        memory_free_threshold=0.5,
        queue_lock_timeout=queue_lock_timeout,
    )


def refresh_is_not_blocked_by_memory_eviction(registry: FakeRegistry, stack: Stack) -> None:
    """B15 on the memory path: T1's add of C finds memory pressure and evicts A, B.

    While A's clear_cache is blocked, inference-path calls on B (a victim
    whose unload has not started) complete: the LRU lock is not held across
    unloads, ``gc.collect`` or the probe's cache release (I14).
    """
    stack.add_model("A")
    stack.add_model("B")
    clear_gate = registry.gate("memory eviction inside clear_cache(A)")
    registry.script_clear("A", Step(gate=clear_gate))
    stack.memory_probe.arm(1)
    adder = start("T1", lambda: stack.add_model("C"))
    clear_gate.wait_entered()
    try:
        stack.refresh("B")
        with stack.lease("B"):
            pass
        order = stack.lru_order()
    except TimeoutError as error:
        raise AssertionError(
            f"an inference-path call waited on the LRU lock during clear_cache: {error}"
        ) from error
    assert order == ["A", "B"], f"victims keep their places until unloaded: {order}"
    clear_gate.open()
    adder.finish()
    assert stack.keys() == ["C"]
    assert stack.statistics().evictions_memory == 2
    assert stack.memory_probe.release_calls == 1
    lru_matches_registry(stack)
    quiescent(stack, registry.ghost)


# -------------------------------------------------------------------- B17


def remove_waits_for_lease(registry: FakeRegistry, stack: Stack) -> None:
    """B17: R removes X while a request holds a lease on X and uses it.

    Invariant I13: clear_cache never runs on a model while a lease on it is
    held; the removal completes once the lease is given back.
    """
    stack.add_model("X")
    with stack.lease("X") as model:
        model.in_use.set()
        remover = start("R", lambda: stack.remove("X"))
        wait_until(
            lambda: remover.done.is_set() or parked(remover),
            "R to wait for the lease on X (or to finish)",
        )
        assert not registry.ghost.violations, f"I13 violated: {registry.ghost.violations}"
        assert not model.teardown_started, "X was torn down under a held lease (I13)"
        model.in_use.clear()
    remover.finish()
    assert model.successful_clears == 1
    assert stack.keys() == []
    lru_matches_registry(stack)
    quiescent(stack, registry.ghost)


def eviction_skips_leased_model(registry: FakeRegistry, stack: Stack) -> None:
    """B17: a cache of 1 holds leased X; T adds Y.

    Invariants I13 and I14: eviction skips the leased model instead of
    unloading it or waiting for its lease; Y is admitted over capacity, and
    once the lease ends the cache evicts back to its bound.
    """
    assert stack.max_size == 1
    stack.add_model("X")
    with stack.lease("X") as model:
        model.in_use.set()
        adder = start("T", lambda: stack.add_model("Y"))
        wait_until(
            lambda: adder.done.is_set() or parked(adder),
            "T to finish adding Y (or to block)",
        )
        assert adder.done.is_set(), "adding Y waited for the lease on X instead of skipping X"
        adder.finish()
        assert not registry.ghost.violations, f"I13 violated: {registry.ghost.violations}"
        assert not model.teardown_started
        model.in_use.clear()
    # The lease ended: X, least recent, went and the bound of 1 came back (issue 14).
    assert sorted(stack.keys()) == ["Y"]
    assert stack.statistics().pinned_overflow == 1
    lru_matches_registry(stack)
    quiescent(stack, registry.ghost)


def acquire_is_atomic(registry: FakeRegistry, stack: Stack) -> None:
    """B17: U acquires X (load and lease) in a cache of 1; T adds Y meanwhile.

    Invariant: acquire() makes add-then-use atomic, so no other thread's
    eviction comes between U's load of X and its use: U's model is live for
    the whole block, whatever T does.
    """
    assert stack.max_size == 1
    x_gate = registry.gate("U constructing X")
    registry.script_load("X", Step(gate=x_gate))
    other_done = threading.Event()
    used: list[str] = []
    # A variant with a window between its load and its lease exposes it as a
    # pause point; holding it until T is done makes T's eviction land there.
    if hasattr(stack, "between_add_and_lease"):
        stack.between_add_and_lease = lambda: other_done.wait(GATE_TIMEOUT)

    def use() -> None:
        with stack.acquire("X") as model:
            model.in_use.set()
            if not other_done.wait(GATE_TIMEOUT):
                raise AssertionError("T never finished adding Y")
            used.append("live" if not model.teardown_started and "X" in stack else "gone")
            model.in_use.clear()

    user = start("U", use)
    x_gate.wait_entered()
    other = start("T", lambda: stack.add_model("Y"))
    x_gate.open()
    try:
        other.finish()
    finally:
        other_done.set()
    try:
        user.finish()
    except ModelNotFound as error:
        raise AssertionError(
            f"X was evicted between acquire's load and its lease: {error}"
        ) from error
    assert used == ["live"], f"U's model was unloaded while U used it: {used}"
    assert not registry.ghost.violations, f"I13 violated: {registry.ghost.violations}"
    # U's lease ended: the cache of 1 is back within its bound.
    assert len(stack.keys()) == 1
    lru_matches_registry(stack)
    quiescent(stack, registry.ghost)


SCENARIOS: dict[str, tuple[Scenario, Callable[..., Stack]]] = {
    "B1-remove-add": (remove_then_add_is_single_flight, build_manager),
    "B2-failed-constructor": (failed_constructor_is_single_flight, build_manager),
    "B4-add-during-removal": (add_during_removal_returns_a_live_model, build_cache),
    "B7-concurrent-cold-adds": (concurrent_cold_adds_leave_one_lru_entry, build_cache),
    "B8-failed-and-successful-add": (failed_add_keeps_concurrent_success_in_lru, build_cache),
    "B14-admission-in-flight": (admission_counts_in_flight_loads, build_cache),
    "B14-admission-waits-for-in-flight": (
        admission_waits_for_in_flight_load,
        functools.partial(build_cache, max_size=1),
    ),
    "B15-refresh-during-eviction": (refresh_is_not_blocked_by_slow_eviction, build_cache),
    "B15-refresh-during-memory-eviction": (
        refresh_is_not_blocked_by_memory_eviction,
        build_pressure_cache,
    ),
    "B17-remove-waits-for-lease": (remove_waits_for_lease, build_cache),
    "B17-eviction-skips-leased": (
        eviction_skips_leased_model,
        functools.partial(build_cache, max_size=1),
    ),
    "B17-acquire-is-atomic": (acquire_is_atomic, functools.partial(build_cache, max_size=1)),
}
"""Scenario name -> (scenario, builder of the correct stack it runs against).

A builder is called as ``build(registry, depth=n)``: ``n`` pass-through
decorator layers sit under the cache (or around the bare manager).
"""

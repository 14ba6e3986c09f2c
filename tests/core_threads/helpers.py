"""Fakes and thread helpers for the real-thread regression tests of the core.

Threads are ordered with :class:`Gate` (an "entered" event the fake sets and a
"release" event the test sets) and with :func:`wait_until`, a bounded spin on
an observable condition used only where a thread must be seen blocked inside
the core. Every wait is bounded and fails the test with a message saying what
never happened; no assertion depends on how long anything took.

:class:`Ghost` records what really happened (constructors running per id,
models constructed, ``clear_cache`` calls) independently of the manager, so
invariants are checked against ground truth, not against the manager's own
view of itself.
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from collections.abc import Callable
from typing import Any

import attrs

from modelmanager import ModelManagerDecorator

__all__ = [
    "GATE_TIMEOUT",
    "FakeModel",
    "FakeRegistry",
    "Gate",
    "Ghost",
    "ScriptedFailure",
    "Step",
    "Worker",
    "lru_matches_registry",
    "quiescent",
    "start",
    "wait_until",
]

# A bound, not a timing assumption: a correct run never gets near it; a broken
# variant that blocks forever fails with a clear message instead of hanging.
GATE_TIMEOUT = 30.0
# wait_until probes at most this many times, waiting 1 ms between probes.
WAIT_PROBES = 20_000


def wait_until(predicate: Callable[[], bool], what: str, *, probes: int = WAIT_PROBES) -> None:
    """Return once ``predicate()`` is true; fail after ``probes`` bounded probes.

    Used only to see a thread become blocked inside the core (e.g. a second
    reservation on a lifecycle entry); the condition itself is what the test
    relies on, never the elapsed time.
    """
    pause = threading.Event()
    for _ in range(probes):
        if predicate():
            return
        pause.wait(0.001)
    raise AssertionError(f"gave up waiting for {what} after {probes} probes")


class Gate:
    """A point where a fake blocks until the test opens it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.entered = threading.Event()
        self.released = threading.Event()

    def pass_through(self) -> None:
        """Signal "entered", then block until :meth:`open` (bounded)."""
        self.entered.set()
        if not self.released.wait(GATE_TIMEOUT):
            raise AssertionError(f"gate {self.name!r} was never opened")

    def open(self) -> None:
        self.released.set()

    def wait_entered(self) -> None:
        """Block until some thread has entered the gate (bounded)."""
        if not self.entered.wait(GATE_TIMEOUT):
            raise AssertionError(f"no thread ever entered gate {self.name!r}")


class ScriptedFailure(RuntimeError):
    """The failure a scripted constructor or ``clear_cache`` raises."""


@attrs.frozen
class Step:
    """What one constructor or ``clear_cache`` call does: maybe block, maybe fail."""

    gate: Gate | None = None
    fail: bool = False


class Ghost:
    """Ground truth recorded by the fakes; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.live_constructors: Counter[str] = Counter()
        self.max_live_constructors: Counter[str] = Counter()
        self.constructor_calls: Counter[str] = Counter()
        self.models: list[FakeModel] = []
        self.max_live_total = 0  # constructing + constructed-and-not-torn-down
        self.violations: list[str] = []

    def _live_total(self) -> int:
        built = sum(1 for model in self.models if not model.teardown_started)
        return built + sum(self.live_constructors.values())

    def constructor_entered(self, model_id: str) -> int:
        """Record a constructor start; returns the live total it made (I11 checks)."""
        with self._lock:
            self.constructor_calls[model_id] += 1
            self.live_constructors[model_id] += 1
            self.max_live_constructors[model_id] = max(
                self.max_live_constructors[model_id], self.live_constructors[model_id]
            )
            live_total = self._live_total()
            self.max_live_total = max(self.max_live_total, live_total)
            return live_total

    def constructor_exited(self, model: FakeModel | None, model_id: str) -> None:
        with self._lock:
            self.live_constructors[model_id] -= 1
            if model is not None:
                self.models.append(model)

    def record_violation(self, message: str) -> None:
        with self._lock:
            self.violations.append(message)

    def constructed(self, model_id: str | None = None) -> list[FakeModel]:
        with self._lock:
            return [m for m in self.models if model_id is None or m.model_id == model_id]

    def live_models(self) -> list[FakeModel]:
        """Constructed models whose teardown has not started."""
        with self._lock:
            return [m for m in self.models if not m.teardown_started]


class FakeModel:
    """A model whose ``clear_cache`` follows a script and reports to the ghost."""

    def __init__(self, model_id: str, registry: FakeRegistry) -> None:
        self.model_id = model_id
        self._registry = registry
        self._lock = threading.Lock()
        self.teardown_started = False
        self.clear_calls = 0
        self.successful_clears = 0
        self.teardown_finished = threading.Event()
        # Set by a test while it uses the model under a lease; a clear_cache
        # that starts while it is set is a violation of I13.
        self.in_use = threading.Event()
        # Threads currently inside a lease body on this model (stress test).
        self.users = 0

    def enter_use(self) -> None:
        """A lease holder starts using the model; it must be live (I13)."""
        with self._lock:
            self.users += 1
            torn_down = self.teardown_started
        if torn_down:
            self._registry.ghost.record_violation(f"a lease holder got torn-down {self!r}")

    def exit_use(self) -> None:
        with self._lock:
            self.users -= 1

    def clear_cache(self, delete_from_disk: bool = True) -> None:
        step = self._registry.next_clear_step(self.model_id)
        with self._lock:
            self.clear_calls += 1
            self.teardown_started = True
            in_use = self.in_use.is_set() or self.users > 0
        if in_use:
            self._registry.ghost.record_violation(
                f"clear_cache of {self.model_id!r} ran while a lease holder was using it"
            )
        problem = self._registry.check_clear(self.model_id, delete_from_disk)
        if problem is not None:
            self._registry.ghost.record_violation(problem)
        if step.gate is not None:
            step.gate.pass_through()
        if step.fail:
            with self._lock:
                # A failed clear_cache leaves the model loaded and usable.
                self.teardown_started = False
            raise ScriptedFailure(f"scripted clear_cache failure of {self.model_id!r}")
        with self._lock:
            self.successful_clears += 1
        self.teardown_finished.set()

    def __repr__(self) -> str:
        return f"FakeModel({self.model_id!r}, torn_down={self.teardown_started})"


class FakeRegistry:
    """Hands out scripted factories for any id; records everything in ``ghost``.

    ``script_load(id, *steps)`` / ``script_clear(id, *steps)`` queue what the
    next constructor / ``clear_cache`` calls of ``id`` do; an empty queue
    means "succeed at once". ``fail_load`` can inject failures by predicate
    (used by the stress test with a seeded random source).
    """

    def __init__(self) -> None:
        self.ghost = Ghost()
        self._lock = threading.Lock()
        self._load_steps: dict[str, deque[Step]] = {}
        self._clear_steps: dict[str, deque[Step]] = {}
        self.fail_load: Callable[[str], bool] = lambda model_id: False
        self.fail_clear: Callable[[str], bool] = lambda model_id: False
        # Called at the start of every clear_cache with (id, delete_from_disk);
        # a returned message is recorded as a violation.
        self.check_clear: Callable[[str, bool], str | None] = lambda model_id, delete: None
        # Called at the start of every constructor with (id, models live or
        # loading including this one); a returned message is a violation.
        self.check_load: Callable[[str, int], str | None] = lambda model_id, live: None
        self.gates: list[Gate] = []

    def gate(self, name: str) -> Gate:
        gate = Gate(name)
        with self._lock:
            self.gates.append(gate)
        return gate

    def script_load(self, model_id: str, *steps: Step) -> None:
        with self._lock:
            self._load_steps.setdefault(model_id, deque()).extend(steps)

    def script_clear(self, model_id: str, *steps: Step) -> None:
        with self._lock:
            self._clear_steps.setdefault(model_id, deque()).extend(steps)

    def _next(self, table: dict[str, deque[Step]], model_id: str) -> Step:
        with self._lock:
            queue = table.get(model_id)
            return queue.popleft() if queue else Step()

    def next_clear_step(self, model_id: str) -> Step:
        step = self._next(self._clear_steps, model_id)
        if not step.fail and self.fail_clear(model_id):
            step = attrs.evolve(step, fail=True)
        return step

    def construct(self, model_id: str, api_key: str | None = None, **_: Any) -> FakeModel:
        step = self._next(self._load_steps, model_id)
        live_total = self.ghost.constructor_entered(model_id)
        model = None
        try:
            problem = self.check_load(model_id, live_total)
            if problem is not None:
                self.ghost.record_violation(problem)
            if step.gate is not None:
                step.gate.pass_through()
            if step.fail or self.fail_load(model_id):
                raise ScriptedFailure(f"scripted constructor failure of {model_id!r}")
            model = FakeModel(model_id, self)
            return model
        finally:
            self.ghost.constructor_exited(model, model_id)

    def get_model(self, model_id: str) -> Callable[..., FakeModel]:
        return self.construct

    def open_all(self) -> None:
        """Open every gate (teardown: never leave a thread blocked)."""
        with self._lock:
            gates = list(self.gates)
        for gate in gates:
            gate.open()


class Worker(threading.Thread):
    """A daemon thread that records its result or exception instead of crashing."""

    def __init__(self, name: str, target: Callable[[], Any]) -> None:
        super().__init__(name=name, daemon=True)
        self._fn = target
        self.result: Any = None
        self.error: BaseException | None = None
        self.done = threading.Event()

    def run(self) -> None:
        try:
            self.result = self._fn()
        except BaseException as error:  # recorded and re-raised by the test
            self.error = error
        finally:
            self.done.set()

    def finish(self) -> Any:
        """Join (bounded) and return the result, re-raising the thread's error."""
        self.join(GATE_TIMEOUT)
        if self.is_alive():
            raise AssertionError(f"thread {self.name!r} did not finish")
        if self.error is not None:
            raise self.error
        return self.result


def start(name: str, target: Callable[[], Any]) -> Worker:
    worker = Worker(name, target)
    worker.start()
    return worker


def lru_matches_registry(stack: Any) -> None:
    """I4 at quiescence: no duplicates, and the LRU holds exactly the registered ids."""
    order = stack.lru_order()
    duplicates = sorted(k for k, n in Counter(order).items() if n > 1)
    assert not duplicates, f"LRU holds duplicates {duplicates}: {order}"
    # The cache's own keys() is its committed (LRU) view, so compare with the
    # innermost manager's registry, where a desynchronised LRU shows.
    registered = sorted(innermost(stack).keys())
    assert sorted(order) == registered, f"LRU {order} differs from registered ids {registered}"


def innermost(stack: Any) -> Any:
    """The ModelManager at the bottom of a decorator stack."""
    while isinstance(stack, ModelManagerDecorator):
        stack = stack.manager
    return stack


def quiescent(stack: Any, ghost: Ghost) -> None:
    """I1, I9, I10 with nothing in flight.

    No lifecycle entry, lease or in-flight load is left; every constructed
    model is either registered (and not torn down) or was successfully
    cleared exactly once; the fakes recorded no violation.
    """
    assert stack.lifecycle_snapshot() == {}, f"lifecycle not empty: {stack.lifecycle_snapshot()}"
    assert stack.lease_counts() == {}, f"leases left: {stack.lease_counts()}"
    if hasattr(stack, "in_flight_loads"):
        assert stack.in_flight_loads() == 0, f"in-flight loads left: {stack.in_flight_loads()}"
    registered_ids = list(stack.keys())  # a stack need not be iterable
    registered = {model_id: stack[model_id] for model_id in registered_ids}
    registered_objects = {id(model) for model in registered.values()}
    for model in ghost.constructed():
        if id(model) in registered_objects:
            assert model.successful_clears == 0, f"registered {model!r} was torn down"
        else:
            assert model.successful_clears == 1, (
                f"{model!r} is not registered and was cleared {model.successful_clears} times"
            )
    assert not ghost.violations, f"ghost violations: {ghost.violations}"

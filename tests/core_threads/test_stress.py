"""Bounded real-thread stress: random operations on a small cache, invariants at the end.

Eight threads each run a fixed number of operations (add, remove, lease,
acquire, refresh, pin/unpin, warm hits) drawn from their own seeded random
source, against ``WithFixedSizeCache(ModelManager(...), max_size=3)`` over
six ids, with constructor and ``clear_cache`` failures and memory pressure
injected by the same seeded sources. I11 is checked at every constructor
start, I12 and I13 inside every ``clear_cache``, as they happen. The
schedule is whatever the OS picks, so the assertions are ones that hold on
every schedule of correct code:
nothing unexpected is raised, no lease holder ever sees a torn-down model, no
two constructors of one id overlap, and at quiescence I1, I4, I9 and I10
hold.
"""

from __future__ import annotations

import random
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator

import pytest

from modelmanager import LockTimeout, ModelManager, ModelNotFound, WithFixedSizeCache

from .helpers import (
    GATE_TIMEOUT,
    FakeRegistry,
    ScriptedFailure,
    Worker,
    lru_matches_registry,
    quiescent,
)

pytestmark = pytest.mark.stress

THREADS = 8
OPERATIONS = 300
IDS = tuple(f"m{index}" for index in range(6))
MAX_SIZE = 3
LOAD_FAILURE_RATE = 0.08
CLEAR_FAILURE_RATE = 0.08
MEMORY_PRESSURE_RATE = 0.05
MEMORY_FREE_THRESHOLD = 0.5


class _RandomPressure:
    """A memory probe reporting pressure now and then, drawn from the caller's source."""

    def __init__(self, draw: Callable[[], float]) -> None:
        self._draw = draw
        self.release_calls = 0

    def free_fraction(self) -> float | None:
        return 0.1 if self._draw() < MEMORY_PRESSURE_RATE else 0.9

    def release_cache(self) -> None:
        self.release_calls += 1


class _Stress:
    """Shared state of one stress run: the stack, the fakes and the per-thread sources."""

    def __init__(self, seed: int, timeout: float = GATE_TIMEOUT) -> None:
        self.seed = seed
        # With a tiny timeout, LockTimeout is an expected outcome of any call.
        self.timeouts_expected = timeout < GATE_TIMEOUT
        self.registry = FakeRegistry()
        self.local = threading.local()
        self.registry.fail_load = lambda model_id: self._draw() < LOAD_FAILURE_RATE
        self.registry.fail_clear = lambda model_id: self._draw() < CLEAR_FAILURE_RATE
        self.registry.check_clear = self._check_clear
        self.registry.check_load = self._check_load
        self.probe = _RandomPressure(self._draw)
        self.stack = WithFixedSizeCache(
            ModelManager(self.registry, lock_timeout=timeout),
            max_size=MAX_SIZE,
            queue_lock_timeout=timeout,
            on_full="proceed",  # the spec's policy; benchmarks/soak.py covers "wait"
            memory_probe=self.probe,
            memory_free_threshold=MEMORY_FREE_THRESHOLD,
        )
        self.outcomes: Counter[str] = Counter()
        self._outcomes_lock = threading.Lock()
        self.start = threading.Barrier(THREADS, timeout=GATE_TIMEOUT)

    def _draw(self) -> float:
        rng: random.Random | None = getattr(self.local, "rng", None)
        # Failures are injected only into the worker threads' own operations.
        return rng.random() if rng is not None else 1.0

    def _count(self, outcome: str) -> None:
        with self._outcomes_lock:
            self.outcomes[outcome] += 1

    def _use(self, model_id: str, acquire: bool) -> None:
        context = self.stack.acquire(model_id) if acquire else self.stack.lease(model_id)
        with context as model:
            model.enter_use()
            try:
                assert model.model_id == model_id
                # Some work inside the body widens the window in which a
                # remove or an eviction could (wrongly) tear the model down.
                sum(range(300))
            finally:
                model.exit_use()

    def _check_clear(self, model_id: str, delete_from_disk: bool) -> str | None:
        # Evictions unload with delete_from_disk=False; this test's removes use
        # the default True. A pin is only added under the id's lifecycle, which
        # an eviction holds from its final check through clear_cache, so an id
        # pinned now was pinned when the eviction decided (I12).
        if not delete_from_disk and model_id in self.stack.pinned():
            return f"pinned model {model_id!r} was evicted (I12)"
        return None

    def _check_load(self, model_id: str, live: int) -> str | None:
        # I11: registered plus in-flight never exceed max_size except by
        # admissions counted as overflow. The ghost's count (constructing, or
        # built and not being torn down) never exceeds the cache's, and the
        # overflow count only grows, so reading it after counting is safe.
        allowed = MAX_SIZE + self.stack.statistics().pinned_overflow
        if live > allowed:
            return f"{live} models live or loading while loading {model_id!r} (I11: {allowed})"
        return None

    def _toggle_pin(self, model_id: str) -> None:
        if model_id in self.stack.pinned():
            self.stack.unpin_model(model_id)
        else:
            self.stack.pin_model(model_id)

    def worker(self, index: int) -> Callable[[], None]:
        def run() -> None:
            rng = random.Random(f"{self.seed}-{index}")
            self.local.rng = random.Random(f"{self.seed}-{index}-faults")
            operations: list[tuple[str, Callable[[str], None]]] = [
                ("add", self.stack.add_model),
                ("add", self.stack.add_model),
                ("remove", self.stack.remove),
                ("lease", lambda model_id: self._use(model_id, acquire=False)),
                ("acquire", lambda model_id: self._use(model_id, acquire=True)),
                ("refresh", self.stack.refresh),
                ("pin", self._toggle_pin),
            ]
            self.start.wait()
            for _ in range(OPERATIONS):
                name, operation = rng.choice(operations)
                model_id = rng.choice(IDS)
                try:
                    operation(model_id)
                except ScriptedFailure:
                    self._count(f"{name}: injected failure")
                except LockTimeout:
                    if not self.timeouts_expected:
                        raise
                    self._count(f"{name}: timed out")
                except ModelNotFound:
                    if name != "lease":
                        raise
                    self._count("lease: not loaded")
                else:
                    self._count(f"{name}: ok")

        return run


@pytest.fixture
def frequent_switches() -> Iterator[None]:
    """Ask the interpreter to switch threads far more often than its 5 ms default.

    Without it, each thread can run most of its operations inside one time
    slice and the threads barely interleave.
    """
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


def _run(stress: _Stress) -> None:
    workers = [Worker(f"W{index}", stress.worker(index)) for index in range(THREADS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.finish()  # re-raises anything unexpected a worker hit

    stack, ghost = stress.stack, stress.registry.ghost
    print(f"outcomes: {dict(sorted(stress.outcomes.items()))}")
    print(f"statistics: {stack.statistics()}")
    assert sum(stress.outcomes.values()) == THREADS * OPERATIONS

    # I2: never two constructors of one id at once.
    assert max(ghost.max_live_constructors.values()) == 1, ghost.max_live_constructors
    # I1, I9, I10: nothing in flight, nothing leaked, every model accounted for.
    quiescent(stack, ghost)
    # I4: the LRU is exactly the registered ids.
    lru_matches_registry(stack)
    statistics = stack.statistics()
    assert statistics.loads == len(ghost.constructed())
    assert statistics.loads - statistics.removals == len(stack)
    if not stress.timeouts_expected:
        assert statistics.lock_timeouts == 0
    # I11 at quiescence: over capacity only by admissions counted as overflow.
    assert len(stack) <= MAX_SIZE + statistics.pinned_overflow

    # I9 after clear(): every model ever constructed was cleared exactly once
    # (pins are configuration: they survive clear() and do not prevent it).
    pins = stack.pinned()
    stack.clear()
    assert stack.pinned() == pins
    assert stack.keys() == []
    assert stack.lru_order() == []
    for model in ghost.constructed():
        assert model.successful_clears == 1, f"{model!r} cleared {model.successful_clears} times"
    quiescent(stack, ghost)


@pytest.mark.usefixtures("frequent_switches")
@pytest.mark.parametrize("seed", [1, 2])
def test_random_operations_keep_invariants(seed: int) -> None:
    """Eight threads x 300 random operations with injected failures; invariants hold."""
    # How many failures, evictions and timeouts a run sees depends on the
    # schedule, so it is printed (``-s``), never asserted: typical runs
    # inject 30-60 constructor and 30-50 clear_cache failures and evict
    # 250-300 models, 20-40 of them for memory.
    _run(_Stress(seed))


@pytest.mark.usefixtures("frequent_switches")
def test_timed_out_operations_leave_nothing_behind() -> None:
    """The same mix with 0.5 ms lock timeouts: whatever times out leaves no residue (I10).

    How many calls time out depends on the schedule (possibly none); the
    invariants checked at quiescence hold either way.
    """
    _run(_Stress(seed=3, timeout=0.0005))

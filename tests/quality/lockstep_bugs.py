"""Classic concurrency bugs as lockstep scenarios: the catalogue the quality tests and
``benchmarks.bench_lockstep`` share.

Each :class:`Bug` is a zero-argument scenario that fails (an assertion or a
deadlock) in some interleavings only, the modules to patch, and the budgets
within which each strategy must find it (executions, with fixed seeds, so the
outcome is deterministic; budgets leave a margin over the measured counts given
in each comment).  Switch points are the controlled primitives and explicit
``checkpoint``s placed where the unsynchronised accesses are.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

import attrs

import lockstep

STRATEGIES = ("random", "pct", "dfs", "dpor", "hypothesis")


def _load_sample(name: str) -> ModuleType:
    """Import tests/quality/samples/<name>.py under a unique module name."""
    qualified = f"lockstep_quality_samples.{name}"
    module = sys.modules.get(qualified)
    if module is not None:
        return module
    path = Path(__file__).with_name("samples") / f"{name}.py"
    spec = importlib.util.spec_from_file_location(qualified, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[qualified] = module
    spec.loader.exec_module(module)
    return module


@attrs.frozen
class Bug:
    """A scenario with a bug, and each strategy's budget (executions) to find it."""

    name: str
    scenario: Callable[[], None]
    budgets: dict[str, int]
    expected_kind: str  # "exception" or "deadlock"
    pct_depth: int = 2  # the bug's depth d: PCT runs with d - 1 change points
    patch: Callable[[], Sequence[ModuleType]] = lambda: ()


# --- 1. lost update through an unlocked check-then-act ------------------------


def lazy_singleton() -> None:
    """Two threads lazily create a shared resource; the check and the creation are
    not atomic, so both may create it (the second creation is lost)."""
    registry: dict[str, object] = {}
    created: list[int] = []

    def get_or_create(k: int) -> None:
        lockstep.checkpoint("check", resource="registry")
        if "db" not in registry:
            lockstep.checkpoint("create", resource="registry")
            created.append(k)
            registry["db"] = object()

    threads = [lockstep.spawn(get_or_create, k) for k in range(2)]
    for t in threads:
        t.join()
    assert len(created) == 1, f"created {len(created)} times by threads {created}"


# --- 2. ABBA deadlock ---------------------------------------------------------


def abba() -> None:
    """Two threads take two locks in opposite orders."""
    a, b = lockstep.threading.Lock(), lockstep.threading.Lock()

    def forward() -> None:
        with a, b:
            pass

    def backward() -> None:
        with b, a:
            pass

    threads = [lockstep.spawn(forward), lockstep.spawn(backward)]
    for t in threads:
        t.join()


# --- 3. missed wake-up on a condition -----------------------------------------


def missed_wakeup() -> None:
    """The consumer tests the flag outside the lock, then waits; a notify that lands
    between the test and the wait is lost and the consumer sleeps for ever."""
    cond = lockstep.threading.Condition()
    state = {"ready": False}

    def consumer() -> None:
        lockstep.checkpoint("test ready", resource="ready")
        if not state["ready"]:
            with cond:
                cond.wait()

    def producer() -> None:
        lockstep.checkpoint("set ready", resource="ready")
        state["ready"] = True
        with cond:
            cond.notify()

    threads = [lockstep.spawn(consumer), lockstep.spawn(producer)]
    for t in threads:
        t.join()


# --- 4. a bug reachable only through a lock-acquire timeout --------------------


def timeout_fallback() -> None:
    """When acquire(timeout=...) times out, the fallback path forgets to record the
    request: the request count no longer matches the work done."""
    lock = lockstep.threading.Lock()
    stats = {"requests": 0, "served": 0}

    def holder() -> None:
        with lock:
            stats["requests"] += 1
            lockstep.checkpoint("serving", resource="stats")
            stats["served"] += 1

    def impatient() -> None:
        if lock.acquire(timeout=0.5):
            try:
                stats["requests"] += 1
                stats["served"] += 1
            finally:
                lock.release()
        else:
            stats["served"] += 1  # BUG: served from a stale copy, request not counted

    threads = [lockstep.spawn(holder), lockstep.spawn(impatient)]
    for t in threads:
        t.join()
    assert stats["requests"] == stats["served"], stats


# --- 5. a bug needing two preemptions ------------------------------------------


def two_preemptions() -> None:
    """Two writers each hold a transient state between two checkpoints; an observer
    fails only if it runs while *both* are mid-update: writer 1 must be preempted
    mid-update (preemption 1) and so must writer 2 (preemption 2)."""
    shared = {"x": 0, "y": 0}
    seen: list[tuple[int, int]] = []

    def writer(key: str) -> None:
        lockstep.checkpoint(f"{key}=1", resource=key)
        shared[key] = 1
        lockstep.checkpoint(f"{key}=0", resource=key)
        shared[key] = 0

    def observer() -> None:
        lockstep.checkpoint("observe x", resource="x")
        x = shared["x"]
        lockstep.checkpoint("observe y", resource="y")
        seen.append((x, shared["y"]))

    threads = [lockstep.spawn(writer, "x"), lockstep.spawn(writer, "y")]
    threads.append(lockstep.spawn(observer))
    for t in threads:
        t.join()
    assert seen != [(1, 1)], "observer saw both writers mid-update"


# --- 6. atomicity violation inside third-party code, via patched(...) --------------


def inventory_module() -> ModuleType:
    return _load_sample("inventory")


def inventory_oversold() -> None:
    """Two buyers take the last item of a third-party Inventory (plain threading)."""
    module = inventory_module()
    inventory = module.Inventory()
    inventory.add("widget", 1)
    results: list[bool] = []

    def buy() -> None:
        results.append(inventory.take("widget", 1))

    threads = [lockstep.spawn(buy) for _ in range(2)]
    for t in threads:
        t.join()
    assert inventory.stock("widget") >= 0, f"stock went negative: {results}"


# Budgets.  PCT with depth d finds a bug of depth <= d with probability at least
# p = 1/(n*k^(d-1)) per execution (n threads including main, k steps: both measured
# with PCT's observed maximum); 1 - (1-p)^b >= 99% needs b >= ln(100)/p ~ 4.6/p.
# The PCT budgets are that 99% figure; the others are several times the measured
# executions-to-failure (see bench_lockstep), which are deterministic here.
BUGS: dict[str, Bug] = {
    bug.name: bug
    for bug in (
        Bug(
            "lost_update",
            lazy_singleton,
            # d=2 (T1 check < T2 check < T1 create), n=3, k=13: p >= 1/39 -> 180.
            budgets={"random": 50, "pct": 180, "dfs": 50, "dpor": 20, "hypothesis": 100},
            expected_kind="exception",
        ),
        Bug(
            "abba_deadlock",
            abba,
            # d=2 (T1 takes A < T2 takes B < T1 wants B), n=3, k=18: p >= 1/54 -> 250.
            budgets={"random": 50, "pct": 250, "dfs": 100, "dpor": 20, "hypothesis": 100},
            expected_kind="deadlock",
        ),
        Bug(
            "missed_wakeup",
            missed_wakeup,
            # d=2 (test < set and notify < wait), n=3, k=20: p >= 1/60 -> 280.
            budgets={"random": 50, "pct": 280, "dfs": 50, "dpor": 20, "hypothesis": 100},
            expected_kind="deadlock",
        ),
        Bug(
            "timeout_fallback",
            timeout_fallback,
            # The holder must own the lock when the impatient thread asks (d=1 ordering)
            # AND the timeout must be chosen, which PCT's bound does not cover: it
            # fires a pending timeout with probability 0.05 per step (random: 0.1).
            # DFS and DPOR enumerate the timeout choice.
            budgets={"random": 100, "pct": 400, "dfs": 100, "dpor": 20, "hypothesis": 100},
            expected_kind="exception",
        ),
        Bug(
            "two_preemptions",
            two_preemptions,
            # d=3 (two change points), n=4, k=20: p >= 1/(4*20^2) = 1/1600 -> 7400
            # (the guarantee; measured: tens).  DFS needs preemption bound >= 2.
            budgets={"random": 500, "pct": 7400, "dfs": 2000, "dpor": 50, "hypothesis": 300},
            expected_kind="exception",
            pct_depth=3,
        ),
        Bug(
            "inventory_oversold",
            inventory_oversold,
            # d=2 (check by both buyers before either update), n=3, k=21: p >= 1/63 -> 290.
            budgets={"random": 50, "pct": 290, "dfs": 100, "dpor": 20, "hypothesis": 100},
            expected_kind="exception",
            patch=lambda: (inventory_module(),),
        ),
    )
}


def checkpoint_program(n_threads: int, n_ops: int, shared: bool) -> Callable[[], None]:
    """DPOR counting program: `n_threads` threads of `n_ops` checkpoints each, on one
    shared resource (every pair conflicts) or on one resource per thread (none do)."""

    def scenario() -> None:
        def worker(k: int) -> None:
            for i in range(n_ops):
                lockstep.checkpoint(f"w{k}.{i}", resource="x" if shared else f"r{k}")

        threads = [lockstep.spawn(worker, k) for k in range(n_threads)]
        for t in threads:
            t.join()

    return scenario


def critical_section_program(n_threads: int) -> Callable[[], None]:
    """DPOR counting program: `n_threads` critical sections on one lock (n! traces)."""

    def scenario() -> None:
        lock = lockstep.threading.Lock()

        def worker() -> None:
            with lock:
                lockstep.checkpoint("inside")

        threads = [lockstep.spawn(worker) for _ in range(n_threads)]
        for t in threads:
            t.join()

    return scenario


def make(strategy: str, seed: int = 0, *, pct_depth: int = 2) -> lockstep.Strategy:
    """A fresh strategy object by name (not "hypothesis", which needs Hypothesis data)."""
    if strategy == "random":
        return lockstep.RandomStrategy(seed)
    if strategy == "pct":
        return lockstep.PCTStrategy(seed, depth=pct_depth)
    if strategy == "dfs":
        return lockstep.DFSStrategy(preemption_bound=2)
    if strategy == "dpor":
        from lockstep.strategies._dpor import DporStrategy

        return DporStrategy()
    raise ValueError(f"unknown strategy {strategy!r}")


def hunt(
    bug: Bug, strategy: str, *, seed: int = 0, budget: int | None = None
) -> tuple[int, lockstep.Failure | None]:
    """Executions until ``strategy`` finds ``bug`` (or the budget runs out), and the failure.

    For "hypothesis": the number of Hypothesis examples until the first failing one;
    the search is derandomized, so ``seed`` is ignored.
    """
    limit = bug.budgets[strategy] if budget is None else budget
    if strategy == "hypothesis":
        return _hunt_hypothesis(bug, limit)
    result = lockstep.explore(
        bug.scenario,
        strategy=make(strategy, seed, pct_depth=bug.pct_depth),
        budget=limit,
        patch=bug.patch(),
        shrink=False,
        progress=False,
    )
    return result.executions, result.failure


def _hunt_hypothesis(bug: Bug, limit: int) -> tuple[int, lockstep.Failure | None]:
    from hypothesis import Phase, given, settings
    from hypothesis import strategies as st

    from lockstep.strategies.hypothesis import run_under_hypothesis

    calls: list[int] = []
    found: list[lockstep.Failure] = []

    @settings(
        max_examples=limit,
        deadline=None,
        derandomize=True,
        database=None,
        phases=[Phase.generate],
    )
    @given(st.data())
    def search(data: st.DataObject) -> None:
        calls.append(1)
        try:
            run_under_hypothesis(bug.scenario, data, patch=bug.patch())
        except lockstep.ExplorationFailed as exc:
            if not found:  # the first failing example (Hypothesis replays it at the end)
                found.append(exc.failure)
                first.append(len(calls))
            raise

    first: list[int] = []
    with contextlib.suppress(lockstep.ExplorationFailed):
        search()
    return (first[0], found[0]) if found else (len(calls), None)

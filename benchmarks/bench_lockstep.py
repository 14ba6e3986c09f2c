"""lockstep's speed and bug-finding power, and how it compares with frontrun.

Run with ``python3 -m benchmarks.bench_lockstep`` (``--quick`` for a smoke run,
``--seeds N`` for the number of seeds of the randomised strategies).

One run prints four tables:

1. **Throughput**: executions/s and switch points/s of the random strategy on a
   3-thread scenario of 30 lock-protected increments (10 per thread), on each
   backend (greenlet, the default, and thread), with the ratio between them.
2. **Bugs**: for each bug of ``tests/quality/lockstep_bugs.py`` and each strategy
   (random, PCT, bounded DFS, DPOR, Hypothesis), the executions and the wall time
   to the first failure: medians over the seeds for random and PCT, one run for
   the deterministic ones (DFS, DPOR, derandomized Hypothesis).
3. **DPOR vs DFS**: executions needed to exhaust small programs (DPOR: one per
   Mazurkiewicz trace; DFS with preemption bound 2 and unbounded).
4. **frontrun** (if ``frontrun`` 0.7 is installed; it is *not* a dependency): the
   same bugs written for frontrun's ``explore(setup, workers, invariant)`` under
   its DPOR and random strategies, with the ratios to lockstep's DPOR and random.
   ``interleave-test`` needs Python >= 3.12 and is skipped on older interpreters.

``--baseline DIR`` instead measures side by side, in fresh interpreters, this
checkout's two backends and another lockstep checkout (e.g. ``git worktree add
/tmp/lockstep-base ec2b891``, the commit before the greenlet backend): executions/s on
the lock scenario and on a models_spec scenario, and with ``--check`` the wall time of
the default ``lockstep check --jobs 2``, as medians and ratios (``benchmarks.sidebyside``).

Timings are printed, never asserted; the smoke test only checks the structure of
:func:`run`'s result.
"""

from __future__ import annotations

import argparse
import importlib.util
import platform
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import lockstep
from lockstep.strategies import DporStrategy

_ROOT = Path(__file__).resolve().parents[1]
STRATEGIES = ("random", "pct", "dfs", "dpor", "hypothesis")
_SEEDED = ("random", "pct")


def _load_bugs() -> ModuleType:
    """tests/quality/lockstep_bugs.py (the catalogue the quality tests use)."""
    name = "lockstep_quality_bugs"
    module = sys.modules.get(name)
    if module is not None:
        return module
    path = _ROOT / "tests" / "quality" / "lockstep_bugs.py"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the bug catalogue from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# --- 1. throughput ----------------------------------------------------------------


def lock_scenario() -> None:
    """3 threads x 10 lock-protected increments = 30 operations."""
    lock = lockstep.threading.Lock()
    box = {"n": 0}

    def worker() -> None:
        for _ in range(10):
            with lock:
                box["n"] += 1

    threads = [lockstep.spawn(worker) for _ in range(3)]
    for t in threads:
        t.join()
    assert box["n"] == 30


BACKENDS = ("greenlet", "thread")
#: What every measurement runs with: no shrinking, no progress line.
MEASURED = lockstep.Settings(shrink=False, progress=False)


def throughput(executions: int, backend: str | None = None) -> dict[str, float]:
    """The random strategy on :func:`lock_scenario` (``backend`` None: the default)."""
    result = lockstep.explore(
        lock_scenario,
        MEASURED.replace(budget=executions, backend=backend),
        strategy=lockstep.RandomStrategy(0),
    )
    if result.failure is not None:
        raise RuntimeError(f"the throughput scenario failed: {result.failure.message}")
    return {
        "executions": float(result.executions),
        "seconds": result.elapsed,
        "executions_per_second": result.executions / result.elapsed,
        "switch_points_per_second": result.steps / result.elapsed,
        "switch_points_per_execution": result.steps / result.executions,
    }


# --- 2. bugs ----------------------------------------------------------------------------


def bug_table(bugs: ModuleType, seeds: int) -> dict[str, dict[str, dict[str, Any]]]:
    table: dict[str, dict[str, dict[str, Any]]] = {}
    for name, bug in bugs.BUGS.items():
        row: dict[str, dict[str, Any]] = {}
        for strategy in STRATEGIES:
            runs = seeds if strategy in _SEEDED else 1
            counts: list[int] = []
            times: list[float] = []
            found = 0
            for seed in range(runs):
                start = time.perf_counter()
                executions, failure = bugs.hunt(bug, strategy, seed=seed)
                times.append(time.perf_counter() - start)
                counts.append(executions)
                found += failure is not None
            row[strategy] = {
                "executions": statistics.median(counts),
                "seconds": statistics.median(times),
                "found": found,
                "runs": runs,
                "budget": bug.budgets[strategy],
            }
        table[name] = row
    return table


# --- 3. DPOR vs DFS ---------------------------------------------------------------------


def _checkpoints(n_threads: int, n_ops: int, shared: bool) -> Callable[[], None]:
    program: Callable[[], None] = _load_bugs().checkpoint_program(n_threads, n_ops, shared)
    return program


def _critical(n_threads: int) -> Callable[[], None]:
    program: Callable[[], None] = _load_bugs().critical_section_program(n_threads)
    return program


PROGRAMS: dict[str, tuple[Callable[[], None], int]] = {
    # name: (scenario, Mazurkiewicz traces under lockstep's dependency notion)
    "3 independent threads x 2 ops": (_checkpoints(3, 2, shared=False), 1),
    "2 threads x 2 ops, one object": (_checkpoints(2, 2, shared=True), 6),
    "3 threads x 2 ops, one object": (_checkpoints(3, 2, shared=True), 90),
    "2 critical sections, one lock": (_critical(2), 2),
    "3 critical sections, one lock": (_critical(3), 6),
}


def _exhaust(scenario: Callable[[], None], strategy: lockstep.Strategy, cap: int) -> dict[str, Any]:
    start = time.perf_counter()
    result = lockstep.explore(scenario, MEASURED.replace(budget=cap), strategy=strategy)
    return {
        "executions": result.executions,
        "exhausted": result.exhausted,
        "seconds": time.perf_counter() - start,
    }


def dpor_vs_dfs(cap: int) -> dict[str, dict[str, Any]]:
    table: dict[str, dict[str, Any]] = {}
    for name, (scenario, traces) in PROGRAMS.items():
        dpor = DporStrategy()
        row = {"traces": traces, "dpor": _exhaust(scenario, dpor, cap)}
        row["dpor"]["complete"] = dpor.complete_executions
        row["dpor"]["redundant"] = dpor.blocked_executions
        row["dfs_pb2"] = _exhaust(scenario, lockstep.DFSStrategy(preemption_bound=2), cap)
        row["dfs"] = _exhaust(scenario, lockstep.DFSStrategy(preemption_bound=None), cap)
        table[name] = row
    return table


# --- 4. frontrun -----------------------------------------------------------------------


def _frontrun_programs(
    inventory: ModuleType,
) -> dict[str, tuple[Any, list[Any], Any, dict[str, Any]]]:
    """The quality bugs in frontrun's shape: (setup, workers, invariant, options)."""

    class Registry:
        def __init__(self) -> None:
            self.db: object | None = None
            self.created = 0

    def get_or_create(state: Registry) -> None:
        if state.db is None:
            state.created += 1
            state.db = object()

    class Locks:
        def __init__(self) -> None:
            self.a = threading.Lock()
            self.b = threading.Lock()

    def forward(state: Locks) -> None:
        with state.a, state.b:
            pass

    def backward(state: Locks) -> None:
        with state.b, state.a:
            pass

    class Wake:
        def __init__(self) -> None:
            self.cond = threading.Condition()
            self.ready = False

    def consumer(state: Wake) -> None:
        if not state.ready:
            with state.cond:
                state.cond.wait()

    def producer(state: Wake) -> None:
        state.ready = True
        with state.cond:
            state.cond.notify()

    class Stats:
        def __init__(self) -> None:
            self.lock = threading.Lock()
            self.requests = 0
            self.served = 0

    def holder(state: Stats) -> None:
        with state.lock:
            state.requests += 1
            state.served += 1

    def impatient(state: Stats) -> None:
        if state.lock.acquire(timeout=0.5):
            try:
                state.requests += 1
                state.served += 1
            finally:
                state.lock.release()
        else:
            state.served += 1

    class Shared:
        def __init__(self) -> None:
            self.x = 0
            self.y = 0
            self.seen: list[tuple[int, int]] = []

    def writer_x(state: Shared) -> None:
        state.x = 1
        state.x = 0

    def writer_y(state: Shared) -> None:
        state.y = 1
        state.y = 0

    def observer(state: Shared) -> None:
        x = state.x
        state.seen.append((x, state.y))

    def make_inventory() -> Any:
        stock = inventory.Inventory()
        stock.add("widget", 1)
        return stock

    def buy(stock: Any) -> None:
        stock.take("widget", 1)

    deadlock = {"deadlock_timeout": 1.0, "timeout_per_run": 2.0}
    return {
        "lost_update": (Registry, [get_or_create, get_or_create], lambda s: s.created == 1, {}),
        "abba_deadlock": (Locks, [forward, backward], lambda s: True, deadlock),
        "missed_wakeup": (Wake, [consumer, producer], lambda s: True, deadlock),
        "timeout_fallback": (
            Stats,
            [holder, impatient],
            lambda s: s.requests == s.served,
            {"clock": "virtual"},
        ),
        "two_preemptions": (
            Shared,
            [writer_x, writer_y, observer],
            lambda s: s.seen != [(1, 1)],
            {"preemption_bound": None},
        ),
        "inventory_oversold": (make_inventory, [buy, buy], lambda s: s.stock("widget") >= 0, {}),
    }


def frontrun_table(bugs: ModuleType, seeds: int) -> dict[str, Any]:
    """frontrun on the same bugs, or the reason it could not run."""
    if sys.version_info < (3, 12):
        interleave = "interleave-test skipped: it needs Python >= 3.12"
    else:
        interleave = "interleave-test: not benchmarked (not installed)"
    try:
        import frontrun
        from frontrun import _cooperative
    except ImportError:
        return {"available": False, "reason": "frontrun is not installed", "interleave": interleave}
    version = getattr(frontrun, "__version__", "?")
    rows: dict[str, dict[str, Any]] = {}
    programs = _frontrun_programs(bugs.inventory_module())
    # frontrun wants its CLI or explicit cooperative patching of threading's locks.
    _cooperative.patch_locks()
    try:
        for name, (setup, workers, invariant, options) in programs.items():
            row: dict[str, Any] = {}
            for strategy in ("dpor", "random"):
                runs = 1 if strategy == "dpor" else seeds
                counts: list[int] = []
                times: list[float] = []
                found = 0
                error = None
                for seed in range(runs):
                    extra = dict(options)
                    if strategy == "random":
                        extra.pop("preemption_bound", None)
                        extra["seed"] = seed
                    start = time.perf_counter()
                    try:
                        result = frontrun.explore(
                            setup,
                            workers,
                            invariant,
                            strategy=strategy,
                            reproduce_on_failure=0,
                            **extra,
                        )
                    except Exception as exc:  # report, do not crash the benchmark
                        error = f"{type(exc).__name__}: {str(exc)[:80]}"
                        break
                    times.append(time.perf_counter() - start)
                    counts.append(int(result.num_explored))
                    found += not result.property_holds
                row[strategy] = {
                    "executions": statistics.median(counts) if counts else None,
                    "seconds": statistics.median(times) if times else None,
                    "found": found,
                    "runs": runs,
                    "error": error,
                }
            rows[name] = row
    finally:
        _cooperative.unpatch_locks()
    return {"available": True, "version": version, "rows": rows, "interleave": interleave}


# --- 5. watched state ------------------------------------------------------------------


def _load_path(name: str, *parts: str) -> ModuleType:
    module = sys.modules.get(name)
    if module is not None:
        return module
    path = _ROOT.joinpath(*parts)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


RACE_STRATEGIES = ("dpor", "dfs", "random", "pct")
_RACE_MODES = {
    # mode: (watched, races)
    "unwatched": (False, True),
    "watched": (True, True),
    "watched, races off": (True, False),
}


def race_table(budget: int) -> dict[str, dict[str, dict[str, Any]]]:
    """Executions to the first failure (and its kind) per race program, mode and strategy."""
    races = _load_path(
        "lockstep_quality_race_programs", "tests", "quality", "lockstep_race_programs.py"
    )
    table: dict[str, dict[str, dict[str, Any]]] = {}
    for name, program in races.PROGRAMS.items():
        for mode, (watched, report) in _RACE_MODES.items():
            row: dict[str, Any] = {}
            for strategy in RACE_STRATEGIES:
                result = races.hunt(program, strategy, watched=watched, races=report, budget=budget)
                failure = result.failure
                row[strategy] = {
                    "executions": result.executions,
                    "kind": None if failure is None else failure.kind,
                    "verdict": result.verdict.coverage,
                    "watched": result.verdict.watched,
                }
            table.setdefault(name, {})[mode] = row
    return table


class _Account:
    def __init__(self) -> None:
        self.balance = 0
        self.history: list[int] = []
        self.lock = lockstep.threading.Lock()


def _bank(watched: bool) -> Callable[[], None]:
    """3 threads x 10 locked deposits into an object (an attribute and a list)."""

    def scenario() -> None:
        account = _Account()
        if watched:
            lockstep.watch(account)

        def deposit() -> None:
            for _ in range(10):
                with account.lock:
                    account.balance += 1
                    account.history.append(account.balance)

        threads = [lockstep.spawn(deposit) for _ in range(3)]
        for t in threads:
            t.join()
        assert account.balance == 30

    return scenario


def watch_overhead(executions: int, repeats: int) -> dict[str, Any]:
    """CPU time per execution of the same race-free program, watched and not (medians
    of ``repeats`` runs of ``executions`` random executions, the modes alternating),
    and the ratios. CPU time of this process, not wall time: on a shared machine the
    time spent waiting for a core is not the program's and swings a wall-time ratio
    by tens of percent."""
    per: dict[str, list[float]] = {"unwatched": [], "watched": [], "watched, races off": []}
    steps: dict[str, int] = {}
    for _ in range(repeats):
        for mode, (watched, report) in _RACE_MODES.items():
            started = time.process_time()
            result = lockstep.explore(
                _bank(watched),
                MEASURED.replace(budget=executions, races=report),
                strategy=lockstep.RandomStrategy(0),
            )
            if result.failure is not None:
                raise RuntimeError(f"the overhead scenario failed: {result.failure.message}")
            per[mode].append((time.process_time() - started) / result.executions)
            steps[mode] = result.steps // result.executions
    medians = {mode: statistics.median(times) for mode, times in per.items()}
    per_step = {mode: medians[mode] / max(steps[mode], 1) for mode in medians}
    return {
        "seconds_per_execution": medians,
        "steps_per_execution": steps,
        "ratio": medians["watched"] / medians["unwatched"],
        "ratio_races_off": medians["watched, races off"] / medians["unwatched"],
        # With races off every watched access is a switch point (more steps, each a
        # scheduling decision): its cost per step says whether a step got dearer.
        "ratio_races_off_per_step": per_step["watched, races off"] / per_step["unwatched"],
    }


def _rw_programs(sim: ModuleType) -> dict[str, Any]:
    op, program = sim.Op, sim.Program

    def rd(slot: str, shape: str = "keyed") -> Any:
        return op("rd", (shape, slot))

    def wr(slot: str, shape: str = "keyed") -> Any:
        return op("wr", (shape, slot))

    return {
        "check-then-act x2 (k in d; d[k] = v)": program.parallel(
            [rd("k"), wr("k")], [rd("k"), wr("k")]
        ),
        "3 readers of one key": program.parallel([rd("k")], [rd("k")], [rd("k")]),
        "lost update x3 (attribute)": program.parallel(
            *([rd("a", "attr"), wr("a", "attr")] for _ in range(3))
        ),
        "len(d) vs two key writes": program.parallel([rd("*")], [wr("k")], [wr("j")]),
        "readers and writers of two keys": program.parallel(
            [rd("k"), wr("j")], [rd("j"), wr("k")], [rd("k"), rd("j")]
        ),
        "move_to_end vs lookups and len": program.parallel(
            [op("mv", "k")], [rd("k"), rd("*")], [wr("j")]
        ),
    }


def dpor_vs_traces() -> dict[str, dict[str, int]]:
    """DPOR executions against the Mazurkiewicz traces under the read/write dependency
    (brute force on lockstep's DPOR test simulator)."""
    sim = _load_path("lockstep_dpor_sim", "tests", "lockstep_lin", "_sim.py")
    table: dict[str, dict[str, int]] = {}
    for name, program in _rw_programs(sim).items():
        dpor = DporStrategy()
        exploration = sim.explore(program, dpor)
        table[name] = {
            "traces": len(sim.all_traces(program)),
            "executions": exploration.executions,
            "complete": dpor.complete_executions,
            "interleavings": sim.count_interleavings(program),
        }
    return table


# --- driver ---------------------------------------------------------------------------


def run(*, quick: bool = False, seeds: int = 5, with_frontrun: bool = True) -> dict[str, Any]:
    """Measure everything; return the tables as plain data (also used by the smoke test)."""
    bugs = _load_bugs()
    if quick:
        seeds = 1
    result: dict[str, Any] = {
        "python": platform.python_version(),
        "lockstep": lockstep.__version__,
        "quick": quick,
        "seeds": seeds,
        "throughput": throughput(20 if quick else 300),
        "backends": {b: throughput(20 if quick else 300, b) for b in BACKENDS},
        "bugs": bug_table(bugs, seeds),
        "dpor_vs_dfs": dpor_vs_dfs(200 if quick else 20_000),
        "races": race_table(100 if quick else 2000),
        "watch_overhead": watch_overhead(5 if quick else 40, 1 if quick else 15),
        "dpor_vs_traces": dpor_vs_traces(),
    }
    if with_frontrun and not quick:
        result["frontrun"] = frontrun_table(bugs, seeds)
    else:
        result["frontrun"] = {"available": False, "reason": "skipped (--quick)"}
    return result


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines.extend("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows)
    return "\n".join(line.rstrip() for line in lines)


def render(result: dict[str, Any]) -> str:
    """The printed report."""
    out = [
        f"bench_lockstep: python {result['python']}, lockstep {result['lockstep']}, "
        f"seeds {result['seeds']}{' (quick)' if result['quick'] else ''}",
        "",
        "1. Throughput (random strategy, 3 threads x 10 lock-protected increments)",
    ]
    for backend, tp in result["backends"].items():
        out.append(
            f"   {backend:8} {tp['executions']:.0f} executions in {tp['seconds']:.2f} s: "
            f"{tp['executions_per_second']:.0f} executions/s, "
            f"{tp['switch_points_per_second']:.0f} switch points/s "
            f"({tp['switch_points_per_execution']:.0f} per execution)"
        )
    fast, slow = (result["backends"][b]["executions_per_second"] for b in BACKENDS)
    out.append(f"   greenlet / thread: {fast / slow:.2f}x")
    out += ["", "2. Executions (and ms) to the first failure; median over seeds for random/pct"]
    rows = []
    for name, row in result["bugs"].items():
        cells = [name]
        for strategy in STRATEGIES:
            cell = row[strategy]
            found = f"{cell['found']}/{cell['runs']}"
            cells.append(f"{_fmt(cell['executions'])} ({cell['seconds'] * 1000:.0f} ms) {found}")
        rows.append(cells)
    out.append(_table(["bug", *STRATEGIES], rows))
    out += ["", "3. Executions to exhaust (DPOR = one per Mazurkiewicz trace)"]
    rows = []
    for name, row in result["dpor_vs_dfs"].items():

        def cell(entry: dict[str, Any]) -> str:
            mark = "" if entry["exhausted"] else "+ (cap)"
            return f"{entry['executions']}{mark}"

        rows.append(
            [
                name,
                str(row["traces"]),
                f"{cell(row['dpor'])} ({row['dpor']['complete']} complete, "
                f"{row['dpor']['redundant']} redundant)",
                cell(row["dfs_pb2"]),
                cell(row["dfs"]),
            ]
        )
    out.append(_table(["program", "traces", "DPOR", "DFS pb=2", "DFS unbounded"], rows))
    fr = result["frontrun"]
    out += ["", "4. frontrun on the same bugs"]
    if not fr["available"]:
        out.append(f"   not run: {fr['reason']}")
    else:
        out.append(f"   frontrun {fr['version']}; ratios = frontrun / lockstep (same strategy)")
        rows = []
        for name, row in fr["rows"].items():
            ours = result["bugs"][name]
            cells = [name]
            for strategy in ("dpor", "random"):
                entry = row[strategy]
                if entry["error"]:
                    cells += [f"error: {entry['error']}", "-"]
                    continue
                mine = ours[strategy]
                found = f"{entry['found']}/{entry['runs']}"
                cells.append(
                    f"{_fmt(entry['executions'])} ({(entry['seconds'] or 0) * 1000:.0f} ms) {found}"
                )
                if entry["found"] and mine["found"]:
                    ratio_x = (entry["executions"] or 0) / max(mine["executions"], 1)
                    ratio_t = (entry["seconds"] or 0) / max(mine["seconds"], 1e-9)
                    cells.append(f"x{ratio_x:.2g} execs, x{ratio_t:.2g} time")
                else:
                    cells.append("not found" if not entry["found"] else "-")
            rows.append(cells)
        out.append(
            _table(
                [
                    "bug",
                    "frontrun dpor",
                    "vs lockstep dpor",
                    "frontrun random",
                    "vs lockstep random",
                ],
                rows,
            )
        )
    out.append(f"   {fr.get('interleave', '')}".rstrip())
    out += [
        "",
        "5. Watched state: executions to the first failure (kind); unwatched races are invisible",
    ]
    rows = []
    for name, modes in result["races"].items():
        for mode, row in modes.items():
            cells = [name, mode]
            for strategy in RACE_STRATEGIES:
                cell = row[strategy]
                found = cell["kind"] or f"none, {cell['verdict']}"
                cells.append(f"{cell['executions']} ({found})")
            rows.append(cells)
    out.append(_table(["program", "mode", *RACE_STRATEGIES], rows))
    out.append(render_watch_overhead(result["watch_overhead"]))
    rows = []
    for name, row in result["dpor_vs_traces"].items():
        ratio = row["executions"] / max(row["traces"], 1)
        rows.append(
            [
                name,
                str(row["interleavings"]),
                str(row["traces"]),
                str(row["executions"]),
                f"x{ratio:.2f}",
            ]
        )
    out.append("   DPOR against the Mazurkiewicz traces of read/write programs (goal <= x1.2):")
    out.append(_table(["program", "interleavings", "traces", "DPOR executions", "ratio"], rows))
    return "\n".join(out)


def render_watch_overhead(wo: dict[str, Any]) -> str:
    """The line that reports :func:`watch_overhead`'s result."""
    secs, steps = wo["seconds_per_execution"], wo["steps_per_execution"]
    return (
        "   per-execution CPU time of watching (3 threads x 10 locked deposits, random): "
        + ", ".join(f"{mode} {secs[mode] * 1000:.2f} ms ({steps[mode]} steps)" for mode in secs)
        + f"; watched/unwatched x{wo['ratio']:.2f} (goal <= 1.5), "
        f"races off x{wo['ratio_races_off']:.2f} (every access a switch point; "
        f"x{wo['ratio_races_off_per_step']:.2f} per step)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m benchmarks.bench_lockstep")
    parser.add_argument("--quick", action="store_true", help="a fast smoke run")
    parser.add_argument("--seeds", type=int, default=5, help="seeds for random and PCT")
    parser.add_argument("--no-frontrun", action="store_true", help="skip the frontrun comparison")
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="DIR",
        help="only compare this checkout's backends with the lockstep checkout in DIR",
    )
    parser.add_argument(
        "--check", action="store_true", help="with --baseline: also time `lockstep check --jobs 2`"
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="runs per median (with --baseline: default 5; with --watch-overhead: default 15)",
    )
    parser.add_argument(
        "--watch-overhead",
        action="store_true",
        help="only measure the per-execution cost of watching (section 5's overhead line)",
    )
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error(f"--seeds must be >= 1 (got {args.seeds})")
    if args.baseline is not None:
        if not (args.baseline / "src" / "lockstep").is_dir():
            parser.error(f"--baseline {args.baseline} is not a lockstep checkout (no src/lockstep)")
        repeats = 5 if args.repeats is None else args.repeats
        if repeats < 1:
            parser.error(f"--repeats must be >= 1 (got {repeats})")
        from benchmarks.sidebyside import compare, render_comparison

        print(render_comparison(compare(args.baseline, repeats=repeats, check=args.check)))
        return 0
    if args.watch_overhead:
        repeats = 15 if args.repeats is None else args.repeats
        if repeats < 1:
            parser.error(f"--repeats must be >= 1 (got {repeats})")
        quick = args.quick
        print(render_watch_overhead(watch_overhead(5 if quick else 40, 1 if quick else repeats)))
        return 0
    result = run(quick=args.quick, seeds=args.seeds, with_frontrun=not args.no_frontrun)
    print(render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

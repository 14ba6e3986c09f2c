"""Warm-path cost of the core against a plain ``OrderedDict`` + ``Lock`` baseline.

Run with ``python3 -m benchmarks.bench_core`` (``--quick`` for a smoke run).

What is measured, for caches of ``max_size`` 8, 100 and 10,000 filled with
trivial models (one ``WithFixedSizeCache(ModelManager(...))`` stack each):

* ``add_model`` of an id that is already loaded (the warm hit every
  request of an inference server pays),
* ``lease`` enter + exit (what a request holding its model pays),
* ``refresh`` (what an inference call does to the LRU order),

each as nanoseconds per operation: the median over ``--repeat`` runs of
``--number`` operations, timeit-style (one timed loop per run, ids visited
in a fixed shuffled order so no single id stays hot). Two baselines are
measured in the same run with the same loop, each repeat timing baseline and
core back to back: ``OrderedDict`` + ``Lock`` + ``move_to_end`` (for
``add_model`` and ``refresh``) and the same plus a per-id lease count (for
``lease``). The ratio column is the median per-repeat core / baseline; the
target is a flat column across ``max_size`` and at most 3x.

Timings are printed, never asserted; the smoke test only checks that the
benchmark runs and prints its table.
"""

from __future__ import annotations

import argparse
import collections
import gc
import random
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from modelmanager import ModelManager, WithFixedSizeCache

MAX_SIZES = (8, 100, 10_000)
TARGET_RATIO = 3.0


@attrs.frozen
class Row:
    """One measured operation: core cost, baseline cost and their ratio.

    ``ratio`` is the median of the per-repeat ratios (each repeat times the
    baseline and the core back to back), which is steadier on a shared
    machine than the ratio of the two medians.
    """

    operation: str
    max_size: int
    core_ns: float
    baseline: str
    baseline_ns: float
    ratio: float
    stack: str = "cache"


@attrs.frozen
class Settings:
    repeat: int
    number: int
    max_sizes: tuple[int, ...]
    layers: bool = False


class _TrivialModel:
    """The cheapest model the registry protocol allows."""

    __slots__ = ("model_id",)

    def __init__(self, model_id: str, api_key: str | None = None) -> None:
        self.model_id = model_id

    def clear_cache(self, delete_from_disk: bool = True) -> None:
        pass


class _TrivialRegistry:
    def get_model(self, resolved_id: str) -> type[_TrivialModel]:
        return _TrivialModel


class _MoveToEndBaseline:
    """What a hit costs in the simplest thread-safe LRU."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._order: collections.OrderedDict[str, object] = collections.OrderedDict()

    def add(self, model_id: str) -> None:
        """List ``model_id`` (most recent), as a load would."""
        with self._lock:
            self._order[model_id] = object()

    def hit(self, model_id: str) -> None:
        with self._lock:
            self._order.move_to_end(model_id)


class _LeaseCountBaseline(_MoveToEndBaseline):
    """A hit that also counts leases under the same lock, released on exit."""

    def __init__(self) -> None:
        super().__init__()
        self._leases: dict[str, int] = {}

    def lease(self, model_id: str) -> object:
        with self._lock:
            self._order.move_to_end(model_id)
            self._leases[model_id] = self._leases.get(model_id, 0) + 1
            return self._order[model_id]

    def release(self, model_id: str) -> None:
        with self._lock:
            count = self._leases[model_id] - 1
            if count:
                self._leases[model_id] = count
            else:
                del self._leases[model_id]


Loop = Callable[[Sequence[str]], None]


def _time_once(loop: Loop, sequence: Sequence[str]) -> float:
    start = time.perf_counter_ns()
    loop(sequence)
    return (time.perf_counter_ns() - start) / len(sequence)


def _paired(core: Loop, base: Loop, ids: Sequence[str], s: Settings) -> tuple[float, float, float]:
    """Median core ns/op, median baseline ns/op and median per-repeat ratio.

    Each repeat times both loops over the same ``s.number`` ids back to back
    (alternating which goes first), so load from other processes hits both.
    Before the first, each loop runs once over every id (and over at least
    1,000 ids): a warm path is timed with every id warm. Warming only the
    first 1,000 left the warm add's 10,000 row about 0.1x higher and more
    spread from run to run (benchmarks/README.md).
    """
    sequence = [ids[i % len(ids)] for i in range(s.number)]
    warm_up = sequence[: max(len(ids), 1000)]
    core(warm_up)
    base(warm_up)
    core_samples: list[float] = []
    base_samples: list[float] = []
    gc_was_enabled = gc.isenabled()
    gc.disable()  # like timeit: collections are noise, not warm-path cost
    try:
        for repeat in range(s.repeat):
            if repeat % 2:
                core_samples.append(_time_once(core, sequence))
                base_samples.append(_time_once(base, sequence))
            else:
                base_samples.append(_time_once(base, sequence))
                core_samples.append(_time_once(core, sequence))
    finally:
        if gc_was_enabled:
            gc.enable()
    ratios = [c / b for c, b in zip(core_samples, base_samples, strict=True)]
    return (
        statistics.median(core_samples),
        statistics.median(base_samples),
        statistics.median(ratios),
    )


def _core_loops(cache: Any) -> dict[str, Loop]:
    add_model = cache.add_model
    lease = cache.lease
    refresh: Callable[[str], object] | None = getattr(cache, "refresh", None)

    def add_loop(ids: Sequence[str]) -> None:
        for model_id in ids:
            add_model(model_id)

    def lease_loop(ids: Sequence[str]) -> None:
        for model_id in ids:
            with lease(model_id):
                pass

    loops: dict[str, Loop] = {"add_model (warm)": add_loop, "lease enter+exit": lease_loop}
    if refresh is not None:
        refresh_one = refresh

        def refresh_loop(ids: Sequence[str]) -> None:
            for model_id in ids:
                refresh_one(model_id)

        loops["refresh"] = refresh_loop
    return loops


class _Baselines:
    """Both baselines, filled one id at a time (see :func:`measure` for why)."""

    def __init__(self) -> None:
        self.move = _MoveToEndBaseline()
        self.counted = _LeaseCountBaseline()

    def add(self, model_id: str) -> None:
        self.move.add(model_id)
        self.counted.add(model_id)

    def loops(self) -> dict[str, Loop]:
        """Each baseline's timed loop, by name."""
        hit = self.move.hit
        acquire = self.counted.lease
        release = self.counted.release

        def move_loop(ids: Sequence[str]) -> None:
            for model_id in ids:
                hit(model_id)

        def lease_loop(ids: Sequence[str]) -> None:
            for model_id in ids:
                acquire(model_id)
                try:
                    pass
                finally:
                    release(model_id)

        return {"OrderedDict+Lock": move_loop, "OrderedDict+Lock+lease": lease_loop}


def _baseline_loops(ids: Sequence[str]) -> dict[str, Loop]:
    """Both baselines' loops over structures filled with ``ids`` in one go."""
    baselines = _Baselines()
    for model_id in ids:
        baselines.add(model_id)
    return baselines.loops()


_BASELINE_OF = {
    "add_model (warm)": "OrderedDict+Lock",
    "lease enter+exit": "OrderedDict+Lock+lease",
    "refresh": "OrderedDict+Lock",
}


def measure(settings: Settings) -> list[Row]:
    """Build one filled cache per ``max_size`` and measure every operation.

    With ``settings.layers`` a bare ``ModelManager`` holding the same models
    is measured too (``stack`` "manager"), to show which layer costs what.

    The baselines are filled in the same loop as the stacks, one id after
    the other, so every structure takes its memory from the same stream of
    allocations, as an inference server's LRU entries arrive between its
    models' allocations. Filled afterwards in a tight loop, the baselines'
    entries lay side by side while the core's records lay between the
    models' and the lifecycle's objects; at 10,000 ids that layout alone
    raised the warm add's ratio by about 0.13 (benchmarks/README.md).
    """
    rows: list[Row] = []
    for max_size in settings.max_sizes:
        ids = [f"model-{index}" for index in range(max_size)]
        stacks: dict[str, Any] = {
            "cache": WithFixedSizeCache(ModelManager(_TrivialRegistry()), max_size=max_size)
        }
        if settings.layers:
            stacks["manager"] = ModelManager(_TrivialRegistry())
        filled = _Baselines()
        for model_id in ids:
            for stack in stacks.values():
                stack.add_model(model_id)
            filled.add(model_id)
        visit = list(ids)
        random.Random(max_size).shuffle(visit)
        baselines = filled.loops()
        for stack_name, stack in stacks.items():
            for operation, loop in _core_loops(stack).items():
                baseline = _BASELINE_OF[operation]
                core_ns, baseline_ns, ratio = _paired(loop, baselines[baseline], visit, settings)
                rows.append(
                    Row(
                        operation=operation,
                        max_size=max_size,
                        core_ns=core_ns,
                        baseline=baseline,
                        baseline_ns=baseline_ns,
                        ratio=ratio,
                        stack=stack_name,
                    )
                )
            stack.clear()
    return rows


def format_table(rows: Sequence[Row]) -> str:
    """A compact fixed-width table, one line per (operation, max_size)."""
    header = (
        f"{'operation':<18} {'stack':<7} {'max_size':>8} {'core ns/op':>10} "
        f"{'baseline':<22} {'base ns/op':>10} {'ratio':>6}"
    )
    lines = [header, "-" * len(header)]
    order = list(_BASELINE_OF)
    for row in sorted(rows, key=lambda r: (order.index(r.operation), r.stack, r.max_size)):
        lines.append(
            f"{row.operation:<18} {row.stack:<7} {row.max_size:>8} {row.core_ns:>10.0f} "
            f"{row.baseline:<22} {row.baseline_ns:>10.0f} {row.ratio:>5.2f}x"
        )
    worst = max((row for row in rows if row.stack == "cache"), key=lambda r: r.ratio)
    lines.append(
        f"worst ratio {worst.ratio:.2f}x ({worst.operation}, max_size {worst.max_size}); "
        f"target <= {TARGET_RATIO:.0f}x, flat in max_size"
    )
    return "\n".join(lines)


def _parse(argv: Sequence[str] | None) -> Settings:
    parser = argparse.ArgumentParser(
        prog="python3 -m benchmarks.bench_core", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="a fast smoke run (noisy numbers)")
    parser.add_argument("--repeat", type=int, default=None, help="timed runs per cell (median)")
    parser.add_argument("--number", type=int, default=None, help="operations per timed run")
    parser.add_argument(
        "--layers", action="store_true", help="also measure a bare ModelManager (per-layer cost)"
    )
    args = parser.parse_args(argv)
    repeat = args.repeat if args.repeat is not None else (2 if args.quick else 7)
    number = args.number if args.number is not None else (200 if args.quick else 50_000)
    if repeat < 1 or number < 1:
        parser.error(f"--repeat and --number must be >= 1 (got {repeat} and {number})")
    max_sizes = (8, 100) if args.quick else MAX_SIZES
    return Settings(repeat=repeat, number=number, max_sizes=max_sizes, layers=args.layers)


def main(argv: Sequence[str] | None = None) -> int:
    """Measure and print the table; returns the process exit status (0)."""
    settings = _parse(argv)
    print(
        f"bench_core: python {sys.version.split()[0]}, median of {settings.repeat} x "
        f"{settings.number} ops per cell"
    )
    print(format_table(measure(settings)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Soak the core with real threads: ``python3 -m benchmarks.soak --seconds 60 --threads 8``.

Threads hammer one ``WithFixedSizeCache(ModelManager(...))`` with a random
mix of acquire (load, lease, use), add, remove, pin, unpin, refresh, lease,
getitem and keys over a few ids and a small bound, while the fakes inject
constructor failures, ``clear_cache`` failures and memory pressure. It
prints operations per second, every outcome by kind, the cache's
statistics, how many lines the core logged, and the checks:

* no exception of a type the API does not document for that call;
* no ``ModelNotFound`` out of ``acquire`` (it loads and leases atomically);
* no ``clear_cache`` while a lease on the model is held (I13);
* never two constructors of one id at once (I2);
* at the end (leases given back, failures off, a lease round trip to let
  the cache restore its bound): the LRU equals the registered models (I4),
  every constructed model is registered or was cleared exactly once (I9),
  the lifecycle table is empty, and the bound holds (count and weight).

Exit status 1 on any violation. ``--ops N`` bounds each thread by
operations instead of time (what the CI test runs). The run is seeded; the
interleaving is the OS's, so every check is one that must hold on every
schedule.

The soak's own bookkeeping is exact when threads really run in parallel (a
free-threaded CPython, where ``+= 1`` on a shared counter loses updates):
outcomes are counted per thread and merged at the end (``Tallies``), the
fakes' state is read and changed under locks, one critical section per check.
The first line says which interpreter ran it and whether its GIL was on.
"""

from __future__ import annotations

import argparse
import collections
import logging
import platform
import random
import sys
import sysconfig
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from modelmanager import (
    CacheFull,
    InvalidArgument,
    LockTimeout,
    ModelManager,
    ModelNotFound,
    WithFixedSizeCache,
)

__all__ = ["SoakConfig", "SoakReport", "Tallies", "main", "run"]

_OPERATIONS = (
    ("acquire", 30),
    ("add", 20),
    ("refresh", 12),
    ("lease", 10),
    ("getitem", 8),
    ("remove", 8),
    ("pin", 4),
    ("unpin", 4),
    ("keys", 4),
)


class InjectedLoadError(RuntimeError):
    """A constructor failure the soak injected."""


class InjectedUnloadError(RuntimeError):
    """A ``clear_cache`` failure the soak injected."""


# What each call may raise by design (anything else is a violation).
_EXPECTED: dict[str, tuple[type[BaseException], ...]] = {
    "acquire": (LockTimeout, CacheFull, InjectedLoadError, InjectedUnloadError),
    "add": (LockTimeout, CacheFull, InjectedLoadError, InjectedUnloadError),
    "remove": (LockTimeout, InjectedUnloadError),
    "lease": (LockTimeout, ModelNotFound),
    "getitem": (LockTimeout, ModelNotFound),
    "refresh": (LockTimeout,),
    "pin": (LockTimeout,),
    "unpin": (LockTimeout,),
    "keys": (),
}


@attrs.frozen
class SoakConfig:
    """One soak's settings (see ``--help``)."""

    seconds: float = 60.0
    ops: int | None = None
    threads: int = 8
    ids: int = 6
    max_size: int = 2
    on_full: str = "wait"
    weighted: bool = False
    load_failure: float = 0.08
    clear_failure: float = 0.05
    pressure: float = 0.05
    queue_lock_timeout: float = 0.05
    lock_timeout: float = 1.0
    seed: int = 0
    sample: bool = True
    """Sample the inner manager's size every millisecond while it runs (the CI test does not)."""
    cache_class: type[WithFixedSizeCache] = WithFixedSizeCache
    """The cache under test (a known-bug variant shows what the checks catch)."""


@attrs.define
class SoakReport:
    """What a soak did and found."""

    operations: int = 0
    elapsed: float = 0.0
    outcomes: collections.Counter[str] = attrs.field(factory=collections.Counter)
    violations: list[str] = attrs.field(factory=list)
    log_lines: int = 0
    log_messages: collections.Counter[str] = attrs.field(factory=collections.Counter)
    statistics: Any = None
    over_bound_samples: int = 0
    samples: int = 0
    max_registered: int = 0
    final_registered: int = 0
    bound: str = ""

    @property
    def ok(self) -> bool:
        """No violation."""
        return not self.violations


class Tallies:
    """Counts by name from many threads, exact without the GIL.

    ``counter[name] += 1`` on one shared ``Counter`` is a read, an add and a write:
    two threads that really run in parallel (a free-threaded CPython) both read n and
    both write n + 1, and an update is lost; under the GIL it happens only when a
    thread switch falls between them. Here each thread counts into a ``Counter`` of
    its own (``mine``, shared with no other thread while it runs), and ``merged``
    adds them up once the threads are done, so every count is exact on every schedule.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._local = threading.local()
        self._counters: list[collections.Counter[str]] = []

    def mine(self) -> collections.Counter[str]:
        """The calling thread's own counter (created on its first call)."""
        counter: collections.Counter[str] | None = getattr(self._local, "counter", None)
        if counter is None:
            counter = collections.Counter()
            self._local.counter = counter
            with self._lock:
                self._counters.append(counter)
        return counter

    def merged(self) -> collections.Counter[str]:
        """Every thread's counts added up; call it after the counting threads ended."""
        total: collections.Counter[str] = collections.Counter()
        with self._lock:
            for counter in self._counters:
                total.update(counter)
        return total


class _Ghost:
    """What really happened to the models (thread-safe)."""

    def __init__(self, config: SoakConfig) -> None:
        self.config = config
        self.lock = threading.Lock()
        self.constructing: collections.Counter[str] = collections.Counter()
        self.constructed: list[_Model] = []
        self.violations: list[str] = []
        self.inject = True
        self.local = threading.local()

    def rng(self) -> random.Random:
        rng: random.Random | None = getattr(self.local, "rng", None)
        if rng is None:
            rng = random.Random(f"{self.config.seed}:{threading.get_ident()}")
            self.local.rng = rng
        return rng

    def violate(self, message: str) -> None:
        with self.lock:
            if len(self.violations) < 50:
                self.violations.append(message)


class _Model:
    """A fake model: counts leases in use and clear_cache outcomes."""

    def __init__(self, ghost: _Ghost, model_id: str, weight: int) -> None:
        self.ghost = ghost
        self.model_id = model_id
        self.weight = weight
        self.in_use = 0
        self.cleared = 0  # successful clear_cache calls
        self.lock = threading.Lock()

    def use(self) -> None:
        with self.lock:
            if self.cleared:
                self.ghost.violate(f"{self.model_id}: used after its clear_cache")
            self.in_use += 1

    def done(self) -> None:
        with self.lock:
            self.in_use -= 1

    def clear_cache(self, delete_from_disk: bool = True) -> None:
        ghost = self.ghost
        fail = ghost.inject and ghost.rng().random() < ghost.config.clear_failure
        # The check and the clear in one critical section: a use() that starts between
        # them (in parallel, without the GIL) would see neither the lease nor the clear.
        with self.lock:
            if self.in_use:
                ghost.violate(f"{self.model_id}: clear_cache while a lease is in use (I13)")
            if not fail:
                self.cleared += 1
                if self.cleared > 1:
                    ghost.violate(f"{self.model_id}: clear_cache succeeded twice")
        if fail:
            raise InjectedUnloadError(f"injected clear_cache failure of {self.model_id}")


class _Registry:
    def __init__(self, ghost: _Ghost, weights: dict[str, int]) -> None:
        self.ghost = ghost
        self.weights = weights

    def get_model(self, resolved_id: str) -> Callable[..., _Model]:
        ghost = self.ghost

        def construct(model_id: str, api_key: str | None = None) -> _Model:
            with ghost.lock:
                ghost.constructing[resolved_id] += 1
                if ghost.constructing[resolved_id] > 1:
                    ghost.violations.append(f"{resolved_id}: two constructors at once (I2)")
            try:
                for _ in range(200):  # a little work, so constructors overlap other calls
                    pass
                if ghost.inject and ghost.rng().random() < ghost.config.load_failure:
                    raise InjectedLoadError(f"injected constructor failure of {resolved_id}")
                model = _Model(ghost, resolved_id, self.weights[resolved_id])
                with ghost.lock:
                    ghost.constructed.append(model)
                return model
            finally:
                with ghost.lock:
                    ghost.constructing[resolved_id] -= 1

        return construct


class _Probe:
    """Memory readings: below the threshold with probability ``pressure``."""

    def __init__(self, ghost: _Ghost) -> None:
        self.ghost = ghost

    def free_fraction(self) -> float | None:
        if self.ghost.inject and self.ghost.rng().random() < self.ghost.config.pressure:
            return 0.1
        return 0.9

    def release_cache(self) -> None:
        return None


class _LogCounter(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0
        self.messages: collections.Counter[str] = collections.Counter()
        self._lock_ = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        with self._lock_:
            self.count += 1
            self.messages[record.msg if isinstance(record.msg, str) else repr(record.msg)] += 1


def _build(config: SoakConfig, ghost: _Ghost) -> tuple[WithFixedSizeCache, dict[str, int]]:
    ids = [f"m{index}" for index in range(config.ids)]
    rng = random.Random(config.seed)
    # Weights over three orders of magnitude (a 6 MB detector next to a 2.5 GB segmenter).
    weights = {model_id: rng.choice((6, 60, 600, 2500)) for model_id in ids}
    kwargs: dict[str, Any] = {}
    if config.weighted:
        kwargs["max_weight"] = 3000
        kwargs["weigher"] = lambda resolved_id, model: model.weight
    cache = config.cache_class(
        ModelManager(_Registry(ghost, weights), lock_timeout=config.lock_timeout),
        max_size=config.max_size,
        on_full=config.on_full,  # type: ignore[arg-type]
        queue_lock_timeout=config.queue_lock_timeout,
        memory_probe=_Probe(ghost),
        memory_free_threshold=0.5 if config.pressure > 0 else 0.0,
        **kwargs,
    )
    return cache, weights


def _worker(
    *,
    cache: WithFixedSizeCache,
    ghost: _Ghost,
    config: SoakConfig,
    deadline: float,
    start: threading.Barrier,
    outcomes: Tallies,
) -> None:
    rng = ghost.rng()
    ids = [f"m{index}" for index in range(config.ids)]
    names = [name for name, _ in _OPERATIONS]
    weights = [weight for _, weight in _OPERATIONS]
    local = outcomes.mine()
    start.wait()
    done = 0
    while (config.ops is None and time.monotonic() < deadline) or (
        config.ops is not None and done < config.ops
    ):
        done += 1
        kind = rng.choices(names, weights)[0]
        model_id = rng.choice(ids)
        try:
            _perform(cache, kind, model_id)
            local[f"{kind}: ok"] += 1
        except Exception as error:  # classified: documented outcomes vs violations
            local[f"{kind}: {type(error).__name__}"] += 1
            if kind == "acquire" and isinstance(error, ModelNotFound):
                ghost.violate(f"acquire({model_id!r}) raised ModelNotFound: {error}")
            elif not isinstance(error, _EXPECTED[kind]) or isinstance(error, InvalidArgument):
                ghost.violate(f"{kind}({model_id!r}) raised {error!r} (not documented)")


def _perform(cache: WithFixedSizeCache, kind: str, model_id: str) -> None:
    if kind == "acquire":
        with cache.acquire(model_id) as model:
            model.use()
            try:
                cache.refresh(model_id)  # what an inference does
            finally:
                model.done()
    elif kind == "add":
        cache.add_model(model_id)
    elif kind == "remove":
        cache.remove(model_id)
    elif kind == "lease":
        with cache.lease(model_id) as model:
            model.use()
            model.done()
    elif kind == "getitem":
        cache[model_id]
    elif kind == "refresh":
        cache.refresh(model_id)
    elif kind == "pin":
        cache.pin_model(model_id)
    elif kind == "unpin":
        cache.unpin_model(model_id)
    else:
        cache.keys()


def _sample(
    cache: WithFixedSizeCache, stop: threading.Event, report: SoakReport, limit: int
) -> None:
    inner = cache.manager
    while not stop.wait(0.001):
        registered = len(inner)
        report.samples += 1
        report.max_registered = max(report.max_registered, registered)
        if registered > limit:
            report.over_bound_samples += 1


def run(config: SoakConfig) -> SoakReport:
    """Run one soak and check everything (see the module doc)."""
    ghost = _Ghost(config)
    cache, weights = _build(config, ghost)
    report = SoakReport(bound=f"max_size={config.max_size}")
    if config.weighted:
        report.bound += ", max_weight=3000"
    counter = _LogCounter()
    core_logger = logging.getLogger("modelmanager")
    core_logger.addHandler(counter)
    outcomes = Tallies()
    start = threading.Barrier(config.threads + 1)
    began = time.monotonic()
    deadline = began + config.seconds
    threads = [
        threading.Thread(
            target=_worker,
            kwargs={
                "cache": cache,
                "ghost": ghost,
                "config": config,
                "deadline": deadline,
                "start": start,
                "outcomes": outcomes,
            },
            name=f"soak-{index}",
            daemon=True,
        )
        for index in range(config.threads)
    ]
    stop = threading.Event()
    sampler = threading.Thread(
        target=_sample, args=(cache, stop, report, config.max_size), daemon=True
    )
    try:
        for thread in threads:
            thread.start()
        if config.sample:
            sampler.start()
        start.wait()
        began = time.monotonic()
        for thread in threads:
            thread.join(timeout=config.seconds + 600)
            if thread.is_alive():
                ghost.violate(f"{thread.name} did not finish (a hang)")
        report.elapsed = time.monotonic() - began
    finally:
        stop.set()
        if config.sample:
            sampler.join(timeout=30)
        core_logger.removeHandler(counter)
    report.outcomes = outcomes.merged()
    report.operations = sum(report.outcomes.values())
    report.log_lines = counter.count
    report.log_messages = counter.messages
    _settle_and_check(cache, ghost, weights, config, report)
    report.violations = list(ghost.violations)
    report.statistics = cache.statistics()
    return report


def _settle_and_check(
    cache: WithFixedSizeCache,
    ghost: _Ghost,
    weights: dict[str, int],
    config: SoakConfig,
    report: SoakReport,
) -> None:
    """Failures off, pins off, one lease round trip (the bound comes back), then check."""
    ghost.inject = False
    for model_id in sorted(cache.pinned()):
        cache.unpin_model(model_id)
    loaded = cache.keys()
    if loaded:
        with cache.lease(loaded[0]):
            pass
    inner = cache.manager
    registered = sorted(inner.keys())
    report.final_registered = len(registered)
    if sorted(cache.lru_order()) != registered:
        ghost.violate(f"LRU {cache.lru_order()} != registered {registered} (I4)")
    if len(registered) > config.max_size:
        ghost.violate(f"{len(registered)} registered at the end over max_size={config.max_size}")
    if config.weighted:
        total = sum(weights[model_id] for model_id in registered)
        heaviest = max((weights[model_id] for model_id in registered), default=0)
        if total > 3000 and len(registered) > 1:
            ghost.violate(f"weight {total} registered at the end over max_weight=3000")
        if heaviest > 3000:
            ghost.violate("a model heavier than the bound")  # impossible with these sizes
    if cache.lifecycle_snapshot():
        ghost.violate(f"lifecycle entries left: {cache.lifecycle_snapshot()} (I9)")
    if cache.lease_counts():
        ghost.violate(f"leases left: {cache.lease_counts()}")
    if cache.in_flight_loads():
        ghost.violate(f"in-flight loads left: {cache.in_flight_loads()}")
    live = {id(inner[model_id]) for model_id in registered}
    for model in ghost.constructed:
        if id(model) in live:
            if model.cleared:
                ghost.violate(f"{model.model_id}: registered but cleared")
        elif model.cleared != 1:
            ghost.violate(
                f"{model.model_id}: constructed, not registered, cleared {model.cleared} times (I9)"
            )


def interpreter() -> str:
    """Which Python ran the soak, and whether its GIL is on now (it can come back on a
    free-threaded build when an extension that does not support running without it is
    imported)."""
    build = " free-threaded" if sysconfig.get_config_var("Py_GIL_DISABLED") else ""
    is_gil_enabled = getattr(sys, "_is_gil_enabled", lambda: True)
    return (
        f"{platform.python_implementation()} {platform.python_version()}{build}, "
        f"GIL {'on' if is_gil_enabled() else 'off'}"
    )


def format_report(config: SoakConfig, report: SoakReport) -> str:
    """The printed summary."""
    lines = [
        f"python: {interpreter()}",
        f"soak: {config.threads} threads, {report.elapsed:.1f} s, {config.ids} ids, "
        f"{report.bound}, on_full={config.on_full!r}, failures: constructor "
        f"{config.load_failure:.0%}, clear_cache {config.clear_failure:.0%}, "
        f"memory pressure {config.pressure:.0%}",
        f"operations: {report.operations} ({report.operations / max(report.elapsed, 1e-9):,.0f}/s)",
        "outcomes:",
    ]
    lines.extend(f"  {name:<32} {count:>9}" for name, count in sorted(report.outcomes.items()))
    stats = report.statistics
    lines.append(
        "statistics: "
        + ", ".join(f"{name}={value}" for name, value in attrs.asdict(stats).items() if value)
    )
    lines.append(
        f"inner manager over the bound: {report.over_bound_samples} of {report.samples} samples "
        f"(max {report.max_registered} registered); at the end {report.final_registered}"
    )
    lines.append(f"log lines (WARNING+): {report.log_lines}")
    lines.extend(
        f"  {count:>5} x {message[:90]}" for message, count in report.log_messages.most_common()
    )
    checks = (
        "no undocumented exception type",
        "no ModelNotFound through acquire",
        "no clear_cache while leased",
        "no two constructors of one id at once",
        "LRU == registered at the end",
        "every constructed model registered or cleared exactly once",
        "the bound holds at the end",
    )
    verdict = "PASS" if report.ok else "FAIL"
    lines.append(f"checks ({verdict}): " + "; ".join(checks))
    lines.extend(f"  VIOLATION: {violation}" for violation in report.violations)
    return "\n".join(lines)


def _parse(argv: Sequence[str] | None) -> SoakConfig:
    parser = argparse.ArgumentParser(
        prog="python3 -m benchmarks.soak", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--seconds", type=float, default=60.0, help="how long (default 60)")
    parser.add_argument("--ops", type=int, default=None, help="operations per thread instead")
    parser.add_argument("--threads", type=int, default=8, help="worker threads (default 8)")
    parser.add_argument("--ids", type=int, default=6, help="distinct model ids (default 6)")
    parser.add_argument("--max-size", type=int, default=2, help="the cache's bound (default 2)")
    parser.add_argument(
        "--on-full", choices=("wait", "proceed", "refuse"), default="wait", help="full policy"
    )
    parser.add_argument("--weighted", action="store_true", help="also bound by weight (3000)")
    parser.add_argument("--load-failure", type=float, default=0.08, help="constructor failures")
    parser.add_argument("--clear-failure", type=float, default=0.05, help="clear_cache failures")
    parser.add_argument("--pressure", type=float, default=0.05, help="memory-pressure readings")
    parser.add_argument("--seed", type=int, default=0, help="the random seed")
    args = parser.parse_args(argv)
    if args.threads < 1 or args.ids < 1 or args.max_size < 1 or args.seconds <= 0:
        parser.error("--threads, --ids and --max-size must be >= 1 and --seconds > 0")
    if args.ops is not None and args.ops < 1:
        parser.error(f"--ops must be >= 1 (got {args.ops})")
    for name in ("load_failure", "clear_failure", "pressure"):
        if not 0.0 <= getattr(args, name) <= 1.0:
            parser.error(f"--{name.replace('_', '-')} must be in [0, 1]")
    return SoakConfig(
        seconds=args.seconds,
        ops=args.ops,
        threads=args.threads,
        ids=args.ids,
        max_size=args.max_size,
        on_full=args.on_full,
        weighted=args.weighted,
        load_failure=args.load_failure,
        clear_failure=args.clear_failure,
        pressure=args.pressure,
        seed=args.seed,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run, print, and return 0 (no violation) or 1."""
    config = _parse(argv)
    report = run(config)
    print(format_report(config, report))
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""Scenarios: closed concurrent programs run against a stack under lockstep.

A `Scenario` is a frozen value: an id (``"B1-remove-add-generation-split"``),
the bugs it targets, the capabilities it needs, a `Setup` (cache size, small
timeouts, scripted failures, models loaded and pinned before the threads
start) and the threads, each a tuple of `driver.Op`.  `Scenario.build(adapter)`
returns the zero-argument callable `lockstep.explore` runs as thread 0; each
execution of it builds a fresh `World`, which

1. builds a fresh stack through the adapter on a `fakes.ScriptedRegistry`,
2. registers the driver's per-step state invariants with
   `lockstep.add_invariant`, each under its own name, so a
   `Failure.invariant` *is* the invariant id,
3. preloads and pins what the setup says, spawns the threads (each runs its
   ops through the `driver.Driver`, which records the history and checks
   every op's postconditions), joins them,
4. checks the quiescent invariants and I15 (`Driver.quiescence`).

The named scenarios are not listed here: each belongs to its bug's module
(`models_spec.bugs`, discovered by the harness's catalogue), and the harness
looks every scenario up by id (`models_spec._harness.scenario_index`): the
named ones, `SPECIFIED`, and the seeded families built here (`random_scenario`,
`basic_scenario`: basic operations, failed unloads, a final clear, and
`mixed_scenario`).  This module imports neither, so a bug module can import it.

Timeouts are scheduling choices in lockstep (any blocked timed wait may time
out), so every scenario uses small timeouts and treats `LockTimeout` as a
legitimate outcome.  What remains unjudged by I15 is counted, never passed
silently: `i15_skips()` maps a reason to the number of executions skipped.

Thread-safety: a scenario value is immutable; the callable `build` returns
creates all its state per execution and is meant for one lockstep run at a
time.
"""

from __future__ import annotations

import math
import random
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

import attrs

import lockstep
from lockstep.lowlevel import held_by_current_thread
from models_spec._harness.driver import (
    OP_KINDS,
    UNBOUNDED,
    Driver,
    Op,
    ScenarioError,
    i15_skips,
)
from models_spec._harness.watching import watch_stack
from models_spec.adapter import ManagerAdapter
from models_spec.fakes import Script, ScriptedRegistry

# The checker's own frames are left out of the tracebacks lockstep and pytest show
# (lockstep._failure.format_exception): a failure is explained in the code's terms.
__tracebackhide__ = True

__all__ = [
    "OP_KINDS",
    "SPECIFIED",
    "Op",
    "Scenario",
    "ScenarioError",
    "Setup",
    "World",
    "basic_scenario",
    "basic_scenarios",
    "i15_skips",
    "mixed_scenario",
    "random_scenario",
    "random_scenarios",
    "specified_scenarios",
]


def _failure_table(
    value: Mapping[str, Sequence[int]] | Sequence[tuple[str, Sequence[int]]],
) -> tuple[tuple[str, tuple[int, ...]], ...]:
    items = value.items() if isinstance(value, Mapping) else value
    return tuple(sorted((rid, tuple(attempts)) for rid, attempts in items))


def _check_timeout(instance: object, attribute: attrs.Attribute[float], value: object) -> None:
    # The adapters pass these straight to the stack: never hand it a timeout
    # the core must refuse (bool, NaN, inf, negative, past threading.TIMEOUT_MAX).
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0 <= value <= threading.TIMEOUT_MAX
    ):
        raise ScenarioError(
            f"Setup.{attribute.name} must be a finite number of seconds in "
            f"[0, threading.TIMEOUT_MAX] (got {value!r})"
        )


def _check_max_size(instance: object, attribute: attrs.Attribute[int], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ScenarioError(f"Setup.max_size must be an int >= 1 (got {value!r})")


@attrs.frozen
class Setup:
    """Fixed configuration of one scenario's stack and script.

    Small timeouts on purpose: lockstep offers every timed wait's timeout as
    a scheduling choice, whatever its length.  Raises `ScenarioError` for a
    timeout the core would refuse or a `max_size` below 1.
    """

    max_size: int = attrs.field(default=2, validator=_check_max_size)
    lock_timeout: float = attrs.field(default=0.5, validator=_check_timeout)
    queue_lock_timeout: float = attrs.field(default=0.5, validator=_check_timeout)
    load_failures: tuple[tuple[str, tuple[int, ...]], ...] = attrs.field(
        default=(), converter=_failure_table
    )
    unload_failures: tuple[tuple[str, tuple[int, ...]], ...] = attrs.field(
        default=(), converter=_failure_table
    )
    seed: int | None = None
    p_load: float = 0.0
    p_unload: float = 0.0
    preload: tuple[str, ...] = ()
    pins: tuple[str, ...] = ()
    inner_preload: tuple[str, ...] = ()
    """Ids the innermost manager loads before the layers above it are built (needs the
    adapter's "adopt" capability); they must load (no scripted failure)."""

    def script(self) -> Script:
        """A fresh `Script` for one execution."""
        return Script(
            load_failures=dict(self.load_failures),
            unload_failures=dict(self.unload_failures),
            seed=self.seed,
            p_load=self.p_load,
            p_unload=self.p_unload,
        )


def _threads(value: Sequence[tuple[str, Sequence[Op]]]) -> tuple[tuple[str, tuple[Op, ...]], ...]:
    return tuple((name, tuple(ops)) for name, ops in value)


def _ops(value: Iterable[Op]) -> tuple[Op, ...]:
    # A typed converter (attrs' plugin cannot type the bare ``tuple``).
    return tuple(value)


@attrs.frozen
class Scenario:
    """A named, runnable concurrency scenario (see the module docstring)."""

    id: str
    bugs: tuple[str, ...]
    title: str
    threads: tuple[tuple[str, tuple[Op, ...]], ...] = attrs.field(converter=_threads)
    setup: Setup = attrs.field(factory=Setup)
    needs: frozenset[str] = frozenset()
    linearizable: bool = True
    observe_lru_lock: bool = False
    final: tuple[Op, ...] = attrs.field(default=(), converter=_ops)
    """Ops the main thread performs after joining the threads, alone (before quiescence);
    a ``clear`` only where the stack has a ``clear()`` (the suite does not require one)."""

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise ScenarioError(f"a scenario needs a non-empty id (got {self.id!r})")
        if not self.threads:
            raise ScenarioError(f"scenario {self.id!r} needs at least one thread")
        names = [name for name, _ in self.threads]
        if len(set(names)) != len(names) or "main" in names:
            raise ScenarioError(
                f"scenario {self.id!r}: thread names must be unique and not 'main' (got {names})"
            )
        for name, ops in self.threads:
            if not ops or not all(isinstance(op, Op) for op in ops):
                raise ScenarioError(f"scenario {self.id!r}: thread {name!r} needs a tuple of Op")
        if not all(isinstance(op, Op) for op in self.final):
            raise ScenarioError(f"scenario {self.id!r}: final needs a tuple of Op")

    @property
    def all_needs(self) -> frozenset[str]:
        """Declared needs plus what the ops need."""
        needs = set(self.needs)
        for _, ops in (*self.threads, ("main", self.final)):
            for op in ops:
                needs |= op.needs
        if self.setup.pins:
            needs.add("pins")
        if self.setup.inner_preload:
            needs.add("adopt")
        return frozenset(needs)

    def supported_by(self, adapter: ManagerAdapter) -> bool:
        """Whether `adapter` has every capability this scenario needs."""
        return self.all_needs <= frozenset(adapter.capabilities)

    def build(self, adapter: ManagerAdapter) -> Callable[[], None]:
        """The zero-argument callable lockstep runs (one fresh `World` per execution)."""
        scenario = self

        def run() -> None:
            World(scenario, adapter).run()

        run.__qualname__ = run.__name__ = f"scenario_{self.id}"
        # What lockstep's replay and timelines print first (lockstep.describe_scenario).
        run.__lockstep_description__ = self.story()  # type: ignore[attr-defined]
        return run

    def story(self) -> str:
        """What the scenario asks of the manager, in its own calls: the title, the set-up
        (max_size, models loaded first, scripted failures), then one line per thread, e.g.
        ``thread T1: add_model('X'); remove('X')`` (what replays, timelines and failure
        reports start with)."""
        setup = self.setup
        lines = [f"Scenario {self.id} \u2014 {self.title}"]
        before = [f"max_size {setup.max_size}"]
        first = [Op("add", m, pin=m in setup.pins).call for m in setup.preload]
        first += [Op("pin", m).call for m in setup.pins if m not in setup.preload]
        if setup.inner_preload:
            before.append(
                "the innermost manager already holds " + ", ".join(map(repr, setup.inner_preload))
            )
        if first:
            before.append("main first calls " + "; ".join(first))
        for what, table in (("load", setup.load_failures), ("clear_cache", setup.unload_failures)):
            for rid, attempts in table:
                nth = ", ".join(f"#{n}" for n in attempts)
                before.append(f"{what} {nth} of {rid!r} fails (scripted)")
        if setup.p_load or setup.p_unload:
            before.append("loads and clear_cache calls fail at random (seeded)")
        lines.append("  " + "; ".join(before))
        for name, ops in self.threads:
            lines.append(f"  thread {name}: " + "; ".join(op.call for op in ops))
        if self.final:
            lines.append("  then main, alone: " + "; ".join(op.call for op in self.final))
        return "\n".join(lines)

    def describe(self) -> str:
        """One line per thread: name: op, op, ... (the bug catalogue's notation)."""
        lines = [f"{self.id}: {self.title}"]
        for name, ops in self.threads:
            lines.append(f"  {name}: " + ", ".join(map(str, ops)))
        if self.final:
            lines.append("  main, after joining them: " + ", ".join(map(str, self.final)))
        return "\n".join(lines)


# --------------------------------------------------------------------- the world


def _find_lru_lock(stack: Any) -> Any:
    layer = stack
    for _ in range(64):
        if layer is None:
            return None
        lock = getattr(layer, "_lru_lock", None)
        if lock is not None:
            return lock
        layer = getattr(layer, "manager", None)
    return None


class World:
    """The state of one execution of one scenario against one adapter."""

    def __init__(self, scenario: Scenario, adapter: ManagerAdapter) -> None:
        self.scenario = scenario
        self.adapter = adapter
        setup = scenario.setup
        self.script = setup.script()
        self.registry = ScriptedRegistry(self.script)
        self.ghost = self.registry.ghost
        extra: dict[str, Any] = {}
        if setup.inner_preload:
            extra["inner_models"] = setup.inner_preload
        self.stack = adapter.build(
            self.registry,
            max_size=setup.max_size,
            lock_timeout=setup.lock_timeout,
            queue_lock_timeout=setup.queue_lock_timeout,
            **extra,
        )
        # The stack's shared state is watched: its accesses are switch points and
        # data races on it are failures (models_spec._harness.watching, docs/races.md).
        watch_stack(adapter, self.stack, exclude=(self.registry, self.ghost))
        caps = frozenset(adapter.capabilities)
        # Without the capacity capability nothing is ever evicted: judge the
        # history against an unbounded cache.
        bound = setup.max_size if "capacity" in caps else UNBOUNDED
        self.driver = Driver(adapter, self.stack, self.ghost, self.script, bound=bound)
        if scenario.observe_lru_lock:
            lock = _find_lru_lock(self.stack)
            if lock is not None:
                self.ghost.lock_probe = lambda: held_by_current_thread(lock)

    def run(self) -> None:
        """Preload, register invariants, run the threads, the final ops, check quiescence
        and I15."""
        driver = self.driver
        for check in driver.state_checks():
            lockstep.add_invariant(check, each_step=check.each_step)
        setup = self.scenario.setup
        for model_id in setup.inner_preload:
            # Loaded inside before the stack was built: to the spec, adds that
            # happened first (the layers above adopt them in this order).
            pending = driver.recorder.invoke("main", ("add", model_id, None, False))
            driver.recorder.respond(pending, ("ok", None))
        for model_id in setup.preload:
            driver.perform(Op("add", model_id, pin=model_id in setup.pins), "main")
        for model_id in setup.pins:
            if model_id not in setup.preload:
                driver.perform(Op("pin", model_id), "main")
        threads = [
            lockstep.spawn(self._thread_body, name, ops, name=name)
            for name, ops in self.scenario.threads
        ]
        for thread in threads:
            thread.join()
        for op in self.scenario.final:
            if op.kind == "clear" and not callable(getattr(self.stack, "clear", None)):
                continue
            driver.perform(op, "main")
        driver.quiescence(linearizable=self.scenario.linearizable)

    def _thread_body(self, name: str, ops: tuple[Op, ...]) -> None:
        for op in ops:
            self.driver.perform(op, name)


_IDS: Final = ("a", "b", "c")
_RANDOM_KINDS: Final = ("add", "add", "remove", "refresh", "lease", "getitem")


def _check_seeded(seed: object, threads: object, ops: object) -> None:
    """A seeded family's arguments: `ScenarioError` naming the bad one."""
    for name, value in (("threads", threads), ("ops", ops)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 6:
            raise ScenarioError(f"{name} must be an int in 1..6 (got {value!r})")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ScenarioError(f"seed must be an int (got {seed!r})")


def random_scenario(seed: int, *, threads: int = 3, ops: int = 2) -> Scenario:
    """A seeded random scenario: `threads` threads of `ops` ops over ids a, b, c.

    A pure function of its arguments.  Load and unload failures come from a
    seeded `Script` (p = 0.15 each).  Raises `ScenarioError` for bad sizes.
    """
    _check_seeded(seed, threads, ops)
    rng = random.Random(seed)
    body = [
        (
            f"T{t + 1}",
            [Op(rng.choice(_RANDOM_KINDS), rng.choice(_IDS)) for _ in range(ops)],
        )
        for t in range(threads)
    ]
    return Scenario(
        f"random-{seed}",
        (),
        f"seeded random: {threads} threads x {ops} ops",
        body,
        Setup(
            max_size=2,
            preload=(rng.choice(_IDS),),
            seed=seed,
            p_load=0.15,
            p_unload=0.15,
        ),
        needs=frozenset({"lru", "refresh", "leases"}),
    )


_BASIC_KINDS: Final = ("add", "add", "remove", "remove", "getitem", "keys")
"""What every manager the suite accepts has (models_spec._harness.validate checks these methods)."""


def basic_scenario(seed: int, *, threads: int = 3, ops: int = 2) -> Scenario:
    """A seeded random scenario that needs no capability: `random_scenario` for any manager.

    Only the operations every manager the suite accepts has (add, remove, ``[]``,
    ``keys()``) over ids a, b, c, with one id preloaded and the
    first unload of every id scripted to fail, so that a manager with nothing
    beyond the basic protocol still has its failure paths judged: a failed
    remove keeps the model (I5, I15), a failed load leaves nothing (p = 0.15).
    T1 starts by removing the preloaded id and T2 by adding it again; every
    other op is drawn from the seed. Once they are done, the main thread
    clears the manager alone (where it has a ``clear()``): it must attempt every
    model, keep the ones whose unload failed and raise their errors together.
    A pure function of its arguments; raises `ScenarioError` for bad sizes.
    """
    _check_seeded(seed, threads, ops)
    rng = random.Random(f"basic-{seed}")

    def op() -> Op:
        kind, model_id = rng.choice(_BASIC_KINDS), rng.choice(_IDS)
        return Op(kind) if kind == "keys" else Op(kind, model_id)

    preloaded = rng.choice(_IDS)
    # The first two threads start on the preloaded id, whose removal fails once: a
    # removal racing a re-add and the rest, so that the failure path always runs.
    firsts = [Op("remove", preloaded), Op("add", preloaded)]
    body = [
        (f"T{t + 1}", [firsts[t] if t < len(firsts) else op(), *(op() for _ in range(ops - 1))])
        for t in range(threads)
    ]
    return Scenario(
        f"basic-{seed}",
        (),
        f"seeded random, basic operations only: {threads} threads x {ops} ops, "
        "every first unload fails",
        body,
        Setup(
            max_size=2,
            preload=(preloaded,),
            unload_failures=dict.fromkeys(_IDS, (1,)),
            seed=seed,
            p_load=0.15,
        ),
        final=(Op("clear"),),
    )


def _mixed_op(rng: random.Random, depth: int = 0) -> Op:
    kind = rng.choice(_MIXED_KINDS)
    model_id = rng.choice(_IDS)
    if kind == "keys":
        return Op("keys")
    if kind == "pinned-add":
        return Op("add", model_id, pin=True)
    if kind in ("lease", "acquire"):
        inside = (_mixed_op(rng, depth + 1),) if depth == 0 and rng.random() < 0.5 else ()
        return Op(kind, model_id, uses=rng.choice((1, 2)), inside=inside)
    return Op(kind, model_id)


_MIXED_KINDS: Final = (
    "add",
    "add",
    "pinned-add",
    "acquire",
    "lease",
    "remove",
    "refresh",
    "pin",
    "unpin",
    "getitem",
    "keys",
)


def mixed_scenario(seed: int, *, threads: int = 3, ops: int = 2) -> Scenario:
    """A seeded random scenario over everything a cache does: `random_scenario` plus
    pins (pinned adds, pin, unpin), acquires and leases that hold their model across
    inferences and may run an op inside, and a cache of 1 or 2.

    Not in the default check (`models_spec.hunt` runs it): it needs pins, leases,
    capacity, LRU and refresh. Load and unload failures come from a seeded
    `Script` (p = 0.1 and 0.15). A pure function of its arguments; raises
    `ScenarioError` for bad sizes.
    """
    _check_seeded(seed, threads, ops)
    rng = random.Random(f"mixed-{seed}")
    body = [(f"T{t + 1}", [_mixed_op(rng) for _ in range(ops)]) for t in range(threads)]
    max_size = rng.choice((1, 2))
    preload = tuple(rng.sample(_IDS, max_size))
    return Scenario(
        f"mixed-{seed}",
        (),
        f"seeded random, pins and leases: {threads} threads x {ops} ops, cache of {max_size}",
        body,
        Setup(max_size=max_size, preload=preload, seed=seed, p_load=0.1, p_unload=0.15),
        needs=frozenset({"lru", "refresh", "leases", "pins", "capacity"}),
    )


def basic_scenarios(count: int = 2, *, first_seed: int = 1) -> tuple[Scenario, ...]:
    """`count` basic scenarios with consecutive seeds from `first_seed`."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ScenarioError(f"count must be an int >= 0 (got {count!r})")
    return tuple(basic_scenario(first_seed + k) for k in range(count))


def random_scenarios(count: int = 3, *, first_seed: int = 1) -> tuple[Scenario, ...]:
    """`count` random scenarios with consecutive seeds from `first_seed`."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ScenarioError(f"count must be an int >= 0 (got {count!r})")
    return tuple(random_scenario(first_seed + k) for k in range(count))


SPECIFIED: Final[tuple[Scenario, ...]] = (
    Scenario(
        "I15-eviction-window",
        (),
        "a committed eviction victim stays listed until it is gone, whatever else leaves",
        [
            ("T1", [Op("add", "c")]),
            ("T2", [Op("remove", "b")]),
            ("T3", [Op("keys"), Op("lru"), Op("len")]),
        ],
        Setup(max_size=2, preload=("a", "b")),
        needs=frozenset({"lru", "capacity"}),
    ),
)
"""Scenarios that pin behaviour the spec allows (not bugs): run on the core, PASS.

``I15-eviction-window``: T1's add of c into a full cache of 2 chooses a (the
least recent) and commits to it; while a's ``clear_cache`` runs, T2's
removal of b completes and T3 still lists a.  Under the three-point add
(`spec.expand_adds`) the choice stands and a leaves at the add's eviction
instant; the core reaches this window under PCT (tests/suite/test_i15_window.py).
"""


def specified_scenarios() -> Mapping[str, Scenario]:
    """`SPECIFIED` by id."""
    return {s.id: s for s in SPECIFIED}

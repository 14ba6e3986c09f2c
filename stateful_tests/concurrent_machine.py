"""The concurrent Hypothesis machine: operations *and* their interleaving, drawn together.

One Hypothesis example is one closed concurrent program run as ONE lockstep
execution:

* a configuration (``max_size``), models loaded beforehand (``preload``) and
  scripted constructor / ``clear_cache`` failures (``Script`` entries);
* 2-3 thread programs of 1-3 operations each: ``add`` (with or without an
  alias, optionally pinning), ``remove``, ``refresh``, ``lease`` (enter, use
  the model across a switch point, leave), ``acquire`` (load and lease) and
  ``pin``;
* every scheduling choice of the execution, drawn from the *same* Hypothesis
  data by lockstep's `HypothesisStrategy` while the execution runs (index 0
  = no preemption; a lock wait times out only when no thread can run, see
  `RunFirst`).

So a failing example shrinks as a whole: fewer threads, fewer and simpler
operations, fewer failures, and a schedule that prefers "keep running the
current thread" (a draw of 0), that is fewer preemptions.  It replays from the
Hypothesis example database, or from the ``@reproduce_failure`` blob that
Hypothesis prints (``print_blob=True``).

What is checked is what the named scenarios check, through the same
operation driver (`models_spec._harness.driver.Driver`: one operation model, one
history recorder, one I3 check):

* at every switch point: the state invariants that hold at any instant
  (I1, I2, I4 without duplicates, I7, I11 with the counted over-capacity
  admissions as slack, I13) on the adapter's snapshot and the fakes' ghost;
* around every operation: its postconditions (I3 when an ``add`` or
  ``acquire`` returns normally, I16, I13 for leases, I8);
* at the end, with every thread joined: the quiescent invariants (I4
  bijection, I7, I9 no leaks) and I15, linearizability of the recorded
  history against ``models_spec.spec`` (``lockstep.linearizability``).

A failure raises :class:`ConcurrentCheckFailed` (an ``AssertionError``) whose
message lists the drawn operations, the violated invariant and the lockstep
trace as swimlanes; ``.invariant`` names the invariant ("I2", "I15", ...).

Why a ``@given`` test and not a ``RuleBasedStateMachine``: a lockstep
execution is closed — the scenario spawns its threads, and the run ends when
they have all finished — while a rule-based machine runs one rule at a time
on the test thread and checks invariants between rules.  Rules that merely
*start* operations would have to leave a lockstep run suspended across
Hypothesis steps (the scheduler would have to hand control back to the test
thread in the middle of an execution), which breaks the "execution is a pure
function of its choices" contract replay relies on.  Drawing the whole
program first and then the interleaving step by step from the same data gives
the same shrinking and replay, with each example one deterministic
execution.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, Final

import attrs
import hypothesis.strategies as st

import lockstep
from lockstep.strategies import Capabilities, Choice, ExecutionOutcome, StepContext
from lockstep.strategies.hypothesis import HypothesisStrategy
from models_spec._harness.driver import Driver, Op
from models_spec.adapter import CAPABILITIES, CoreAdapter, ManagerAdapter
from models_spec.fakes import LOAD, UNLOAD, Script, ScriptedRegistry
from models_spec.spec import resolve

__all__ = [
    "ALIASES",
    "IDS",
    "OPERATION_KINDS",
    "ConcurrentCheckFailed",
    "Example",
    "Op",
    "RunFirst",
    "examples",
    "failure_class",
    "kinds_for",
    "run_example",
    "scenario_for",
]

IDS: Final = ("a", "b")
"""Model ids drawn; few on purpose, so operations collide on one id."""
ALIASES: Final = (None, "x")
"""Aliases drawn (None = no alias)."""
OPERATION_KINDS: Final = ("add", "remove", "refresh", "lease", "acquire", "pin")
LOCK_TIMEOUT: Final = 60.0  # virtual seconds: fires only when the schedule chooses it
UNBOUNDED: Final = 64  # max_size of stacks without the "capacity" capability (never reached)


@attrs.frozen
class Example:
    """A whole concurrent program: configuration, preloads, failures, thread programs.

    `load_failures` / `unload_failures`: (resolved id, attempt) pairs that fail.
    """

    max_size: int
    preload: tuple[str, ...]
    load_failures: tuple[tuple[str, int], ...]
    unload_failures: tuple[tuple[str, int], ...]
    programs: tuple[tuple[Op, ...], ...]

    def script(self) -> Script:
        """A fresh `Script` with this example's failures."""
        script = Script()
        for rid, attempt in self.load_failures:
            script.set_outcome(LOAD, rid, attempt, fail=True)
        for rid, attempt in self.unload_failures:
            script.set_outcome(UNLOAD, rid, attempt, fail=True)
        return script

    def describe(self) -> str:
        """A readable listing of the program."""
        lines = [
            f"max_size={self.max_size}, preload={list(self.preload)}, "
            f"load failures={list(self.load_failures)}, "
            f"clear_cache failures={list(self.unload_failures)}"
        ]
        for index, program in enumerate(self.programs):
            lines.append(f"  T{index}: " + "; ".join(map(str, program)))
        return "\n".join(lines)


def kinds_for(capabilities: frozenset[str]) -> tuple[str, ...]:
    """The operation kinds a stack with `capabilities` supports."""
    needs = {"refresh": "refresh", "pin": "pins", "lease": "leases", "acquire": "leases"}
    return tuple(k for k in OPERATION_KINDS if k not in needs or needs[k] in capabilities)


def _ops(
    kinds: tuple[str, ...], ids: tuple[str, ...], aliases: tuple[str | None, ...], pins: bool
) -> st.SearchStrategy[Op]:
    models = st.sampled_from(ids)
    keys = st.sampled_from(sorted({resolve(m, a) for m in ids for a in aliases}))
    alias = st.sampled_from(aliases)
    pin = st.booleans() if pins else st.just(False)
    add = st.builds(Op, st.just("add"), models, alias, pin)
    remove = st.builds(Op, st.just("remove"), keys)
    choices = {
        # add and remove are what every bug involves: listed twice, drawn twice as often.
        "add": [add, add],
        "remove": [remove, remove],
        "lease": [st.builds(Op, st.just("lease"), keys)],
        "acquire": [st.builds(Op, st.just("acquire"), models, alias)],
        "refresh": [st.builds(Op, st.just("refresh"), keys)],
        "pin": [st.builds(Op, st.just("pin"), keys)],
    }
    return st.one_of(*(op for k in OPERATION_KINDS if k in kinds for op in choices[k]))


@functools.cache
def _strategies_after(
    caps: frozenset[str],
    ids: tuple[str, ...],
    aliases: tuple[str | None, ...],
    max_threads: int,
    max_ops: int,
) -> tuple[st.SearchStrategy[Any], ...]:
    """What an example draws from once its ids and aliases are drawn: preload, failures,
    programs. Built once per combination: building and validating a Hypothesis strategy
    costs far more than drawing from it, and an equal strategy draws the same values."""
    keys = st.sampled_from(sorted({resolve(m, a) for m in ids for a in aliases}))
    failures = st.lists(st.tuples(keys, st.integers(1, 2)), max_size=2, unique=True)
    ops = _ops(kinds_for(caps), ids, aliases, "pins" in caps)
    preload = st.lists(st.sampled_from(ids), max_size=2, unique=True)
    programs = st.lists(
        st.lists(ops, min_size=1, max_size=max_ops).map(tuple),
        min_size=2,
        max_size=max_threads,
    )
    return preload, failures, programs


@st.composite
def _examples(
    draw: st.DrawFn,
    caps: frozenset[str],
    max_threads: int,
    max_ops: int,
    max_size: int,
) -> Example:
    # Operations draw from a per-example subset of ids, so collisions on one
    # id (what every reported bug needs) are common: one id, no alias, is
    # also where shrinking goes.
    ids = IDS[: draw(st.integers(1, len(IDS)), label="ids")]
    aliases = ALIASES if draw(st.booleans(), label="aliases") else (None,)
    preload, failures, programs = _strategies_after(caps, ids, aliases, max_threads, max_ops)
    return Example(
        max_size=draw(st.integers(1, max_size)) if "capacity" in caps else UNBOUNDED,
        preload=tuple(draw(preload)),
        load_failures=tuple(draw(failures)),
        unload_failures=tuple(draw(failures)),
        programs=tuple(draw(programs)),
    )


def examples(
    *,
    max_threads: int = 3,
    max_ops: int = 3,
    max_size: int = 3,
    capabilities: frozenset[str] | None = None,
) -> st.SearchStrategy[Example]:
    """Concurrent programs: 2..`max_threads` threads of 1..`max_ops` operations.

    Only operations the `capabilities` support are drawn (all by default).
    Shrinks towards fewer threads/operations, `add` operations, one id, no
    alias, no failures and a small cache.
    """
    caps = CAPABILITIES if capabilities is None else frozenset(capabilities)
    return _examples(caps, max_threads, max_ops, max_size)


class RunFirst:
    """Wrap a strategy: offer it the runnable threads only, timeouts only when none can run.

    Under the sequential spec a `LockTimeout` "changes nothing", but a cold
    add that evicted a victim and then timed out waiting for a slot did
    change something; with the long lock timeouts used here such a timeout
    is not behaviour worth exploring, so a wait times out only when nothing
    else can make progress.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        declared = inner.capabilities
        # The wrapper records the inner strategy's name and seed, and claims nothing more
        # (it changes which choices run, so the inner search's completeness is not its).
        self.capabilities = Capabilities(
            name=declared.name or type(inner).__name__, seed=declared.seed
        )

    def begin_execution(self) -> None:
        """Delegate."""
        self.inner.begin_execution()

    def choose(self, choices: Sequence[Choice], step: StepContext) -> Choice:
        """Delegate, with the timeouts left out while some thread can run."""
        runs = [c for c in choices if c.kind == "run"]
        return self.inner.choose(runs or choices, step)  # type: ignore[no-any-return]

    def end_execution(self, outcome: ExecutionOutcome) -> bool:
        """Delegate."""
        return bool(self.inner.end_execution(outcome))


class ConcurrentCheckFailed(AssertionError):
    """An example failed: `invariant` (e.g. "I2"), `example`, lockstep `failure`.

    What is raised is a subclass per invariant (or failure kind), e.g.
    `ConcurrentCheckFailed_I2`: Hypothesis tells bugs apart by exception type
    and location, so each invariant is shrunk on its own and a shrink never
    drifts from one invariant's failure to another's.
    """

    def __init__(self, message: str, *, invariant: str | None, example: Example, failure: Any):
        super().__init__(message)
        self.invariant = invariant
        self.example = example
        self.failure = failure


_FAILURE_CLASSES: dict[str, type[ConcurrentCheckFailed]] = {}


def failure_class(key: str) -> type[ConcurrentCheckFailed]:
    """The `ConcurrentCheckFailed` subclass raised for invariant (or failure kind) `key`."""
    cls = _FAILURE_CLASSES.get(key)
    if cls is None:
        name = f"ConcurrentCheckFailed_{key}"
        cls = type(name, (ConcurrentCheckFailed,), {"__module__": __name__, "__qualname__": name})
        _FAILURE_CLASSES[key] = cls
    return cls


def _scenario(example: Example, adapter: ManagerAdapter, box: list[Driver]) -> Callable[[], None]:
    def scenario() -> None:
        script = example.script()
        registry = ScriptedRegistry(script)
        stack = adapter.build(
            registry,
            max_size=example.max_size,
            lock_timeout=LOCK_TIMEOUT,
            queue_lock_timeout=LOCK_TIMEOUT,
        )
        driver = Driver(adapter, stack, registry.ghost, script, bound=example.max_size)
        box.append(driver)
        for model_id in example.preload:
            driver.perform(Op("add", model_id), "setup")
        for check in driver.state_checks():
            lockstep.add_invariant(check, each_step=check.each_step)
        threads = [
            lockstep.spawn(_program, driver, f"T{index}", program, name=f"T{index}")
            for index, program in enumerate(example.programs)
        ]
        for thread in threads:
            thread.join()
        driver.quiescence()

    return scenario


def _program(driver: Driver, process: str, program: tuple[Op, ...]) -> None:
    for op in program:
        driver.perform(op, process)


def _invariant_of(failure: Any) -> str | None:
    """The violated invariant's id; a deadlock is a violation of I14 (progress)."""
    name = getattr(failure.exception, "invariant", None)
    if isinstance(name, str):
        return name
    if failure.kind == "deadlock":
        return "I14"
    return None


def scenario_for(example: Example, adapter: ManagerAdapter | None = None) -> Callable[[], None]:
    """`example` as a plain lockstep scenario (for `lockstep.explore`/`replay` with any strategy).

    Each call of the scenario builds a fresh stack; it checks the same
    invariants as `run_example` (state invariants at every switch point,
    I3 on return, quiescent invariants and I15 at the end), raising
    `InvariantViolation` on a failure.
    """
    return _scenario(example, adapter if adapter is not None else CoreAdapter(0), [])


def run_example(
    example: Example,
    data: Any,
    *,
    adapter: ManagerAdapter | None = None,
    max_steps: int = 5_000,
) -> int:
    """Run `example` as one lockstep execution, its schedule drawn from `data`.

    Returns the number of steps.  Raises `ConcurrentCheckFailed` (with the
    program, the violated invariant and the swimlanes) on any failure:
    an invariant violation, an unexpected exception, a deadlock or the step
    limit.
    """
    adapter = adapter if adapter is not None else CoreAdapter(0)
    strategy = HypothesisStrategy(data)
    box: list[Driver] = []
    result = lockstep.explore(
        _scenario(example, adapter, box),
        lockstep.Settings(budget=1, shrink=False, max_steps=max_steps, progress=False),
        strategy=RunFirst(strategy),
        patch=adapter.patch_modules(),
        scenario_id="stateful_tests.concurrent_machine:run_example",
    )
    failure = result.failure
    if failure is None:
        return int(result.steps)
    control = failure.exception
    if control is not None and not isinstance(control, Exception):
        # Hypothesis' own control flow (StopTest: the data ran out while a
        # scheduling choice was drawn; also KeyboardInterrupt) belongs to
        # Hypothesis, not to the stack under test: hand it back.
        raise control
    invariant = _invariant_of(failure)
    history = "\n".join(box[0].history_lines()) if box else ""
    message = (
        f"concurrent check failed on adapter {adapter.name!r}"
        f" ({invariant or failure.kind}): {failure.message}\n\n"
        f"Program:\n{example.describe()}\n\nHistory (process: input -> output [call, return]):\n"
        f"{history}\n\nInterleaving ({len(failure.trace)} steps, "
        f"{failure.trace.preemptions} preemptions, {strategy.draws} drawn choices):\n"
        f"{failure.trace.swimlanes()}\n\n"
        "Reproduce: rerun the test (the Hypothesis database replays it) or paste the "
        "@reproduce_failure blob Hypothesis printed."
    )
    cls = failure_class(invariant or failure.kind)
    raise cls(message, invariant=invariant, example=example, failure=failure)

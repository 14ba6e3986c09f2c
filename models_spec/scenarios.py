"""Named bug scenarios (one per reported bug B1-B17) and seeded random scenarios.

A `Scenario` is a frozen value: an id (``"B1-remove-add-generation-split"``),
the bugs it targets, the capabilities it needs, a `Setup` (cache size, small
timeouts, scripted failures, models loaded and pinned before the threads
start) and the threads, each a tuple of `Op`.  `Scenario.build(adapter)`
returns the zero-argument callable `lockstep.explore` runs as thread 0; each
execution of it

1. builds a fresh stack through the adapter on a `fakes.ScriptedRegistry`,
2. registers the cheap per-step state invariants with `lockstep.add_invariant`
   (I1, I2, I4 without quiescence = no duplicates, I11, I13, and I14 when the
   LRU lock holder is observable), each under its own name, so a
   `Failure.invariant` *is* the invariant id,
3. preloads and pins what the setup says, spawns the threads, joins them,
4. checks the quiescent invariants (`invariants.check_all(quiescent=True)`:
   I4, I7, I9, ...) and I15 (the recorded invoke/return history against
   `spec.step`).

Operation postconditions are checked by the operation wrappers: I3 (an add
that returns while a ``clear_cache`` of its id that was already running when
it was called is still running: sound under any concurrency; the strong form
"registered with a live model" only for ops marked ``exclusive``), I5, I6,
I10, I12 (before/after snapshots, ``exclusive`` ops only), I16 (the first
scripted failure of the op's own thread is the one raised), and I8 (a stack
raising AttributeError/TypeError from a public call broke composition).
Every violation is reported through a per-execution invariant named after
its id, so a failure's kind is always ``"invariant"`` for a broken invariant.

Timeouts are scheduling choices in lockstep (any blocked timed wait may time
out), so every scenario uses small timeouts and treats `LockTimeout` as a
legitimate outcome.  I15 is checked on the history plus a final observation
of ``keys`` and ``lru`` at quiescence, in every execution, including those
with a `LockTimeout`, a failed scripted load or an eviction made while
another add's load was in flight: `spec.expand_adds` rewrites each add (and
acquire) as two operations over its interval, its admission (victims
evicted, capacity slot reserved; indeterminate when the add timed out) and
its completion (registered, or the slot released), because chosen semantics
3 makes a cold add take effect at those two instants.  What remains
unjudged is counted, never passed silently: `i15_skips()` maps a reason (a
scenario marked ``linearizable=False``; a search out of budget) to the
number of executions it skipped.

Thread-safety: a scenario value is immutable; the callable `build` returns
creates all its state per execution and is meant for one lockstep run at a
time.
"""

from __future__ import annotations

import _thread
import contextlib
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import attrs

import lockstep
from lockstep.linearizability import HistoryRecorder, check_linearizability
from lockstep.lowlevel import current_step, held_by_current_thread
from models_spec.adapter import ManagerAdapter, Snapshot
from models_spec.fakes import (
    Script,
    ScriptedLoadError,
    ScriptedRegistry,
    ScriptedUnloadError,
    TornDownModelError,
)
from models_spec.invariants import (
    InvariantSkipped,
    InvariantViolation,
    check_all,
    check_i1,
    check_i2,
    check_i3,
    check_i4,
    check_i5,
    check_i6,
    check_i10,
    check_i11,
    check_i12,
    check_i13,
    check_i14,
    check_i16,
)
from models_spec.spec import encode_outcome, expand_adds, initial_state, step

__all__ = [
    "NAMED",
    "OP_KINDS",
    "SCENARIOS",
    "Op",
    "Scenario",
    "ScenarioError",
    "Setup",
    "World",
    "get_scenario",
    "i15_skips",
    "random_scenario",
    "random_scenarios",
]

OP_KINDS: Final = frozenset(
    {"add", "remove", "refresh", "lease", "acquire", "getitem", "pin", "unpin", "describe"}
)
_OP_NEEDS: Final[Mapping[str, frozenset[str]]] = {
    "refresh": frozenset({"refresh"}),
    "lease": frozenset({"leases"}),
    "acquire": frozenset({"leases"}),
    "pin": frozenset({"pins"}),
    "unpin": frozenset({"pins"}),
}


class ScenarioError(ValueError):
    """A scenario was declared or looked up wrongly (the message names the value)."""


@attrs.frozen
class Op:
    """One public operation a scenario thread performs.

    `kind` is one of `OP_KINDS`; `model_id` the id (the canonical id for adds,
    the resolved id otherwise); `alias` and `pin` for adds; `exclusive`: no
    other thread touches the stack while this op runs, so before/after
    postconditions (I3 strong form, I5, I6, I10, I12) are checked.
    """

    kind: str
    model_id: str = ""
    alias: str | None = None
    pin: bool = False
    exclusive: bool = False

    def __attrs_post_init__(self) -> None:
        if self.kind not in OP_KINDS:
            raise ScenarioError(f"op kind must be one of {sorted(OP_KINDS)} (got {self.kind!r})")
        if self.kind != "describe" and (not isinstance(self.model_id, str) or not self.model_id):
            raise ScenarioError(f"op {self.kind!r} needs a non-empty model_id")

    @property
    def resolved_id(self) -> str:
        """The key the op acts on."""
        return self.alias if self.alias is not None else self.model_id

    def __str__(self) -> str:
        alias = f" as {self.alias}" if self.alias else ""
        pin = " pinned" if self.pin else ""
        return f"{self.kind}({self.model_id}{alias}{pin})" if self.model_id else self.kind


def _failure_table(
    value: Mapping[str, Sequence[int]] | Sequence[tuple[str, Sequence[int]]],
) -> tuple[tuple[str, tuple[int, ...]], ...]:
    items = value.items() if isinstance(value, Mapping) else value
    return tuple(sorted((rid, tuple(attempts)) for rid, attempts in items))


@attrs.frozen
class Setup:
    """Fixed configuration of one scenario's stack and script.

    Small timeouts on purpose: lockstep offers every timed wait's timeout as
    a scheduling choice, whatever its length.
    """

    max_size: int = 2
    lock_timeout: float = 0.5
    queue_lock_timeout: float = 0.5
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

    @property
    def all_needs(self) -> frozenset[str]:
        """Declared needs plus what the ops need."""
        needs = set(self.needs)
        for _, ops in self.threads:
            for op in ops:
                needs |= _OP_NEEDS.get(op.kind, frozenset())
        if self.setup.pins:
            needs.add("pins")
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
        return run

    def describe(self) -> str:
        """One line per thread: name: op, op, ..."""
        lines = [f"{self.id}: {self.title}"]
        for name, ops in self.threads:
            lines.append(f"  {name}: " + ", ".join(map(str, ops)))
        return "\n".join(lines)


# --------------------------------------------------------------------- the world

_I15_SKIPS: dict[str, int] = {}
_I15_SKIPS_LOCK: Final = _thread.allocate_lock()  # never patched by lockstep


def _note_i15_skip(reason: str) -> None:
    with _I15_SKIPS_LOCK:
        _I15_SKIPS[reason] = _I15_SKIPS.get(reason, 0) + 1


def i15_skips() -> dict[str, int]:
    """Executions (in this process so far) where I15 was not judged, by reason.

    A copy; thread-safe.  Compare two readings to count one exploration's skips.
    """
    with _I15_SKIPS_LOCK:
        return dict(_I15_SKIPS)


_UNBOUNDED: Final = 1_000_000

_EXPECTED_ERRORS: Final = (
    ScriptedLoadError,
    ScriptedUnloadError,
    TimeoutError,
    LookupError,
    ExceptionGroup,
)


def _expected(error: BaseException) -> bool:
    if isinstance(error, _EXPECTED_ERRORS):
        return True
    # Upstream's name for a lock wait failure (a user's implementation may raise it).
    return any(cls.__name__ == "ModelManagerLockAcquisitionError" for cls in type(error).__mro__)


def _named_check(name: str, fn: Callable[[], None]) -> Callable[[], None]:
    fn.__name__ = fn.__qualname__ = name
    return fn


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
        self.caps = frozenset(adapter.capabilities)
        setup = scenario.setup
        self.script = setup.script()
        self.registry = ScriptedRegistry(self.script)
        self.ghost = self.registry.ghost
        self.stack = adapter.build(
            self.registry,
            max_size=setup.max_size,
            lock_timeout=setup.lock_timeout,
            queue_lock_timeout=setup.queue_lock_timeout,
        )
        self.recorder = HistoryRecorder()
        self.timeouts = 0
        self.lin_result: Any = None
        self._reported: set[str] = set()
        self._cached: tuple[int, Snapshot] | None = None
        if scenario.observe_lru_lock:
            lock = _find_lru_lock(self.stack)
            if lock is not None:
                self.ghost.lock_probe = lambda: _held_by_current(lock)

    # -- invariants ---------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """The adapter's snapshot of the stack (never switches threads)."""
        return self.adapter.snapshot(self.stack)

    def _step_snapshot(self) -> Snapshot:
        # The per-step checks run one after another at one switch point (the
        # world is stopped): one snapshot serves them all.
        current = current_step()
        step = -1 if current is None else current
        cached = self._cached
        if cached is not None and cached[0] == step and step >= 0:
            return cached[1]
        snap = self.snapshot()
        self._cached = (step, snap)
        return snap

    def _state_checks(self) -> list[Callable[[], None]]:
        caps, ghost = self.caps, self.ghost
        checks: list[tuple[str, Callable[[], None]]] = [
            ("I2", lambda: check_i2(None, ghost)),
            (
                "I13",
                lambda: check_i13(self._step_snapshot() if "leases" in caps else None, ghost),
            ),
        ]
        if "lifecycle" in caps:
            checks.append(("I1", lambda: check_i1(self._step_snapshot(), ghost)))
        if "lru" in caps:
            checks.append(("I4", lambda: check_i4(self._step_snapshot(), ghost, quiescent=False)))
        if "capacity" in caps:
            checks.append(("I11", lambda: check_i11(self._step_snapshot(), ghost)))
        if ghost.lock_probe is not None:
            checks.append(("I14", lambda: check_i14(None, ghost)))
        return [_named_check(name, _skipping(fn)) for name, fn in checks]

    def violate(self, violation: InvariantViolation) -> None:
        """Report `violation` as a failure of the invariant it names (at the next step)."""
        name = violation.invariant
        if name in self._reported:
            return
        self._reported.add(name)

        def raiser() -> None:
            raise violation

        lockstep.add_invariant(_named_check(name, raiser))
        lockstep.checkpoint(f"{name} violated")

    def _guard(self, fn: Callable[[], None]) -> None:
        try:
            fn()
        except InvariantSkipped:
            pass
        except InvariantViolation as violation:
            self.violate(violation)

    # -- the run ------------------------------------------------------------------

    def run(self) -> None:
        """Preload, register invariants, run the threads, check quiescence and I15."""
        for check in self._state_checks():
            lockstep.add_invariant(check)
        setup = self.scenario.setup
        for model_id in setup.preload:
            self.perform(Op("add", model_id, pin=model_id in setup.pins), "main")
        for model_id in setup.pins:
            if model_id not in setup.preload:
                self.perform(Op("pin", model_id), "main")
        threads = [
            lockstep.spawn(self._thread_body, name, ops, name=name)
            for name, ops in self.scenario.threads
        ]
        for thread in threads:
            thread.join()
        self.quiescence()

    def _thread_body(self, name: str, ops: tuple[Op, ...]) -> None:
        for op in ops:
            self.perform(op, name)

    def quiescence(self) -> None:
        """Every state invariant at quiescence, then I15 when the history allows it."""
        report = check_all(self.snapshot(), self.ghost, quiescent=True, capabilities=self.caps)
        if report.violated:
            self.violate(report.violated[0])
            return
        if not self.scenario.linearizable:
            _note_i15_skip("the scenario runs operations the spec does not model")
            return
        self._observe_final_state()
        # Without the capacity capability nothing is ever evicted: judge the
        # history against an unbounded cache.
        bound = self.scenario.setup.max_size if "capacity" in self.caps else _UNBOUNDED
        initial = initial_state(max_size=bound, script=self.script)
        self._check_linearizable(initial)

    def _check_linearizable(self, initial: Any) -> None:
        """I15 on the recorded history; a violation carries the history and the verdict
        (``history`` and ``lin_result`` attributes) for the HTML report."""
        # A cold add takes effect at two instants (chosen semantics 3): its
        # admission (victims evicted, slot reserved) and its completion.
        history = expand_adds(self.recorder.history())
        result = check_linearizability(history, step, initial=initial, max_steps=200_000)
        self.lin_result = result
        if result.verdict == "unknown":
            _note_i15_skip("the linearizability search ran out of its step budget")
        if result.verdict == "illegal":
            violation = InvariantViolation(
                "I15", "history is not linearizable under models_spec.spec", explanation=str(result)
            )
            violation.history = history  # type: ignore[attr-defined]
            violation.lin_result = result  # type: ignore[attr-defined]
            self.violate(violation)

    def _observe_final_state(self) -> None:
        """Record what the stack holds at quiescence, so I15 also judges the end state."""
        keys = self.recorder.invoke("main", ("keys",))
        self.recorder.respond(keys, ("ok", tuple(sorted(self.stack.keys()))))
        if "lru" in self.caps:
            lru = self.recorder.invoke("main", ("lru",))
            self.recorder.respond(lru, ("ok", tuple(self.stack.lru_order())))

    # -- operations -----------------------------------------------------------------

    def perform(self, op: Op, process: str) -> None:
        """Run `op` through the stack, record it, check its postconditions."""
        rid = op.resolved_id
        mark = self.ghost.mark()
        ident = _thread.get_ident()
        before = self.snapshot() if op.exclusive else None
        clears_at_invoke = self._running_clears(rid) if op.kind in ("add", "acquire") else set()
        error: Exception | None = None
        try:
            self._call(op, process)
        except Exception as exc:  # classified below: expected outcomes vs broken stacks
            if isinstance(exc, InvariantViolation):
                self.violate(exc)
                return
            if isinstance(exc, AttributeError | TypeError):
                self.violate(
                    InvariantViolation(
                        "I8",
                        f"{op} raised {type(exc).__name__}: a layer of the stack does not "
                        f"compose ({exc})",
                    )
                )
                return
            if not _expected(exc):
                raise
            error, _value = exc, None
        if isinstance(error, TimeoutError) or (
            error is not None and type(error).__name__ == "ModelManagerLockAcquisitionError"
        ):
            self.timeouts += 1
        self._postconditions(op, error, mark, ident, before, clears_at_invoke)

    def _call(self, op: Op, process: str) -> Any:
        stack, recorder = self.stack, self.recorder
        kind, mid = op.kind, op.model_id
        if kind == "describe":
            stack.describe_models()
            return None
        if kind in ("lease", "acquire"):
            return self._lease(op, process)
        inputs: dict[str, tuple[Any, ...]] = {
            "add": ("add", mid, op.alias, op.pin),
            "remove": ("remove", mid),
            "refresh": ("refresh", mid),
            "getitem": ("getitem", mid),
            "pin": ("pin", mid),
            "unpin": ("unpin", mid),
        }
        pending = recorder.invoke(process, inputs[kind])
        value: Any = None
        try:
            if kind == "add":
                if op.pin:
                    stack.add_model(mid, None, op.alias, pin=True)
                else:
                    stack.add_model(mid, None, op.alias)
            elif kind == "remove":
                stack.remove(mid)
            elif kind == "refresh":
                stack.refresh(mid)
            elif kind == "getitem":
                value = getattr(stack[mid], "token", None)
            elif kind == "pin":
                stack.pin_model(mid)
            else:
                stack.unpin_model(mid)
        except Exception as exc:
            if _expected(exc):
                recorder.respond(pending, encode_outcome(error=exc))
            raise
        recorder.respond(pending, encode_outcome(value))
        return value

    def _lease(self, op: Op, process: str) -> Any:
        stack, recorder, rid = self.stack, self.recorder, op.resolved_id
        if op.kind == "lease":
            pending = recorder.invoke(process, ("lease", rid))
            manager = stack.lease(rid)
        else:
            pending = recorder.invoke(process, ("acquire", op.model_id, op.alias))
            manager = stack.acquire(op.model_id, None, op.alias)
        try:
            model = manager.__enter__()
        except Exception as exc:
            if _expected(exc):
                recorder.respond(pending, encode_outcome(error=exc))
            raise
        token = getattr(model, "token", None)
        recorder.respond(pending, encode_outcome(token))
        try:
            with self.ghost.use(model):
                lockstep.checkpoint(f"infer:{rid}", resource=rid)
                try:
                    model.infer()
                except TornDownModelError as exc:
                    self.violate(InvariantViolation("I13", f"inference on a leased model: {exc}"))
        finally:
            release = recorder.invoke(process, ("release", rid))
            manager.__exit__(None, None, None)
            recorder.respond(release, ("ok", None))
        return token

    def _running_clears(self, rid: str) -> set[int]:
        """Attempt numbers of `clear_cache` calls on `rid` running right now."""
        running: set[int] = set()
        for event in list(self.ghost.events):
            if event.resolved_id != rid:
                continue
            if event.kind == "clear_start":
                running.add(event.attempt)
            elif event.kind in ("clear_end", "clear_fail"):
                running.discard(event.attempt)
        return running

    def _postconditions(  # noqa: PLR0917 - private, called from one place
        self,
        op: Op,
        error: Exception | None,
        mark: int,
        ident: int,
        before: Snapshot | None,
        clears_at_invoke: set[int],
    ) -> None:
        rid = op.resolved_id
        if op.kind in ("add", "acquire", "remove"):
            target = rid if op.kind == "remove" else None
            self._guard(
                lambda: check_i16(error, self.ghost, since=mark, thread=ident, target=target)
            )
        if op.kind in ("add", "acquire") and error is None:
            stale = clears_at_invoke & self._running_clears(rid)
            if stale:
                self.violate(
                    InvariantViolation(
                        "I3",
                        f"{op} returned while the clear_cache of {rid!r} that was running "
                        "when it was called still runs",
                        attempts=sorted(stale),
                    )
                )
                return
        if before is None:
            return
        after = self.snapshot()
        if op.kind == "add":
            if error is None:
                self._guard(lambda: check_i3(after, self.ghost, resolved_id=rid))
            elif isinstance(error, ScriptedUnloadError) and "lru" in self.caps:
                evicted = set(before.registered) - set(after.registered)
                self._guard(
                    lambda: check_i6(
                        before, after, evicted=evicted, failed_candidate=error.resolved_id
                    )
                )
            else:
                self._guard(lambda: check_i10(before, after, self.ghost, resolved_id=rid))
        elif op.kind == "remove" and error is not None:
            self._guard(lambda: check_i5(before, after, resolved_id=rid))
        if "pins" in self.caps:
            removed = [rid] if op.kind == "remove" else []
            self._guard(lambda: check_i12(before, after, removed=removed))


def _held_by_current(lock: Any) -> bool | None:
    return held_by_current_thread(lock)


def _skipping(fn: Callable[[], None]) -> Callable[[], None]:
    def checked() -> None:
        with contextlib.suppress(InvariantSkipped):
            fn()

    return checked


# ------------------------------------------------------------ named scenarios


def _add(model_id: str, **kw: Any) -> Op:
    return Op("add", model_id, **kw)


def _remove(model_id: str, **kw: Any) -> Op:
    return Op("remove", model_id, **kw)


_NAMED: Final[tuple[Scenario, ...]] = (
    Scenario(
        "B1-remove-add-generation-split",
        ("B1",),
        "R removes (then re-adds) X while W and N add it: one generation, one constructor",
        [("R", [_remove("X"), _add("X")]), ("W", [_add("X")]), ("N", [_add("X")])],
        Setup(preload=("X",)),
    ),
    Scenario(
        "B2-constructor-failure-split",
        ("B2",),
        "H's constructor of X fails (H retries) while W and N add X: no second generation",
        [("H", [_add("X"), _add("X")]), ("W", [_add("X")]), ("N", [_add("X")])],
        Setup(load_failures={"X": (1,)}),
    ),
    Scenario(
        "B3-dispose-after-release",
        ("B3",),
        "R removes (then re-adds) X, W and N add it: retiring after release still splits",
        [("R", [_remove("X"), _add("X")]), ("W", [_add("X")]), ("N", [_add("X")])],
        Setup(preload=("X",), lock_timeout=5.0),
    ),
    Scenario(
        "B4-warm-fast-path-bypass",
        ("B4",),
        "A adds X while R is inside X's clear_cache: no success answered from a dying model",
        [("R", [_remove("X")]), ("A", [_add("X")])],
        Setup(preload=("X", "Y")),
        needs=frozenset({"lru"}),
    ),
    Scenario(
        "B5-failed-remove-desyncs-lru",
        ("B5",),
        "remove(X) fails in clear_cache: X stays loaded and in the LRU",
        [("R", [_remove("X", exclusive=True)])],
        Setup(max_size=3, preload=("A", "X", "B"), unload_failures={"X": (1,)}),
        needs=frozenset({"lru"}),
    ),
    Scenario(
        "B6-failed-remove-moves-x",
        ("B6",),
        "a failed remove of X keeps [A, X, B] exactly",
        [("R", [_remove("X", exclusive=True)]), ("S", [Op("getitem", "B")])],
        Setup(max_size=3, preload=("A", "X", "B"), unload_failures={"X": (1,)}),
        needs=frozenset({"lru"}),
    ),
    Scenario(
        "B7-duplicate-lru-entries",
        ("B7",),
        "two cold adds of X: the LRU never holds X twice",
        [("T1", [_add("X")]), ("T2", [_add("X")])],
        Setup(max_size=3),
        needs=frozenset({"lru"}),
    ),
    Scenario(
        "B8-failure-erases-concurrent-success",
        ("B8",),
        "T1's load of X fails while T2's succeeds: X stays in the LRU",
        [("T1", [_add("X")]), ("T2", [_add("X")])],
        Setup(max_size=3, load_failures={"X": (1,)}),
        needs=frozenset({"lru"}),
    ),
    Scenario(
        "B9-failed-multi-eviction",
        ("B9",),
        "LRU [P(pinned), A, B] full; evicting A fails: P and A keep their positions",
        [("T", [_add("C", exclusive=True)])],
        Setup(max_size=3, preload=("P", "A", "B"), pins=("P",), unload_failures={"A": (1,)}),
        needs=frozenset({"lru", "pins", "capacity"}),
    ),
    Scenario(
        "B10-alias-is-the-key",
        ("B10",),
        "C loaded; add_model(C, alias=A) loads an entry under A",
        [("T", [_add("C", alias="A", exclusive=True), Op("getitem", "A")])],
        Setup(max_size=3, preload=("C",)),
        needs=frozenset({"aliases"}),
    ),
    Scenario(
        "B11-nested-decorators",
        ("B11",),
        "every public call works through nested decorators",
        [("T", [_add("X"), Op("describe"), Op("lease", "X"), _remove("X")])],
        Setup(max_size=2),
        linearizable=False,
    ),
    Scenario(
        "B12-lock-table-leak",
        ("B12",),
        "remove of a never-loaded id leaves no lifecycle entry",
        [("R", [_remove("Y")]), ("A", [_add("X")])],
        Setup(max_size=2),
        needs=frozenset({"lifecycle"}),
    ),
    Scenario(
        "B13-phantom-from-refresh",
        ("B13",),
        "inference refresh of an unloaded id adds no LRU entry",
        [("I", [Op("refresh", "Z")]), ("A", [_add("X")])],
        Setup(max_size=2),
        needs=frozenset({"lru", "refresh"}),
    ),
    Scenario(
        "B14-admission-overshoot",
        ("B14",),
        "two concurrent cold adds into a cache with one free slot never exceed max_size",
        [("T1", [_add("Y")]), ("T2", [_add("Z")])],
        Setup(max_size=2, preload=("X",)),
        needs=frozenset({"capacity"}),
    ),
    Scenario(
        "B15-queue-lock-across-unload",
        ("B15",),
        "eviction never holds the LRU lock across clear_cache (inference refresh stays free)",
        [("T", [_add("Y")]), ("I", [Op("refresh", "X")])],
        Setup(max_size=1, preload=("X",)),
        needs=frozenset({"lru", "refresh", "capacity"}),
        observe_lru_lock=True,
    ),
    Scenario(
        "B16-error-masking",
        ("B16",),
        "a failed load raises the loader's error and a successful remove reports success",
        [("L", [_add("X")]), ("R", [_remove("Y")]), ("I", [Op("refresh", "Z")])],
        Setup(max_size=3, preload=("Y", "Z"), load_failures={"X": (1,)}),
        needs=frozenset({"lru", "refresh"}),
    ),
    Scenario(
        "B17-unload-under-running-model",
        ("B17",),
        "remove(X) never runs clear_cache while an inference holds a lease on X",
        [("U", [Op("lease", "X")]), ("R", [_remove("X")])],
        Setup(max_size=2, preload=("X",)),
        needs=frozenset({"leases"}),
    ),
)

NAMED: Final[Mapping[str, Scenario]] = {s.id: s for s in _NAMED}
"""The named scenarios by id (one per bug B1-B17, in bug order)."""

_IDS: Final = ("a", "b", "c")
_RANDOM_KINDS: Final = ("add", "add", "remove", "refresh", "lease", "getitem")


def random_scenario(seed: int, *, threads: int = 3, ops: int = 2) -> Scenario:
    """A seeded random scenario: `threads` threads of `ops` ops over ids a, b, c.

    A pure function of its arguments.  Load and unload failures come from a
    seeded `Script` (p = 0.15 each).  Raises `ScenarioError` for bad sizes.
    """
    for name, value in (("threads", threads), ("ops", ops)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 6:
            raise ScenarioError(f"{name} must be an int in 1..6 (got {value!r})")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ScenarioError(f"seed must be an int (got {seed!r})")
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


def random_scenarios(count: int = 3, *, first_seed: int = 1) -> tuple[Scenario, ...]:
    """`count` random scenarios with consecutive seeds from `first_seed`."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ScenarioError(f"count must be an int >= 0 (got {count!r})")
    return tuple(random_scenario(first_seed + k) for k in range(count))


SCENARIOS: Final[Mapping[str, Scenario]] = {
    **NAMED,
    **{s.id: s for s in random_scenarios()},
}
"""Every scenario the suite runs by default: the named ones, then three random ones."""


def get_scenario(scenario_id: str) -> Scenario:
    """The scenario called `scenario_id` (named, or ``random-<seed>``).

    Raises `ScenarioError` naming the known ids.
    """
    if scenario_id in SCENARIOS:
        return SCENARIOS[scenario_id]
    if isinstance(scenario_id, str) and scenario_id.startswith("random-"):
        try:
            return random_scenario(int(scenario_id.removeprefix("random-")))
        except ValueError:
            pass
    raise ScenarioError(
        f"unknown scenario {scenario_id!r}; known: {', '.join(SCENARIOS)} or random-<seed>"
    )

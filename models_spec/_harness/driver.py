"""The operation driver: one operation model, one way to run, record and check an operation.

Both concurrent harnesses drive stacks through this module: the named and
random scenarios (`models_spec.scenarios.World`) and the concurrent
Hypothesis machine (`stateful_tests.concurrent_machine`).  So there is one
operation value (`Op`), one history recorder (a `Driver` records every
public call as an invoke/return pair in `spec.py`'s encoding), one I3 check
(`invariants.check_i3_returned`) and one set of per-step and quiescent
checks.

A `Driver` belongs to one lockstep execution of one stack:

* `perform(op, process)` runs `op` on the calling (lockstep) thread, records
  it and checks its postconditions: I3 when an add or acquire returns
  normally; I16 (the first scripted failure of the op's own thread is the
  one raised); for ops marked ``exclusive`` (no other thread touches the
  stack meanwhile) the before/after checks I3 (strong form), I5, I6, I10,
  I12; I8 when a public call raises AttributeError or TypeError (a layer
  does not compose); I13 when a lease hands out a model being torn down
  or inference on a leased model finds it torn down.
* `state_checks()` are the invariants that hold at every switch point where
  another thread could run next (lockstep's ``add_invariant`` contract), one
  callable per invariant named after its id, for ``lockstep.add_invariant``:
  I1, I2, I4 (no duplicates), I7, I11 (over-capacity admissions counted by
  the stack are slack), I13, I14 when a lock probe is set, I17 (no wait
  needs its timeout: lockstep's thread states) and I18 (no lease outlives
  its ``with`` block: the driver counts the open ones).
* `quiescence(linearizable=...)` checks the quiescent invariants (I4
  bijection, I7, I9, ...), I19 (the statistics against the ghost's events)
  and I15: the recorded history, plus a final observation of ``keys`` and
  ``lru``, against `spec.step`, with each add split into admission and
  completion (`spec.expand_adds`).

Every violation is reported with `violate`: a per-execution lockstep
invariant named after the invariant id that raises it at the next switch
point, so a lockstep `Failure` has kind "invariant" and `invariant` = the
id, whichever harness ran it.  Executions in which I15 could not be judged
are counted (`i15_skips`), never passed silently.
"""

from __future__ import annotations

import _thread
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

import attrs

import lockstep
from lockstep.linearizability import (
    UNKNOWN,
    CheckResult,
    HistoryRecorder,
    Operation,
    check_linearizability,
)
from lockstep.lowlevel import current_step, thread_states
from models_spec._harness.wording import linearizability_message
from models_spec.adapter import ManagerAdapter, Snapshot
from models_spec.fakes import (
    Ghost,
    Script,
    ScriptedLoadError,
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
    check_i3_returned,
    check_i4,
    check_i5,
    check_i6,
    check_i7,
    check_i10,
    check_i11,
    check_i12,
    check_i13,
    check_i14,
    check_i16,
    check_i17,
    check_i18,
    check_i19,
    documented_overflows,
    live,
)
from models_spec.spec import (
    SpecState,
    encode_outcome,
    expand_adds,
    explain,
    initial_state,
    resolve,
    step,
)

# Test harness: the driver use real locks on purpose (never switch points), so a race
# report near them must not take them for the code's own synchronisation
# (lockstep._memory._uncontrolled).
__lockstep_harness__ = True
# Its frames are left out of the tracebacks lockstep and pytest show (a failure is
# explained in the code under test's terms, lockstep._failure.format_exception).
__tracebackhide__ = True

__all__ = [
    "OP_KINDS",
    "OP_NEEDS",
    "UNBOUNDED",
    "Driver",
    "LeaseBodyError",
    "Op",
    "ScenarioError",
    "i15_skips",
]

OP_KINDS: Final = frozenset(
    {
        "add",
        "remove",
        "clear",
        "refresh",
        "lease",
        "acquire",
        "getitem",
        "pin",
        "unpin",
        "describe",
        "keys",
        "contains",
        "len",
        "lru",
    }
)
_NO_ID: Final = frozenset({"clear", "describe", "keys", "len", "lru"})
"""Op kinds that take no model id (whole-stack observations)."""
OP_NEEDS: Final[Mapping[str, frozenset[str]]] = {
    "refresh": frozenset({"refresh"}),
    "lru": frozenset({"lru"}),
    "lease": frozenset({"leases"}),
    "acquire": frozenset({"leases"}),
    "pin": frozenset({"pins"}),
    "unpin": frozenset({"pins"}),
}
"""The capability each op kind needs (kinds not listed need none)."""

UNBOUNDED: Final = 1_000_000
"""The spec's `max_size` for stacks without the "capacity" capability (never reached)."""


class ScenarioError(ValueError):
    """A scenario or an op was declared or looked up wrongly (the message names the value)."""


class LeaseBodyError(RuntimeError):
    """Raised inside a lease or acquire body by an op with ``body_raises=True``."""


def _op_tuple(ops: Iterable[Op]) -> tuple[Op, ...]:
    # A typed converter (attrs' plugin cannot type the bare ``tuple``).
    return tuple(ops)


@attrs.frozen
class Op:
    """One public operation a thread performs.

    `kind` is one of `OP_KINDS`; `model_id` the id (the canonical id for adds
    and acquires, the resolved id otherwise); `alias` and `pin` for adds
    (`alias` also for acquires); `exclusive`: no other thread touches the
    stack while this op runs, so before/after postconditions (I3 strong
    form, I5, I6, I10, I12) are checked; `body_raises` (lease and acquire):
    the body inside the ``with`` raises `LeaseBodyError` after using the model;
    `uses` (lease and acquire): inferences the body runs, each a switch point,
    so the lease is held across that many steps of other threads; `inside`
    (lease and acquire): ops the same thread performs inside the ``with``
    block, after the inferences, while holding the lease (a pipeline that
    leases one model, then another).
    """

    kind: str
    model_id: str = ""
    alias: str | None = None
    pin: bool = False
    exclusive: bool = False
    body_raises: bool = False
    uses: int = 1
    inside: tuple[Op, ...] = attrs.field(default=(), converter=_op_tuple)

    def __attrs_post_init__(self) -> None:
        if self.kind not in OP_KINDS:
            raise ScenarioError(f"op kind must be one of {sorted(OP_KINDS)} (got {self.kind!r})")
        if self.kind in _NO_ID:
            if self.model_id:
                raise ScenarioError(f"op {self.kind!r} takes no model_id (got {self.model_id!r})")
        elif not isinstance(self.model_id, str) or not self.model_id:
            raise ScenarioError(f"op {self.kind!r} needs a non-empty model_id")
        if self.body_raises and self.kind not in ("lease", "acquire"):
            raise ScenarioError(f"body_raises is for lease and acquire ops (got {self.kind!r})")
        if self.alias is not None and self.kind not in ("add", "acquire"):
            raise ScenarioError(f"alias is for add and acquire ops (got {self.kind!r})")
        if self.pin and self.kind != "add":
            raise ScenarioError(f"pin=True is for add ops (got {self.kind!r})")
        if isinstance(self.uses, bool) or not isinstance(self.uses, int) or self.uses < 1:
            raise ScenarioError(f"uses must be an int >= 1 (got {self.uses!r})")
        if self.uses != 1 and self.kind not in ("lease", "acquire"):
            raise ScenarioError(f"uses is for lease and acquire ops (got {self.kind!r})")
        if self.inside and (
            self.kind not in ("lease", "acquire") or not all(isinstance(o, Op) for o in self.inside)
        ):
            raise ScenarioError(f"inside is a tuple of Op for lease and acquire ops ({self})")

    @property
    def resolved_id(self) -> str:
        """The key the op acts on."""
        return resolve(self.model_id, self.alias)

    @property
    def needs(self) -> frozenset[str]:
        """The capabilities this op (and the ops inside it) needs."""
        needs = set(OP_NEEDS.get(self.kind, frozenset()))
        if self.alias is not None:
            needs.add("aliases")
        for op in self.inside:
            needs |= op.needs
        return frozenset(needs)

    @property
    def call(self) -> str:
        """The call as the manager sees it: ``add_model('X')``, ``remove('X')``,
        ``with lease('X'): infer() x2`` (what failure messages and scenario stories show)."""
        mid = repr(self.model_id)
        if self.kind == "add":
            args = mid if self.alias is None else f"{mid}, None, {self.alias!r}"
            return f"add_model({args}{', pin=True' if self.pin else ''})"
        if self.kind in ("lease", "acquire"):
            args = mid if self.alias is None else f"{mid}, None, {self.alias!r}"
            body = ["infer()" + (f" x{self.uses}" if self.uses != 1 else "")]
            body += [op.call for op in self.inside]
            if self.body_raises:
                body.append("raise")
            return f"with {self.kind}({args}): " + "; ".join(body)
        return {
            "remove": f"remove({mid})",
            "clear": "clear()",
            "refresh": f"refresh({mid})",
            "getitem": f"manager[{mid}]",
            "pin": f"pin_model({mid})",
            "unpin": f"unpin_model({mid})",
            "describe": "describe_models()",
            "keys": "keys()",
            "contains": f"{mid} in manager",
            "len": "len(manager)",
            "lru": "lru_order()",
        }[self.kind]

    def __str__(self) -> str:
        alias = f" as {self.alias}" if self.alias else ""
        pin = " pinned" if self.pin else ""
        raises = " (body raises)" if self.body_raises else ""
        raises += f" x{self.uses}" if self.uses != 1 else ""
        if self.inside:
            raises += " { " + "; ".join(map(str, self.inside)) + " }"
        return f"{self.kind}({self.model_id}{alias}{pin}){raises}" if self.model_id else self.kind


# ----------------------------------------------------------------- I15 skips

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


# ------------------------------------------------------------------- helpers

_EXPECTED_ERRORS: Final = (
    ScriptedLoadError,
    ScriptedUnloadError,
    TimeoutError,
    LookupError,
    ExceptionGroup,
)


_EXPECTED_NAMES: Final = frozenset({"ModelManagerLockAcquisitionError", "CacheFull"})


def _expected(error: BaseException) -> bool:
    """Outcomes the spec models (not a broken stack)."""
    if isinstance(error, _EXPECTED_ERRORS):
        return True
    # Upstream's name for a lock wait failure (a user's implementation may raise it),
    # and a cache's refusal when full of pinned or leased models (on_full="refuse").
    return any(cls.__name__ in _EXPECTED_NAMES for cls in type(error).__mro__)


def _is_timeout(error: BaseException | None) -> bool:
    return isinstance(error, TimeoutError) or (
        error is not None and type(error).__name__ == "ModelManagerLockAcquisitionError"
    )


def _named(name: str, fn: Callable[[], None]) -> Callable[[], None]:
    fn.__name__ = fn.__qualname__ = name
    return fn


def _overflow_slack(stack: Any) -> int:
    """Admissions over capacity the stack counted (``statistics().pinned_overflow``)."""
    stats = getattr(stack, "statistics", None)
    value = getattr(stats(), "pinned_overflow", 0) if callable(stats) else 0
    return int(value) if isinstance(value, int) else 0


def _weighting(adapter: object) -> dict[str, Any]:
    """The spec's weight settings for `adapter` (its ``weighting()``; none if it has none)."""
    weighting = getattr(adapter, "weighting", None)
    return dict(weighting()) if callable(weighting) else {}


def _quiescent_slack(stack: Any) -> int | None:
    """I11's slack at quiescence: none, unless a restoration's unload failed (None
    when none did: then no slack at all).

    The bound comes back when leases and pins end (``restoration_failures``
    counts the restorations a failed unload stopped; the models over the
    bound stay until the next one): only then are the overflows slack.  The
    ``statistics()`` reads take the stack's counter lock, a switch point:
    recorded schedules depend on how many there are.
    """
    stats = getattr(stack, "statistics", None)
    failures = getattr(stats(), "restoration_failures", 0) if callable(stats) else 0
    if isinstance(failures, int) and failures > 0:
        return _overflow_slack(stack)
    return None


def _swallowed_timeouts(statistics: Mapping[str, int], raised: int) -> int:
    """Timeouts the stack counted beyond those its operations raised (``raised``):
    bounded waits that gave up inside an operation that still returned (a
    restoration's, by design). 0 when the stack does not count timeouts."""
    counted = statistics.get("lock_timeouts")
    return counted - raised if isinstance(counted, int) and counted > raised else 0


def _optional_restores(history: Sequence[Any]) -> tuple[Any, ...]:
    """`history` (expanded) with every ``("restore", id)`` point indeterminate: the
    checker may apply its effect at any instant after its call, or leave it out."""
    return tuple(
        attrs.evolve(op, ret=None, output=None)
        if isinstance(op.input, tuple) and op.input[:1] == ("restore",)
        else op
        for op in history
    )


def _same_state(a: Snapshot, b: Snapshot) -> bool:
    """Whether two snapshots hold the same state for the per-step checks: the same
    model *objects* under the same keys (identity, whatever the models' ``__eq__``)
    and equal values everywhere else."""
    if a is b:
        return True
    if (
        a.lru != b.lru
        or a.lifecycle != b.lifecycle
        or a.pins != b.pins
        or a.leases != b.leases
        or a.in_flight_loads != b.in_flight_loads
        or a.max_size != b.max_size
        or a.lru_lock_held != b.lru_lock_held
        or a.weights != b.weights
        or a.max_weight != b.max_weight
    ):
        return False
    ra, rb = a.registered, b.registered
    if len(ra) != len(rb):
        return False
    return all(rb.get(key, _MISSING) is model for key, model in ra.items())


_MISSING: Final = object()


def _judge(history: Sequence[Operation], initial: SpecState) -> CheckResult:
    """I15's verdict on ``history`` from ``initial`` (``check_linearizability`` with the
    spec's step function): remembered, since most executions of a cell record one of
    a few histories and the search is a pure function of its inputs (the history, the
    initial state and its configuration, which the state's equality leaves out)."""
    config = initial.config
    setting = (
        config.script.fingerprint(),
        config.universe,
        config.memory_threshold,
        config.unknown_id_error,
        config.on_full,
        config.max_weight,
        config.weights,
        config.default_weight,
        config.semantics,  # declared semantics judge by other rules: never share a verdict
    )
    key = tuple(history)
    try:
        return _judged(key, initial, setting)
    except TypeError:  # an unhashable value in the history: judge it afresh
        return _judge_now(key, initial, setting)


def _judge_now(
    history: tuple[Operation, ...], initial: SpecState, setting: tuple[object, ...]
) -> CheckResult:
    """``setting`` only keys the memo (``initial.config`` is what the search reads)."""
    return check_linearizability(history, step, initial=initial, max_steps=200_000, explain=explain)


_judged: Final = functools.lru_cache(maxsize=4096)(_judge_now)


_NOT_PURE: Final = object()
"""Returned by a check whose verdict this time also depended on something outside
the snapshot (I11's slack from the stack's statistics): not reusable."""


class _LiveModels:
    """I11 at every step (``each_step``), where the running thread alone can go on too:
    models alive at once are memory in use whoever looks. While the models alive
    (built or being built, not torn down: `Ghost.live`) are within the bound, so is
    what the stack counts (every registered model and every load in flight is one of
    them, in correct code); past it, the snapshot's I11 decides (an eviction's victim
    is alive until its unload ends)."""

    each_step = True  # for lockstep.add_invariant(each_step=...)

    def __init__(self, driver: Driver) -> None:
        self._driver = driver
        self.__name__ = self.__qualname__ = "I11"

    def __call__(self) -> None:
        driver = self._driver
        if driver.ghost.live > driver.bound:
            try:
                driver.check_capacity(driver.step_snapshot())
            except InvariantViolation as violation:
                violation.amend(driver.running_calls())
                raise


class _StateInvariants:
    """The driver's per-step invariants as one lockstep invariant (see `Driver.state_checks`).

    `checks` are (check, memoizable) pairs run in order on one snapshot. A
    memoizable check is a pure function of the snapshot's values and of the
    driver's open lease blocks: when both are the same as at the last step where
    every memoizable check held, it holds again and is not rerun (the snapshot
    itself is still taken at every step). The others (the ghost's records,
    lockstep's thread states, attributes of the registered models) run at every
    step. So a violation is reported at exactly the step, and under exactly the
    invariant id, where checking everything would report it
    (tests/spec/test_state_memo.py).
    """

    def __init__(
        self,
        driver: Driver,
        checks: tuple[tuple[Callable[[Snapshot], object], bool], ...],
    ) -> None:
        self._driver = driver
        self._checks = checks
        self._held: tuple[Snapshot, int] | None = None  # inputs on which the memoizable held
        self.__name__ = self.__qualname__ = "state invariants"

    each_step = False  # for lockstep.add_invariant(each_step=...)

    def __call__(self) -> None:
        driver = self._driver
        snap = driver.step_snapshot()
        held = self._held
        reuse = held is not None and held[1] == driver.lease_version and _same_state(held[0], snap)
        memo_ok = True
        for check, memoizable in self._checks:
            if memoizable and reuse:
                continue
            try:
                outcome = check(snap)
            except InvariantSkipped:
                continue
            except InvariantViolation as violation:
                self._held = None
                self.__name__ = self.__qualname__ = violation.invariant  # what lockstep reports
                violation.amend(driver.running_calls())
                raise
            if outcome is _NOT_PURE:
                memo_ok = False
        if not reuse:
            self._held = (snap, driver.lease_version) if memo_ok else None


class Driver:
    """Runs operations on one stack within one lockstep execution (see the module doc).

    `bound` is the `max_size` the sequential spec uses for I15 (the stack's
    own, or `UNBOUNDED` when the adapter has no "capacity" capability).
    """

    def __init__(
        self,
        adapter: ManagerAdapter,
        stack: Any,
        ghost: Ghost,
        script: Script,
        *,
        bound: int,
    ) -> None:
        self.adapter = adapter
        self.stack = stack
        self.ghost = ghost
        self.script = script
        self.bound = bound
        self.caps = frozenset(adapter.capabilities)
        self.recorder = HistoryRecorder()
        # Lease and acquire blocks between their entry call and their exit's
        # return, per resolved id: no lease may outlive them (I18).
        self.open_leases: dict[str, int] = {}
        # Leases each process holds (entered, not yet given back): an add made
        # while holding one records it (the spec's on_full="wait" proceeds then).
        self._held_by: dict[str, int] = {}
        # The cache's full-cache policy and I11's documented overflows under it:
        # adds made while their thread held a lease ("wait" proceeds then), and
        # adds of a model heavier than the weight bound alone.
        self.on_full: str = getattr(adapter, "on_full", "proceed")
        weighting = _weighting(adapter)
        max_weight = weighting.get("max_weight")
        weights = weighting.get("weights", {})
        default_weight = weighting.get("default_weight", 1)
        self._oversized: Callable[[str], bool] = lambda rid: (
            max_weight is not None and weights.get(rid, default_weight) > max_weight
        )
        self.lease_held_adds = 0
        self.oversized_adds = 0
        self.lease_version = 0  # bumped whenever open_leases changes (I18's memo)
        # Ghost timeline mark when a thread's acquire entered (its I16 range ends there).
        self._entered: dict[int, int] = {}
        self.timeouts = 0
        # The top-level call each thread runs now, and the call whose checks run now
        # (process, op): what violation messages name (running_calls, violate).
        self._running: dict[str, Op] = {}
        self._judging: dict[int, tuple[str, Op]] = {}  # by logical thread ident
        self.lin_result: Any = None
        self._reported: set[str] = set()
        self._cached: tuple[int, Snapshot] | None = None

    # -- reporting ------------------------------------------------------------------

    def violate(self, violation: InvariantViolation) -> None:
        """Report `violation` as a failure of the invariant it names (at the next step),
        its message led by the thread and call it judges when an operation's check
        raised it."""
        name = violation.invariant
        if name in self._reported:
            return
        self._reported.add(name)
        judging = self._judging.get(lockstep.threading.get_ident())
        if judging is not None:
            process, op = judging
            message = violation.message
            if message.startswith("the call "):
                violation.message = f"thread {process}'s {op.call}{message[len('the call') :]}"
            else:
                violation.message = f"thread {process}: {message}"
            violation.amend("")

        def raiser() -> None:
            raise violation

        lockstep.add_invariant(_named(name, raiser))
        lockstep.checkpoint(f"{name} violated")

    def _guard(self, fn: Callable[[], None]) -> None:
        try:
            fn()
        except InvariantSkipped:
            pass
        except InvariantViolation as violation:
            self.violate(violation)

    # -- state invariants -------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """The adapter's snapshot of the stack (never switches threads)."""
        return self.adapter.snapshot(self.stack)

    def step_snapshot(self) -> Snapshot:
        """One snapshot per stopped state, shared by the per-step checks."""
        current = current_step()
        step_number = -1 if current is None else current
        cached = self._cached
        if cached is not None and cached[0] == step_number and step_number >= 0:
            return cached[1]
        snap = self.snapshot()
        self._cached = (step_number, snap)
        return snap

    def state_checks(self) -> list[_StateInvariants | _LiveModels]:
        """The per-step invariants as callables for ``lockstep.add_invariant``,
        each to be registered with ``each_step=check.each_step``.

        The first runs every check on one snapshot (a call per invariant per step
        costs more than the checks) where another thread could run next; with a
        capacity, a second (``each_step``) checks I11 at every step through the
        models alive (`_LiveModels`). When one is violated the callable
        takes that invariant's id as its name, so lockstep's `Failure.invariant`
        is the id ("I4"), as for reported violations.
        """
        caps, ghost = self.caps, self.ghost
        # (check, memoizable): see _StateInvariants. The ghost's records, the lock
        # probe and lockstep's thread states are read afresh at every step.
        checks: list[tuple[Callable[[Snapshot], object], bool]] = [
            (lambda snap: check_i2(None, ghost), False),
            (lambda snap: check_i13(snap if "leases" in caps else None, ghost), False),
            # I7 also reads an attribute of each registered model: not the snapshot alone.
            (lambda snap: check_i7(snap, ghost, quiescent=False), False),
        ]
        if "lifecycle" in caps:
            checks.append((lambda snap: check_i1(snap, ghost), True))
        if "lru" in caps:
            checks.append((lambda snap: check_i4(snap, ghost, quiescent=False), True))
        if "capacity" in caps:
            # An admission over capacity (only pinned or leased models left)
            # stays until the next cold add evicts; once the pin or lease is
            # gone it is no longer protected, so the counted overflows are slack.
            checks.append((self.check_capacity, True))
        if ghost.lock_probe is not None:
            checks.append((lambda snap: check_i14(None, ghost), False))
        if "leases" in caps:
            # Before I17: a lease no block can give back (I18) is the cause of the
            # wait for its drain that I17 would report once the drain waits.
            checks.append((lambda snap: check_i18(snap, self.open_leases), True))
        checks.append((lambda snap: check_i17(thread_states()), False))
        invariants: list[_StateInvariants | _LiveModels] = [_StateInvariants(self, tuple(checks))]
        if "capacity" in caps and self.bound != UNBOUNDED:
            # Models alive at once are memory in use, a cost whether or not another
            # thread could look (the others may be blocked): I11 at every step too.
            # I2 and I14 need no such twin: the ghost records their breaches as
            # they happen, so a later step still reports them.
            invariants.append(_LiveModels(self))
        return invariants

    def check_capacity(self, snap: Snapshot) -> object:
        """I11 on ``snap`` (its state form, under the cache's ``on_full``), with the
        admissions over capacity the stack counted as slack (under "wait" and
        "refuse" only the documented ones, `documented_overflows`); `_NOT_PURE`
        when only that slack made it hold."""
        on_full = self.on_full
        try:
            check_i11(snap, self.ghost, on_full=on_full)
        except InvariantViolation:  # the slack costs a statistics() call: only when needed
            slack = documented_overflows(
                on_full, _overflow_slack(self.stack), self.lease_held_adds, self.oversized_adds
            )
            check_i11(snap, self.ghost, slack=slack, on_full=on_full)
            return _NOT_PURE  # held thanks to the stack's counters, not the snapshot alone
        return None

    def _count_documented(self, resolved_id: str, process: str) -> None:
        """Count an add that may be admitted over the bound as documented (I11)."""
        if self._held_by.get(process, 0):
            self.lease_held_adds += 1
        if self._oversized(resolved_id):
            self.oversized_adds += 1

    # -- operations -------------------------------------------------------------------

    def perform(self, op: Op, process: str) -> None:
        """Run `op` through the stack as `process`, record it, check its postconditions.

        While it runs, the call is what a state invariant's message names as running on
        `process` (`running_calls`), and an operation invariant's message starts with the
        thread and the call it judges."""
        outer = process not in self._running
        if outer:
            self._running[process] = op
        ident = lockstep.threading.get_ident()  # the logical thread's, on every backend
        judging = self._judging.get(ident)
        self._judging[ident] = (process, op)
        try:
            self._perform(op, process, ident)
        finally:
            if judging is None:
                del self._judging[ident]
            else:
                self._judging[ident] = judging
            if outer:
                del self._running[process]

    def running_calls(self) -> str:
        """The calls running at this point, in words (for a state invariant's message)."""
        if not self._running:
            return " (no call was running then)"
        calls = [f"thread {p}'s {op.call}" for p, op in self._running.items()]
        running = calls[0] if len(calls) == 1 else ", ".join(calls[:-1]) + " and " + calls[-1]
        return f" (running then: {running})"

    def _perform(self, op: Op, process: str, ident: int) -> None:
        mark = self.ghost.mark()
        before = self.snapshot() if op.exclusive else None
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
                        f"{op.call} raised {type(exc).__name__} ({exc}): the manager does not "
                        "take this call as the scenarios make it (a missing method, or another "
                        "signature: see docs/contract.md), or one of its layers does not pass "
                        "it on",
                        error=repr(exc),
                        op=str(op),
                    )
                )
                return
            if not _expected(exc) and not isinstance(exc, LeaseBodyError):
                raise
            error = exc
        if _is_timeout(error):
            self.timeouts += 1
        self._postconditions(op, None if isinstance(error, LeaseBodyError) else error, mark, ident)
        if before is not None:
            self._exclusive_postconditions(op, error, before)

    def _call(self, op: Op, process: str) -> Any:
        stack, recorder = self.stack, self.recorder
        kind, mid = op.kind, op.model_id
        if kind == "describe":
            stack.describe_models()
            return None
        if kind in ("lease", "acquire"):
            return self._lease(op, process)
        add: tuple[Any, ...] = ("add", mid, op.alias, op.pin)
        if self._held_by.get(process, 0):
            add = (*add, True)  # the add's thread holds a lease
        if kind == "add":
            self._count_documented(op.resolved_id, process)
        inputs: dict[str, tuple[Any, ...]] = {
            "add": add,
            "remove": ("remove", mid),
            "clear": ("clear",),
            "refresh": ("refresh", mid),
            "getitem": ("getitem", mid),
            "pin": ("pin", mid),
            "unpin": ("unpin", mid),
            "keys": ("keys",),
            "contains": ("contains", mid),
            "len": ("len",),
            "lru": ("lru",),
        }
        live_at_call = live(self.ghost, op.resolved_id)
        since = self.ghost.mark()
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
            elif kind == "clear":
                stack.clear()
            elif kind == "refresh":
                stack.refresh(mid)
            elif kind == "getitem":
                value = getattr(stack[mid], "token", None)
            elif kind == "pin":
                stack.pin_model(mid)
            elif kind == "unpin":
                stack.unpin_model(mid)
            elif kind == "keys":
                value = tuple(sorted(stack.keys()))
            elif kind == "contains":
                value = mid in stack
            elif kind == "len":
                value = len(stack)
            else:
                value = tuple(stack.lru_order())
        except Exception as exc:
            if _expected(exc):
                recorder.respond(pending, encode_outcome(error=exc))
            raise
        recorder.respond(pending, encode_outcome(value))
        if kind == "add":
            check_i3_returned(
                self.ghost, resolved_id=op.resolved_id, live_at_call=live_at_call, since=since
            )
        return value

    def _lease(self, op: Op, process: str) -> Any:
        stack, recorder, ghost, rid = self.stack, self.recorder, self.ghost, op.resolved_id
        live_at_call = live(ghost, rid)
        since = ghost.mark()
        if op.kind == "lease":
            pending = recorder.invoke(process, ("lease", rid))
            manager = stack.lease(rid)
        else:
            acquire: tuple[Any, ...] = ("acquire", op.model_id, op.alias)
            if self._held_by.get(process, 0):
                acquire = (*acquire, True)
            self._count_documented(rid, process)
            pending = recorder.invoke(process, acquire)
            manager = stack.acquire(op.model_id, None, op.alias)
        self._open_lease(rid, +1)
        try:
            model = manager.__enter__()
        except Exception as exc:
            self._open_lease(rid, -1)
            if _expected(exc):
                recorder.respond(pending, encode_outcome(error=exc))
            raise
        self._held_by[process] = self._held_by.get(process, 0) + 1
        token = getattr(model, "token", None)
        recorder.respond(pending, encode_outcome(token))
        self._entered[_thread.get_ident()] = ghost.mark()
        if op.kind == "acquire":
            check_i3_returned(ghost, resolved_id=rid, live_at_call=live_at_call, since=since)
        if getattr(model, "torn_down", False) or ghost.clearing.get(rid, 0):
            raise InvariantViolation(
                "I13",
                f"with {op.kind}({rid!r}) handed out a model of {rid!r} that was being unloaded "
                "(or already was: its clear_cache ran): a lease hands out a live model and "
                "keeps it loaded until the block exits",
                model=repr(model),
            )
        body_error: BaseException | None = None
        release = None
        try:
            with ghost.use(model):
                for _ in range(op.uses):
                    lockstep.checkpoint(f"infer:{rid}", resource=rid)
                    try:
                        model.infer()
                    except TornDownModelError as exc:
                        raise InvariantViolation(
                            "I13",
                            f"inference inside `with {op.kind}({rid!r})` ran on a model "
                            "already unloaded (its clear_cache ran while the lease was held): "
                            "a leased model stays loaded until the block exits",
                            error=str(exc),
                        ) from exc
                for inner in op.inside:
                    self.perform(inner, process)
            if op.body_raises:
                raise LeaseBodyError(f"the body of {op} raised (on purpose)")
        except BaseException as exc:
            body_error = exc
        release = recorder.invoke(process, ("release", rid))
        try:
            if body_error is None:
                manager.__exit__(None, None, None)
            elif manager.__exit__(type(body_error), body_error, body_error.__traceback__):
                body_error = None  # the context manager swallowed it
        except BaseException as exc:
            if exc is not body_error:
                raise
        finally:
            self._open_lease(rid, -1)
            self._held_by[process] -= 1
            recorder.respond(release, ("ok", None))
        if body_error is not None:
            raise body_error
        return token

    def _open_lease(self, resolved_id: str, delta: int) -> None:
        self.lease_version += 1
        count = self.open_leases.get(resolved_id, 0) + delta
        if count:
            self.open_leases[resolved_id] = count
        else:
            self.open_leases.pop(resolved_id, None)

    def _postconditions(self, op: Op, error: Exception | None, mark: int, ident: int) -> None:
        rid = op.resolved_id
        if op.kind in ("add", "acquire", "remove"):
            target = rid if op.kind == "remove" else None
            # An acquire is judged over its entry (the add) only: its body's ops
            # are judged on their own.
            until = self._entered.pop(ident, None) if op.kind == "acquire" else None
            # An add or a removal ends by bringing the cache back within its bound:
            # a failed unload there is swallowed by design (the model stays).
            restored = op.kind in ("add", "acquire", "remove") and "capacity" in self.caps
            self._guard(
                lambda: check_i16(
                    error,
                    self.ghost,
                    since=mark,
                    thread=ident,
                    target=target,
                    until=until,
                    restored=restored,
                )
            )

    def _exclusive_postconditions(self, op: Op, error: Exception | None, before: Snapshot) -> None:
        rid = op.resolved_id
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

    # -- quiescence ---------------------------------------------------------------------

    def quiescence(self, *, linearizable: bool = True) -> None:
        """Every state invariant at quiescence, then I15 unless `linearizable` is False."""
        snapshot = self.snapshot()
        slack = _quiescent_slack(self.stack)
        # A weight restoration evicts as many models as the excess weight needs;
        # one stopped by a failed unload keeps all those it had not evicted yet,
        # which the counters cannot tell: the weight forms are then not judged.
        report = check_all(
            snapshot,
            self.ghost,
            quiescent=True,
            capabilities=self.caps,
            capacity_slack=slack or 0,
            weight_slack=0 if slack is None else len(snapshot.registered),
        )
        if report.violated:
            self.violate(report.violated[0])
            return
        swallowed = 0
        if "statistics" in self.caps:
            statistics = self.adapter.statistics(self.stack)  # type: ignore[attr-defined]
            self._guard(lambda: check_i19(statistics, self.ghost, timeouts=self.timeouts))
            swallowed = _swallowed_timeouts(statistics, self.timeouts)
        if not linearizable:
            _note_i15_skip("the scenario runs operations the spec does not model")
            return
        self._observe_final_state()
        self._check_linearizable(swallowed_timeouts=swallowed)

    def _observe_final_state(self) -> None:
        """Record what the stack holds at quiescence, so I15 also judges the end state."""
        keys = self.recorder.invoke("main", ("keys",))
        self.recorder.respond(keys, ("ok", tuple(sorted(self.stack.keys()))))
        if "lru" in self.caps:
            lru = self.recorder.invoke("main", ("lru",))
            self.recorder.respond(lru, ("ok", tuple(self.stack.lru_order())))

    def _check_linearizable(self, *, swallowed_timeouts: int = 0) -> None:
        """I15 on the recorded history; a violation carries the history and the verdict
        (``history`` and ``lin_result`` attributes) for the HTML report.

        `swallowed_timeouts`: bounded waits that ran out inside operations that
        did not raise (a restoration gives up on a timeout by design, counted,
        never failing its caller). The spec's restore points cannot time out, so
        when the history is illegal and such a timeout happened, it is judged
        again with every restore point optional (it may have had its effect, or
        none); only a history illegal both ways fails, and a pass on the second
        judgement is counted with the I15 skips, never passed silently.
        """
        # A cold add takes effect at two instants (chosen semantics 3): its
        # admission (victims evicted, slot reserved) and its completion.
        history = expand_adds(self.recorder.history())
        initial = initial_state(
            max_size=self.bound,
            script=self.script,
            on_full=getattr(self.adapter, "on_full", "proceed"),
            semantics=getattr(self.adapter, "semantics", ()),
            **_weighting(self.adapter),
        )
        result = _judge(history, initial)
        if result.verdict == "illegal" and swallowed_timeouts > 0:
            relaxed = _judge(_optional_restores(history), initial)
            if relaxed.verdict != "illegal":
                _note_i15_skip(
                    "a restoration gave up on a timeout, which the spec's restore points "
                    "cannot do (judged only with every restore point optional)"
                )
                self.lin_result = relaxed
                return
        self.lin_result = result
        if result.verdict == "unknown":
            _note_i15_skip("the linearizability search ran out of its step budget")
        if result.verdict == "illegal":
            words = linearizability_message(
                result,
                self.recorder.history(),
                initial,
                step,
                lru="lru" in self.caps,
                unknown=UNKNOWN,
            )
            violation = InvariantViolation("I15", words, explanation=str(result))
            violation.history = history  # type: ignore[attr-defined]
            violation.lin_result = result  # type: ignore[attr-defined]
            self.violate(violation)

    def history_lines(self) -> list[str]:
        """The recorded history, one operation per line (for failure reports)."""
        return [
            f"  {op.process}: {op.input!r} -> {op.output!r} [{op.call}, {op.ret}]"
            for op in self.recorder.history()
        ]

"""Linearizability checking: record concurrent histories, check them against a sequential spec.

A history is a set of operations, each with a call time, a return time and an
input/output. It is *linearizable* when every operation can be given a single
instant between its call and its return such that executing the operations
one at a time in that order, on the sequential specification, produces
exactly the recorded outputs.

The search is Wing & Gong's, with the improvements Lowe described and
Porcupine made popular:

* the call and return events sit in one doubly linked list sorted by time;
  linearizing an operation *lifts* its two events out of the list and
  backtracking puts them back, so both are O(1);
* a cache of visited configurations ``(set of linearized operations, spec
  state)`` prunes every subtree already known to fail.  This is why spec
  states must be **hashable** (and compare equal exactly when they behave
  the same).  When a state is not hashable the search still runs, correctly,
  without the cache, and can then take exponential time;
* P-compositionality: an optional ``partition`` function splits a history
  into independent sub-histories (for example one per key of a key-value
  store) that are checked separately; the whole is linearizable exactly when
  every part is.

Operations that never returned (``ret=None``, Jepsen's "info" convention)
may or may not have taken effect, at any instant after their call, and their
output is unknown: the search may linearize them anywhere after their call or
leave them out, and when it linearizes one it hands the spec the sentinel
:data:`UNKNOWN` as the output, which the spec must accept as "any output".

The problem is NP-complete, so the checker takes a budget (``max_steps`` spec
evaluations, deterministic, and/or ``max_seconds`` of wall time) and answers
``"unknown"`` instead of running for ever.

When the verdict is ``"illegal"`` the result carries the *shortest
non-linearizable prefix*: the history cut at the earliest event after which
no linearization exists.  Operations still running at the cut are treated as
not returned (ret ``None``, output unknown); with that convention
non-linearizability is monotone in the cut, so the earliest one is found by
bisection, and its last event is always the return of an operation, the
*culprit*.  It also carries the longest linearization the search found for
that prefix and a plain-language explanation.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Final, Literal, Protocol, TypeAlias, runtime_checkable

import attrs

__all__ = [
    "UNKNOWN",
    "CheckResult",
    "HistoryRecorder",
    "Operation",
    "PendingOperation",
    "SequentialSpec",
    "StepFunction",
    "Verdict",
    "check_linearizability",
    "partition_by",
]

Verdict: TypeAlias = Literal["ok", "illegal", "unknown"]
StepFunction: TypeAlias = Callable[[Any, Any, Any], "tuple[bool, Any]"]
ExplainFunction: TypeAlias = Callable[[Any, Any, Any], "str | None"]

# The real lock class, captured at import, so that a recorder keeps working
# (and adds no switch points) even inside a lockstep run that patches
# ``threading`` in user modules.
_RealLock: Final = threading.Lock


class _Unknown:
    """The type of :data:`UNKNOWN`; a singleton."""

    _instance: _Unknown | None = None

    def __new__(cls) -> _Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __reduce__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Final = _Unknown()
"""The output handed to a spec for an operation that never returned: accept any output."""


def _check_time(name: str, value: object, *, optional: bool) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(
            f"Operation.{name} must be an int or float"
            f"{' or None' if optional else ''} (got {value!r} of type {type(value).__name__})"
        )
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"Operation.{name} must be finite (got {value!r})")


def _validate_call(_instance: Operation, _attribute: object, value: float) -> None:
    _check_time("call", value, optional=False)


def _validate_ret(instance: Operation, _attribute: object, value: float | None) -> None:
    _check_time("ret", value, optional=True)
    if value is not None and value < instance.call:
        raise ValueError(
            f"Operation.ret must not be before its call (got call={instance.call!r}, ret={value!r})"
        )


@attrs.frozen
class Operation:
    """One operation of a history.

    ``process`` names who ran it (any hashable; used for display only),
    ``call``/``ret`` are its invocation and completion times on one clock
    (real or logical), ``input`` describes what was asked and ``output`` what
    was answered.  ``ret=None`` means it never returned (timed out, crashed,
    still running): it may or may not have taken effect and ``output`` is
    ignored.  Intervals are closed: an operation returning at ``t`` and one
    called at ``t`` count as concurrent.

    Raises ``TypeError`` for a time that is not an int/float (bools
    rejected) and ``ValueError`` for a non-finite time or ``ret < call``.
    """

    process: Hashable
    call: float = attrs.field(validator=_validate_call)
    ret: float | None = attrs.field(validator=_validate_ret)
    input: Any
    output: Any = None

    @property
    def pending(self) -> bool:
        """True when the operation never returned (its effect and output are unknown)."""
        return self.ret is None

    def describe(self) -> str:
        """One line, e.g. ``p1: ('put', 'a', 1) -> None @[3, 5]`` (``?`` when pending)."""
        if self.ret is None:
            return f"{self.process}: {self.input!r} -> ? @[{self.call}, ?]"
        return f"{self.process}: {self.input!r} -> {self.output!r} @[{self.call}, {self.ret}]"


@runtime_checkable
class SequentialSpec(Protocol):
    """A sequential specification: an initial state and a step function.

    ``step(state, input, output)`` returns ``(ok, new_state)``: ``ok`` is
    whether the object in ``state`` may answer ``output`` to ``input``, and
    ``new_state`` the state afterwards (ignored when not ok).  It must be a
    pure function and must not mutate ``state``.  ``output`` may be
    :data:`UNKNOWN` (the operation never returned), which must be accepted as
    any output.  States should be hashable (tuples, frozensets, attrs frozen
    records) so that the search can cache them.
    """

    def init(self) -> Any:
        """Return the initial state."""

    def step(self, state: Any, input: Any, output: Any) -> tuple[bool, Any]:
        """Apply one operation; see the class docstring."""


@attrs.frozen
class CheckResult:
    """The outcome of :func:`check_linearizability`.

    * ``verdict``: ``"ok"`` (a linearization exists), ``"illegal"`` (none
      exists: proven), ``"unknown"`` (the budget ran out first).
    * ``steps``: spec evaluations spent, prefix minimisation included.
    * ``prefix``: for ``"illegal"``, the operations of the shortest
      non-linearizable prefix of the failing part (in call order; those
      still running at the cut have ``ret=None``); empty otherwise.
    * ``culprit``: the operation whose return ends that prefix.
    * ``prefix_minimal``: False when the budget ran out while shrinking the
      prefix (it is then still non-linearizable, but maybe not the shortest).
    * ``longest_linearization``: the longest sequence of operations of the
      prefix that the search managed to linearize, in linearization order.
    * ``partition_index``: which part of the partition failed (0 without one).
    * ``explanation``: a readable account of the verdict.
    """

    verdict: Verdict
    steps: int
    explanation: str
    prefix: tuple[Operation, ...] = ()
    culprit: Operation | None = None
    prefix_minimal: bool = True
    longest_linearization: tuple[Operation, ...] = ()
    partition_index: int | None = None

    @property
    def ok(self) -> bool:
        """True exactly when the verdict is ``"ok"``."""
        return self.verdict == "ok"

    def __str__(self) -> str:
        return self.explanation


def partition_by(
    key: Callable[[Operation], Hashable],
) -> Callable[[Sequence[Operation]], list[list[Operation]]]:
    """Return a partition function grouping operations by ``key(op)``.

    Use it for P-compositional objects whose parts are independent, e.g.
    ``partition_by(lambda op: op.input[1])`` for a key-value store whose
    inputs are ``(verb, key, ...)``.  Groups keep history order and appear in
    order of first occurrence.
    """
    if not callable(key):
        raise TypeError(f"partition_by: key must be callable (got {key!r})")

    def partition(history: Sequence[Operation]) -> list[list[Operation]]:
        groups: dict[Hashable, list[Operation]] = {}
        for op in history:
            groups.setdefault(key(op), []).append(op)
        return list(groups.values())

    return partition


@attrs.define
class _Budget:
    max_steps: int | None
    deadline: float | None
    steps: int = 0

    def exhausted(self) -> bool:
        if self.max_steps is not None and self.steps >= self.max_steps:
            return True
        # Reading the clock is comparatively slow: only every 256 steps.
        return (
            self.deadline is not None
            and self.steps % 256 == 0
            and time.perf_counter() >= self.deadline
        )


@attrs.frozen
class _SearchOutcome:
    verdict: Verdict
    longest: tuple[int, ...]  # operation indices in linearization order


_CALL: Final = 0
_RETURN: Final = 1


def _search(
    ops: Sequence[Operation], init: Any, step: StepFunction, budget: _Budget
) -> _SearchOutcome:
    """WGL search with Lowe's cache over ``ops``; see the module docstring."""
    n = len(ops)
    # Events: (time, kind, op index); calls sort before returns at equal
    # times (closed intervals), then by op index for determinism.
    events: list[tuple[float, int, int]] = []
    for i, op in enumerate(ops):
        events.append((op.call, _CALL, i))
        if op.ret is not None:
            events.append((op.ret, _RETURN, i))
    events.sort()
    m = len(events)
    # Doubly linked list over event positions 0..m-1, with a head sentinel m.
    head = m
    nxt = [pos + 1 for pos in range(m)] + [0 if m else -1]
    prv = [pos - 1 for pos in range(m)] + [-1]
    if m:
        nxt[m - 1] = -1
        prv[0] = head
    kind = [e[1] for e in events]
    op_of = [e[2] for e in events]
    ret_pos = [-1] * n
    for pos, (_, k, i) in enumerate(events):
        if k == _RETURN:
            ret_pos[i] = pos

    def unlink(pos: int) -> None:
        p, q = prv[pos], nxt[pos]
        nxt[p] = q
        if q != -1:
            prv[q] = p

    def relink(pos: int) -> None:
        p, q = prv[pos], nxt[pos]
        nxt[p] = pos
        if q != -1:
            prv[q] = pos

    completed_left = sum(1 for op in ops if op.ret is not None)
    cache: set[tuple[int, Any]] | None = set()
    bits = 0
    state = init
    stack: list[tuple[int, Any]] = []  # (call position, state before it)
    longest: tuple[int, ...] = ()
    entry = nxt[head]
    while completed_left:
        if budget.exhausted():
            return _SearchOutcome("unknown", longest)
        if entry != -1 and kind[entry] == _CALL:
            i = op_of[entry]
            op = ops[i]
            output = UNKNOWN if op.ret is None else op.output
            budget.steps += 1
            ok, new_state = step(state, op.input, output)
            if ok:
                new_bits = bits | (1 << i)
                fresh = True
                if cache is not None:
                    try:
                        key = (new_bits, new_state)
                        fresh = key not in cache
                        if fresh:
                            cache.add(key)
                    except TypeError:
                        # Unhashable state: keep searching, without the cache.
                        cache = None
                if fresh:
                    stack.append((entry, state))
                    state, bits = new_state, new_bits
                    unlink(entry)
                    if ret_pos[i] != -1:
                        unlink(ret_pos[i])
                        completed_left -= 1
                    if len(stack) > len(longest):
                        longest = tuple(op_of[pos] for pos, _ in stack)
                    entry = nxt[head]
                    continue
            entry = nxt[entry]
        else:
            # A return event (or the end of the list): the operation it ends
            # was not linearized before it, so this branch is dead.
            if not stack:
                return _SearchOutcome("illegal", longest)
            entry, state = stack.pop()
            i = op_of[entry]
            bits &= ~(1 << i)
            if ret_pos[i] != -1:
                relink(ret_pos[i])
                completed_left += 1
            relink(entry)
            entry = nxt[entry]
    return _SearchOutcome("ok", longest)


def _cut(
    ops: Sequence[Operation], t_index: int, events: Sequence[tuple[float, int, int]]
) -> list[Operation]:
    """The history made of the first ``t_index`` events (later returns become pending)."""
    included: dict[int, bool] = {}
    for _, k, i in events[:t_index]:
        included[i] = k == _RETURN
    return [
        ops[i] if done else attrs.evolve(ops[i], ret=None, output=None)
        for i, done in sorted(included.items(), key=lambda item: (ops[item[0]].call, item[0]))
    ]


def _resolve_spec(spec: object, initial: object) -> tuple[Any, StepFunction]:
    if (
        isinstance(spec, SequentialSpec)
        and callable(getattr(spec, "init", None))
        and callable(getattr(spec, "step", None))
    ):
        if initial is not _MISSING:
            raise TypeError(
                "check_linearizability: do not pass initial= with a SequentialSpec "
                f"(its init() gives the initial state; got initial={initial!r})"
            )
        return spec.init(), spec.step
    if callable(spec):
        if initial is _MISSING:
            raise TypeError(
                "check_linearizability: a step-function spec needs initial=<initial state>"
            )
        return initial, spec
    raise TypeError(
        "check_linearizability: spec must be a step function (state, input, output) -> "
        f"(ok, new_state) or an object with init() and step() (got {spec!r})"
    )


_MISSING: Final = object()


def _reason(explain: ExplainFunction, state: object, op: Operation) -> str | None:
    """What ``explain`` says about ``op`` in ``state`` (None when it says nothing or fails:
    a broken explanation must not hide the verdict)."""
    try:
        reason = explain(state, op.input, op.output)
    except Exception:
        return None
    return reason if isinstance(reason, str) and reason else None


def _format_state(state: object) -> str:
    text = repr(state)
    return text if len(text) <= 200 else text[:197] + "..."


def _explain_illegal(
    *,
    prefix: Sequence[Operation],
    culprit: Operation,
    longest: Sequence[Operation],
    init: Any,
    step: StepFunction,
    part: int | None,
    minimal: bool,
    explain: ExplainFunction | None = None,
) -> str:
    where = f" in part {part} of the partition" if part is not None else ""
    lines = [
        f"Not linearizable{where}: no order of the {len(prefix)} operation(s) up to the "
        f"return of [{culprit.describe()}] is legal for the sequential spec.",
        "Shortest non-linearizable prefix (call order; '?' = still running at the cut):"
        if minimal
        else "Non-linearizable prefix (the budget ran out before it was shown to be shortest):",
    ]
    lines.extend(f"  {op.describe()}" for op in prefix)
    state = init
    for op in longest:
        ok, new_state = step(state, op.input, UNKNOWN if op.ret is None else op.output)
        if ok:
            state = new_state
    if longest:
        lines.append("Longest linearization found:")
        lines.extend(f"  {k + 1}. {op.describe()}" for k, op in enumerate(longest))
    else:
        lines.append("No operation could be linearized first.")
    lines.append(f"State after it: {_format_state(state)}")
    done = set(map(id, longest))
    rejected = [op for op in prefix if op.ret is not None and id(op) not in done]
    for op in rejected:
        ok, _ = step(state, op.input, op.output)
        verdict = "would be accepted next" if ok else "is rejected by the spec in that state"
        reason = None if ok or explain is None else _reason(explain, state, op)
        lines.append(f"  [{op.describe()}] {verdict}{'' if reason is None else f': {reason}'}")
    lines.append(
        "Every other order is ruled out by real time (an operation cannot take effect "
        "before another one that returned before it was called) or by the spec."
    )
    return "\n".join(lines)


def check_linearizability(
    history: Iterable[Operation] | HistoryRecorder,
    spec: StepFunction | SequentialSpec,
    *,
    initial: Any = _MISSING,
    partition: Callable[[Sequence[Operation]], Sequence[Sequence[Operation]]] | None = None,
    max_steps: int | None = 1_000_000,
    max_seconds: float | None = None,
    explain: ExplainFunction | None = None,
) -> CheckResult:
    """Check ``history`` against a sequential spec; never hangs past the budget.

    ``spec`` is either a step function ``(state, input, output) -> (ok,
    new_state)`` together with ``initial=`` (the initial state), or a
    :class:`SequentialSpec` (``init()`` and ``step()``).  ``partition``, if
    given, splits the history into independent sub-histories that are
    checked one by one (they must together hold every operation exactly
    once).  ``max_steps`` bounds spec evaluations of the verdict search
    (deterministic; ``None`` = unbounded) and ``max_seconds`` its wall time;
    when either runs out the verdict is ``"unknown"``.  For an ``"illegal"``
    verdict, shrinking the prefix may spend up to the same budget again.
    ``explain(state, input, output)``, if given (or defined by a
    :class:`SequentialSpec` object as an ``explain`` method), says in words why
    the spec rejects an operation the explanation names as rejected ("it raises
    KeyError here, the code returned 3"; None: nothing to add); an exception it
    raises is left out of the explanation, never raised.

    The search calls ``spec`` from the calling thread only and keeps no state
    between calls, so concurrent checks are safe if the spec is pure.

    Raises ``TypeError`` for a history element that is not an
    :class:`Operation`, a bad spec or misuse of ``initial``, and
    ``ValueError`` for a negative budget or a partition that does not hold
    every operation exactly once.
    """
    ops = list(history.history() if isinstance(history, HistoryRecorder) else history)
    for k, op in enumerate(ops):
        if not isinstance(op, Operation):
            raise TypeError(
                f"check_linearizability: history[{k}] must be an Operation (got {op!r})"
            )
    init, step = _resolve_spec(spec, initial)
    if explain is None:
        explain = getattr(spec, "explain", None) if isinstance(spec, SequentialSpec) else None
    if explain is not None and not callable(explain):
        raise TypeError(
            "check_linearizability: explain must be a function (state, input, output) -> "
            f"str | None, or None (got {explain!r})"
        )
    for name, value in (("max_steps", max_steps), ("max_seconds", max_seconds)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TypeError(
                f"check_linearizability: {name} must be a number or None (got {value!r})"
            )
        if value < 0 or (name == "max_steps" and not isinstance(value, int)):
            raise ValueError(
                f"check_linearizability: {name} must be a non-negative "
                f"{'int' if name == 'max_steps' else 'number'} or None (got {value!r})"
            )
    parts: list[list[Operation]]
    if partition is None:
        parts = [ops]
    else:
        raw = partition(ops)
        parts = [list(p) for p in raw]
        total = sum(len(p) for p in parts)
        if total != len(ops) or any(not isinstance(op, Operation) for p in parts for op in p):
            raise ValueError(
                f"check_linearizability: partition must return Operations holding each of the "
                f"{len(ops)} operation(s) exactly once (got {len(parts)} part(s) with {total})"
            )

    def new_budget() -> _Budget:
        deadline = None if max_seconds is None else time.perf_counter() + max_seconds
        return _Budget(max_steps, deadline)

    budget = new_budget()
    unknown_part: int | None = None
    for index, part in enumerate(parts):
        outcome = _search(part, init, step, budget)
        if outcome.verdict == "illegal":
            return _minimise(
                part,
                index=index if partition is not None else None,
                init=init,
                step=step,
                spent=budget,
                budget=new_budget(),
                explain=explain,
            )
        if outcome.verdict == "unknown":
            unknown_part = index
            break
    if unknown_part is not None:
        where = f" in part {unknown_part} of the partition" if partition is not None else ""
        return CheckResult(
            "unknown",
            budget.steps,
            f"Unknown: the budget ran out{where} after {budget.steps} spec step(s) "
            f"(max_steps={max_steps}, max_seconds={max_seconds}) before the search finished.",
        )
    return CheckResult(
        "ok",
        budget.steps,
        f"Linearizable: all {len(ops)} operation(s) in {len(parts)} part(s) have a legal "
        f"sequential order consistent with real time ({budget.steps} spec step(s)).",
    )


def _minimise(
    part: Sequence[Operation],
    *,
    index: int | None,
    init: Any,
    step: StepFunction,
    spent: _Budget,
    budget: _Budget,
    explain: ExplainFunction | None = None,
) -> CheckResult:
    """Bisect the earliest return event after which ``part`` is non-linearizable."""
    ordered = sorted(range(len(part)), key=lambda i: (part[i].call, i))
    ops = [part[i] for i in ordered]
    events: list[tuple[float, int, int]] = []
    for i, op in enumerate(ops):
        events.append((op.call, _CALL, i))
        if op.ret is not None:
            events.append((op.ret, _RETURN, i))
    events.sort()
    cuts = [pos + 1 for pos, (_, k, _) in enumerate(events) if k == _RETURN]
    # Invariant: the cut at cuts[hi] is proven non-linearizable; cuts before
    # lo are linearizable or undecided.
    lo, hi = 0, len(cuts) - 1
    minimal = True
    best = _search(_cut(ops, cuts[hi], events), init, step, budget)
    while lo < hi:
        mid = (lo + hi) // 2
        outcome = _search(_cut(ops, cuts[mid], events), init, step, budget)
        if outcome.verdict == "illegal":
            hi, best = mid, outcome
        else:
            if outcome.verdict == "unknown":
                minimal = False
            lo = mid + 1
    prefix = _cut(ops, cuts[hi], events)
    if best.verdict != "illegal":  # only if the budget ran out on the first search
        minimal = False
    culprit = ops[events[cuts[hi] - 1][2]]
    longest = tuple(prefix[i] for i in best.longest)
    return CheckResult(
        "illegal",
        spent.steps + budget.steps,
        _explain_illegal(
            prefix=prefix,
            culprit=culprit,
            longest=longest,
            init=init,
            step=step,
            part=index,
            minimal=minimal,
            explain=explain,
        ),
        prefix=tuple(prefix),
        culprit=culprit,
        prefix_minimal=minimal,
        longest_linearization=longest,
        partition_index=0 if index is None else index,
    )


@attrs.frozen
class PendingOperation:
    """A handle for an invoked operation; pass it to :meth:`HistoryRecorder.respond`."""

    index: int
    process: Hashable
    input: Any
    call: int


class HistoryRecorder:
    """Record invoke/return events of concurrent operations on a logical clock.

    ``invoke(process, input)`` stamps the call with the next tick and returns
    a handle; ``respond(handle, output)`` stamps the return.  An operation
    never responded to stays pending (``ret=None``: its effect is unknown),
    which is exactly how a timed-out or crashed operation must be recorded.

    Thread-safe: the clock and the event list are guarded by a real (never
    patched) lock held for a few instructions, so it adds no switch points
    inside a lockstep run and the ticks follow the scheduler's order.
    """

    def __init__(self) -> None:
        self._lock = _RealLock()
        self._clock = 0
        self._calls: list[PendingOperation] = []
        self._returns: dict[int, tuple[int, Any]] = {}

    def invoke(self, process: Hashable, input: Any) -> PendingOperation:
        """Record a call now; returns the handle to respond to."""
        try:
            hash(process)
        except TypeError:
            raise TypeError(
                f"HistoryRecorder.invoke: process must be hashable (got {process!r})"
            ) from None
        with self._lock:
            self._clock += 1
            pending = PendingOperation(len(self._calls), process, input, self._clock)
            self._calls.append(pending)
            return pending

    def respond(self, pending: PendingOperation, output: Any) -> None:
        """Record the return of ``pending`` now, with ``output``.

        Raises ``TypeError`` if ``pending`` is not a handle and ``ValueError``
        if it belongs to another recorder or was already responded to.
        """
        if not isinstance(pending, PendingOperation):
            raise TypeError(
                f"HistoryRecorder.respond: expected the handle invoke() returned (got {pending!r})"
            )
        with self._lock:
            if pending.index >= len(self._calls) or self._calls[pending.index] is not pending:
                raise ValueError(
                    f"HistoryRecorder.respond: {pending!r} was not invoked on this recorder"
                )
            if pending.index in self._returns:
                raise ValueError(f"HistoryRecorder.respond: {pending!r} already responded")
            self._clock += 1
            self._returns[pending.index] = (self._clock, output)

    @contextmanager
    def operation(self, process: Hashable, input: Any) -> Iterator[list[Any]]:
        """Context manager: invoke on entry, respond on normal exit.

        Yields a one-element list; put the output in ``box[0]`` (default
        ``None``).  If the body raises, the operation stays pending (its
        effect is unknown) and the exception propagates.
        """
        pending = self.invoke(process, input)
        box: list[Any] = [None]
        yield box
        self.respond(pending, box[0])

    def history(self) -> tuple[Operation, ...]:
        """A snapshot of the recorded operations, in call order."""
        with self._lock:
            calls = list(self._calls)
            returns = dict(self._returns)
        result = []
        for pending in calls:
            if pending.index in returns:
                ret, output = returns[pending.index]
                result.append(Operation(pending.process, pending.call, ret, pending.input, output))
            else:
                result.append(Operation(pending.process, pending.call, None, pending.input))
        return tuple(result)

    def __len__(self) -> int:
        with self._lock:
            return len(self._calls)

    def __repr__(self) -> str:
        with self._lock:
            return (
                f"<HistoryRecorder operations={len(self._calls)} "
                f"pending={len(self._calls) - len(self._returns)} clock={self._clock}>"
            )

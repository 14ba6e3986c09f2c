"""A tiny simulated runtime that drives a strategy through the real protocol.

It runs abstract programs (lists of operations per thread) with lock, join and
timeout semantics, builds the same StepContext / StepRecord / ExecutionOutcome
values as lockstep's runtime, and can enumerate every execution by brute
force. DPOR's counts are checked against it independently of the runtime.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Sequence
from typing import Any

import attrs

from lockstep._failure import BlockedThread, Failure
from lockstep._memory._locations import WHOLE, Access
from lockstep._schedule import Choice, Schedule
from lockstep._trace import OpDescriptor, PrimitiveId, StepRecord, Trace
from lockstep.strategies._base import ExecutionOutcome, StepContext


@attrs.frozen
class Op:
    """One abstract operation.

    kind: "cp" (checkpoint on resource ``arg``), "rd"/"wr" (a watched read/write:
    ``arg`` is (shape, slot) with shape "keyed", "seq" or "attr" and slot "*" for the
    whole container), "mv" (``move_to_end(arg)`` on the keyed container),
    "acq"/"rel" (lock ``arg``),
    "tryacq" (acquire with a timeout: if the lock is held a timeout may fire,
    then the thread continues without it), "nbacq" (acquire(blocking=False):
    always enabled, takes the lock only if it is free), "spawn" (main only: start worker
    ``arg``), "join" (main only: wait for worker ``arg``).
    """

    kind: str
    arg: Any = None


@attrs.frozen
class Program:
    """main's operations and each worker's (worker k is thread k, k >= 1)."""

    main: tuple[Op, ...]
    workers: tuple[tuple[Op, ...], ...]

    @classmethod
    def parallel(cls, *workers: Sequence[Op]) -> Program:
        """main spawns every worker, then joins them all."""
        n = len(workers)
        main = tuple(Op("spawn", k) for k in range(1, n + 1)) + tuple(
            Op("join", k) for k in range(1, n + 1)
        )
        return cls(main, tuple(tuple(w) for w in workers))


def _descriptor(op: Op | None, thread: int, started: bool) -> OpDescriptor:
    if not started:
        return OpDescriptor("start", PrimitiveId("Thread", thread), f"T{thread}")
    if op is None:
        return OpDescriptor("end", PrimitiveId("Thread", thread), f"T{thread}")
    if op.kind == "cp":
        return OpDescriptor("checkpoint", op.arg, f"cp {op.arg}")
    if op.kind in ("rd", "wr", "mv"):
        access = access_of(op)
        return OpDescriptor(access.mode, access, access.describe())
    if op.kind in ("acq", "tryacq", "nbacq"):
        # One call site per kind, as real code would have.
        return OpDescriptor(
            "Lock.acquire", PrimitiveId("Lock", op.arg), f"Lock#{op.arg}", f"sim.py:{op.kind}"
        )
    if op.kind == "rel":
        return OpDescriptor("Lock.release", PrimitiveId("Lock", op.arg), f"Lock#{op.arg}")
    if op.kind == "spawn":
        return OpDescriptor("Thread.start", None, f"spawn {op.arg}")
    if op.kind == "join":
        return OpDescriptor("Thread.join", PrimitiveId("Thread", op.arg), f"join {op.arg}")
    raise ValueError(op)


def access_of(op: Op) -> Access:
    """The watched access of a "rd"/"wr"/"mv" operation."""
    if op.kind == "mv":
        return Access(PrimitiveId("dict", 1), "dict", "keyed", op.arg, False, "mv", True)
    shape, slot = op.arg
    kind = {"keyed": "dict", "seq": "list", "attr": "Obj"}[shape]
    return Access(
        PrimitiveId(kind, 1),
        kind,
        shape,
        WHOLE if slot == "*" else slot,
        op.kind == "wr",
        op.kind,
    )


@attrs.frozen
class SimResult:
    outcome: ExecutionOutcome
    deadlock: bool
    events: tuple[tuple[int, int, str, OpDescriptor], ...]  # thread, local index, choice kind, op


@attrs.frozen
class _State:
    """The whole simulated machine; immutable so that states can be memoised."""

    pc: tuple[tuple[int, int], ...]  # (thread, next op index); -1 = not started
    finished: frozenset[int]
    holder: tuple[tuple[Any, int], ...]  # (lock, holding thread)
    # (thread, lock): a timed or non-blocking acquire that failed; the thread
    # skips its release of that lock, as real code does (`if lock.acquire(...)`).
    skip: frozenset[tuple[int, Any]] = frozenset()

    @classmethod
    def initial(cls) -> _State:
        return cls(((0, -1),), frozenset(), ())


def _code(program: Program, t: int) -> tuple[Op, ...]:
    return program.main if t == 0 else program.workers[t - 1]


def _options(program: Program, state: _State) -> tuple[list[Choice], dict[int, OpDescriptor]]:
    holder = dict(state.holder)
    pending: dict[int, OpDescriptor] = {}
    choices: list[Choice] = []
    for t, pc in state.pc:
        if t in state.finished:
            continue
        code = _code(program, t)
        op = code[pc] if 0 <= pc < len(code) else None
        pending[t] = _descriptor(op, t, pc >= 0)
        can_run = True
        if op is not None and op.kind in ("acq", "tryacq"):
            can_run = op.arg not in holder
        if op is not None and op.kind == "join":
            can_run = op.arg in state.finished
        if can_run:
            choices.append(Choice.of(t, "run"))
        elif op is not None and op.kind == "tryacq":
            choices.append(Choice.of(t, "timeout"))
    return choices, pending


def _apply(program: Program, state: _State, choice: Choice) -> _State:
    t = choice.thread
    pcs = dict(state.pc)
    holder = dict(state.holder)
    finished = state.finished
    skip = set(state.skip)
    pc = pcs[t]
    code = _code(program, t)
    if pc < 0:
        pcs[t] = 0
    elif pc >= len(code):
        finished = finished | {t}
    else:
        op = code[pc]
        pcs[t] = pc + 1
        if choice.kind == "timeout" or (op.kind == "nbacq" and op.arg in holder):
            skip.add((t, op.arg))
        elif op.kind in ("acq", "tryacq", "nbacq"):
            holder[op.arg] = t
        elif op.kind == "rel" and holder.get(op.arg) == t:
            del holder[op.arg]
        elif op.kind == "spawn":
            pcs[op.arg] = -1
    # Skip the release of a lock this thread failed to take.
    while 0 <= pcs[t] < len(code) and code[pcs[t]].kind == "rel" and (t, code[pcs[t]].arg) in skip:
        skip.discard((t, code[pcs[t]].arg))
        pcs[t] += 1
    return _State(
        tuple(sorted(pcs.items())), finished, tuple(sorted(holder.items())), frozenset(skip)
    )


def run(program: Program, choose: Any) -> SimResult:
    """Run one execution, asking ``choose(choices, ctx)`` at every step."""
    state = _State.initial()
    steps: list[StepRecord] = []
    choices_made: list[Choice] = []
    events: list[tuple[int, int, str, OpDescriptor]] = []
    local: dict[int, int] = {}
    current: int | None = None
    names = ("main", *(f"worker-{k + 1}" for k in range(len(program.workers))))
    while True:
        live = [t for t, _ in state.pc if t not in state.finished]
        choices, pending = _options(program, state)
        if not live or not choices:
            failure = None
            if live:
                names_now = names[: len(state.pc)]
                failure = Failure(
                    kind="deadlock",
                    message="deadlock",
                    schedule=Schedule(tuple(choices_made)),
                    trace=Trace(tuple(steps), names_now),
                    deadlock=tuple(
                        BlockedThread(t, names[t], op.kind, op.label, (), "?")
                        for t, op in sorted(pending.items())
                    ),
                )
            return SimResult(
                ExecutionOutcome(tuple(choices_made), tuple(steps), failure),
                bool(live),
                tuple(events),
            )
        enabled = frozenset(c.thread for c in choices if c.kind == "run")
        timeouts = frozenset(c.thread for c in choices if c.kind == "timeout")
        ctx = StepContext(
            step=len(steps),
            current=current,
            enabled=enabled,
            timeouts=timeouts,
            pending=dict(pending),
            thread_names=names[: len(state.pc)],
            clock=0.0,
        )
        choice = choose(choices, ctx)
        assert choice in choices, (choice, choices)
        t = choice.thread
        steps.append(
            StepRecord(
                index=len(steps),
                thread=t,
                thread_name=names[t],
                op=pending[t],
                choice=choice,
                preemption=ctx.is_preemption(choice),
                enabled=enabled,
                timeouts=timeouts,
                pending=tuple(sorted(pending.items())),
                clock=0.0,
            )
        )
        choices_made.append(choice)
        local[t] = local.get(t, 0) + 1
        events.append((t, local[t], choice.kind, pending[t]))
        current = t
        state = _apply(program, state, choice)


def _cells(kind: str, op: OpDescriptor) -> tuple[set[Hashable], set[Hashable]]:
    """(cells read, cells written): every primitive and checkpoint writes its key."""
    if isinstance(op.resource, Access):
        reads, writes = op.resource.footprint
        return set(reads), set(writes)
    keys: set[Hashable] = set()
    if op.resource is not None:
        keys.add(op.resource)
    if kind == "timeout":
        keys.add("clock")
    return set(), keys


def canonical(result: SimResult) -> tuple[Any, ...]:
    """The Mazurkiewicz trace of an execution: per dependency cell, the order of the
    writes on it and, after each write, the set of reads before the next one (two
    reads commute); each event named by thread, position in its thread and choice
    kind; each thread's events, and whether it deadlocked."""
    canon = _Canon.empty()
    for t, _, kind, op in result.events:
        canon = canon.add(t, kind, op)
    return canon.freeze(result.deadlock)


@attrs.frozen
class _Canon:
    per_key: tuple[tuple[str, tuple[tuple[Any, frozenset[Any]], ...]], ...]
    per_thread: tuple[tuple[int, tuple[tuple[str, str], ...]], ...]

    @classmethod
    def empty(cls) -> _Canon:
        return cls((), ())

    def add(self, t: int, kind: str, op: OpDescriptor) -> _Canon:
        threads = dict(self.per_thread)
        mine = (*threads.get(t, ()), (kind, op.kind))
        threads[t] = mine
        keys = dict(self.per_key)
        event = (t, len(mine), kind)
        reads, writes = _cells(kind, op)
        for key in writes:
            keys[repr(key)] = (*keys.get(repr(key), ()), (event, frozenset()))
        for key in reads - writes:
            groups = keys.get(repr(key), ((None, frozenset()),))
            writer, readers = groups[-1]
            keys[repr(key)] = (*groups[:-1], (writer, readers | {event}))
        return _Canon(tuple(sorted(keys.items())), tuple(sorted(threads.items())))

    def freeze(self, deadlock: bool) -> tuple[Any, ...]:
        return (self.per_key, self.per_thread, deadlock)


def all_traces(program: Program) -> set[tuple[Any, ...]]:
    """Every trace, by exhaustive search over (state, partial trace), memoised."""
    found: set[tuple[Any, ...]] = set()
    seen: set[tuple[_State, _Canon]] = set()
    stack = [(_State.initial(), _Canon.empty())]
    while stack:
        state, canon = stack.pop()
        if (state, canon) in seen:
            continue
        seen.add((state, canon))
        choices, pending = _options(program, state)
        live = [t for t, _ in state.pc if t not in state.finished]
        if not live or not choices:
            found.add(canon.freeze(bool(live)))
            continue
        for choice in choices:
            stack.append(
                (
                    _apply(program, state, choice),
                    canon.add(choice.thread, choice.kind, pending[choice.thread]),
                )
            )
    return found


def count_interleavings(program: Program, limit: int = 10**7) -> int:
    """How many complete executions (interleavings) exist, by memoised counting."""
    memo: dict[_State, int] = {}

    def count(state: _State) -> int:
        if state in memo:
            return memo[state]
        choices, _ = _options(program, state)
        live = [t for t, _ in state.pc if t not in state.finished]
        if not live or not choices:
            total = 1
        else:
            total = sum(count(_apply(program, state, c)) for c in choices)
        memo[state] = min(total, limit)
        return memo[state]

    return count(_State.initial())


@attrs.frozen
class Exploration:
    results: tuple[SimResult, ...]
    executions: int


def explore(program: Program, strategy: Any, *, limit: int = 100_000) -> Exploration:
    """Drive ``strategy`` through executions until it says stop (or ``limit``)."""
    results = []
    for _ in itertools.count():
        strategy.begin_execution()
        result = run(program, strategy.choose)
        results.append(result)
        if not strategy.end_execution(result.outcome) or len(results) >= limit:
            break
    return Exploration(tuple(results), len(results))

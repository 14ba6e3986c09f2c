"""Unit and property tests for lockstep._linearizability (the WGL checker)."""

from __future__ import annotations

import threading
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lockstep._linearizability import (
    UNKNOWN,
    CheckResult,
    HistoryRecorder,
    Operation,
    SequentialSpec,
    check_linearizability,
    partition_by,
)

from ._specs import RegisterSpec, brute_force, kv_step, register_step


def op(process: Any, call: float, ret: float | None, inp: Any, out: Any = None) -> Operation:
    return Operation(process, call, ret, inp, out)


def check(history: list[Operation], **kwargs: Any) -> CheckResult:
    return check_linearizability(history, register_step, initial=0, **kwargs)


# --- classic examples ------------------------------------------------------


def test_empty_history_is_linearizable() -> None:
    """No operations: trivially ok, with no spec steps spent."""
    result = check([])
    assert result.verdict == "ok"
    assert result.ok
    assert result.steps == 0


def test_sequential_write_then_read_is_ok() -> None:
    """A read after a completed write that sees it is fine."""
    assert check([op("a", 0, 1, ("w", 1)), op("b", 2, 3, ("r",), 1)]).verdict == "ok"


def test_stale_read_after_completed_write_is_illegal() -> None:
    """A read called after a write returned must not see the old value."""
    write = op("a", 0, 1, ("w", 1))
    read = op("b", 2, 3, ("r",), 0)
    result = check([write, read])
    assert result.verdict == "illegal"
    assert not result.ok
    assert result.culprit == read
    assert result.prefix == (write, read)
    assert result.prefix_minimal
    assert result.longest_linearization == (write,)
    assert "Not linearizable" in result.explanation
    assert "rejected by the spec" in result.explanation
    assert str(result) == result.explanation


@pytest.mark.parametrize("seen", [0, 1])
def test_read_overlapping_a_write_may_see_either_value(seen: int) -> None:
    """Concurrent operations may be ordered either way."""
    assert check([op("a", 0, 10, ("w", 1)), op("b", 5, 6, ("r",), seen)]).verdict == "ok"


def test_touching_intervals_count_as_concurrent() -> None:
    """Closed intervals: a read called at the instant the write returns may go first."""
    assert check([op("a", 0, 5, ("w", 1)), op("b", 5, 6, ("r",), 0)]).verdict == "ok"


def test_new_old_inversion_is_illegal() -> None:
    """Once a read saw the new value, a later read must not see the old one."""
    history = [
        op("w", 0, 10, ("w", 1)),
        op("r1", 1, 2, ("r",), 1),
        op("r2", 3, 4, ("r",), 0),
    ]
    result = check(history)
    assert result.verdict == "illegal"
    assert result.culprit == history[2]
    # The prefix cuts before the write returns: the write is still running.
    assert [o.process for o in result.prefix] == ["w", "r1", "r2"]
    assert result.prefix[0].ret is None


def test_read_of_a_value_never_written_is_illegal() -> None:
    """A read may only return a written value or the initial one."""
    result = check([op("a", 0, 10, ("w", 1)), op("b", 1, 2, ("r",), 7)])
    assert result.verdict == "illegal"
    # The write is cut mid-flight (pending) and may be placed; the read never.
    assert [o.process for o in result.longest_linearization] == ["a"]
    alone = check([op("b", 1, 2, ("r",), 7)])
    assert alone.longest_linearization == ()
    assert "No operation could be linearized first" in alone.explanation


# --- indeterminate (pending) operations -----------------------------------


@pytest.mark.parametrize("seen", [0, 1])
def test_pending_write_may_or_may_not_have_happened(seen: int) -> None:
    """Jepsen's info convention: a write that never returned is allowed both ways."""
    history = [op("a", 0, None, ("w", 1)), op("b", 5, 6, ("r",), seen)]
    assert check(history).verdict == "ok"


def test_pending_write_cannot_explain_an_unwritten_value() -> None:
    """Allowing both ways is not allowing everything."""
    history = [op("a", 0, None, ("w", 1)), op("b", 5, 6, ("r",), 2)]
    assert check(history).verdict == "illegal"


def test_pending_write_cannot_take_effect_before_its_call() -> None:
    """A pending operation still starts at its call."""
    history = [op("b", 0, 1, ("r",), 1), op("a", 5, None, ("w", 1))]
    assert check(history).verdict == "illegal"


def test_pending_read_gets_unknown_output() -> None:
    """The spec sees UNKNOWN for an operation that never returned."""
    seen: list[Any] = []

    def step(state: int, inp: Any, out: Any) -> tuple[bool, int]:
        seen.append(out)
        return register_step(state, inp, out)

    # The pending read is called first, so the search tries it first.
    history = [op("b", 0, None, ("r",), "ignored"), op("a", 1, 2, ("w", 1))]
    assert check_linearizability(history, step, initial=0).verdict == "ok"
    assert seen[0] is UNKNOWN
    assert "ignored" not in seen
    assert repr(UNKNOWN) == "UNKNOWN"


# --- specs, partitions, caching -------------------------------------------


def test_sequential_spec_object_gives_same_verdicts() -> None:
    """A SequentialSpec and the equivalent step function agree."""
    spec = RegisterSpec()
    assert isinstance(spec, SequentialSpec)
    good = [op("a", 0, 1, ("w", 1)), op("b", 2, 3, ("r",), 1)]
    bad = [op("a", 0, 1, ("w", 1)), op("b", 2, 3, ("r",), 0)]
    assert check_linearizability(good, spec).verdict == "ok"
    assert check_linearizability(bad, spec).verdict == "illegal"


def _kv_history() -> list[Operation]:
    return [
        op(1, 0, 2, ("put", "x", 1)),
        op(2, 1, 3, ("put", "y", 5)),
        op(1, 4, 5, ("get", "y"), 5),
        op(2, 4, 6, ("cas", "x", 1, 2), True),
        op(3, 7, 8, ("get", "x"), 1),  # stale: the cas returned before
    ]


def test_partition_by_key_finds_the_failing_part() -> None:
    """P-compositionality: the failing key is reported, with its own prefix only."""
    history = _kv_history()
    whole = check_linearizability(history, kv_step, initial=frozenset())
    parts = check_linearizability(
        history, kv_step, initial=frozenset(), partition=partition_by(lambda o: o.input[1])
    )
    assert whole.verdict == parts.verdict == "illegal"
    assert parts.partition_index == 0
    assert {o.input[1] for o in parts.prefix} == {"x"}
    assert parts.culprit == history[4]
    assert "part 0 of the partition" in parts.explanation
    fixed = [*history[:4], attrs.evolve(history[4], output=2)]
    for partition in (None, partition_by(lambda o: o.input[1])):
        assert (
            check_linearizability(fixed, kv_step, initial=frozenset(), partition=partition).verdict
            == "ok"
        )


def test_unhashable_state_still_searches_without_cache() -> None:
    """States that cannot be hashed disable the cache but not the check."""

    def step(state: list[int], inp: Any, out: Any) -> tuple[bool, list[int]]:
        ok, new = register_step(state[0], inp, out)
        return ok, [new]

    good = [op("a", 0, 10, ("w", 1)), op("b", 1, 2, ("r",), 1), op("c", 3, 4, ("r",), 1)]
    bad = [*good[:2], op("c", 3, 4, ("r",), 0)]
    assert check_linearizability(good, step, initial=[0]).verdict == "ok"
    assert check_linearizability(bad, step, initial=[0]).verdict == "illegal"


# --- budgets ---------------------------------------------------------------


def _hard_history(n: int) -> list[Operation]:
    """n concurrent writes of distinct values then an impossible read: the search
    must try every order of the writes before it gives up (cache defeated by a
    state that remembers the whole sequence)."""
    writes = [op(i, 0, 100, ("w", i + 1)) for i in range(n)]
    return [*writes, op("r", 101, 102, ("r",), -1)]


def _sequence_step(state: tuple[int, ...], inp: Any, out: Any) -> tuple[bool, tuple[int, ...]]:
    if inp[0] == "w":
        return True, (*state, inp[1])
    return (out is UNKNOWN or (state[-1] if state else 0) == out), state


def test_step_budget_exhaustion_answers_unknown() -> None:
    """A budget too small for the search gives "unknown", deterministically."""
    history = _hard_history(7)
    result = check_linearizability(history, _sequence_step, initial=(), max_steps=500)
    assert result.verdict == "unknown"
    assert result.steps == 500
    assert "budget ran out" in result.explanation
    again = check_linearizability(history, _sequence_step, initial=(), max_steps=500)
    assert again == result


def test_zero_seconds_answers_unknown() -> None:
    """max_seconds=0 stops before the first spec step."""
    result = check([op("a", 0, 1, ("w", 1))], max_seconds=0)
    assert result.verdict == "unknown"
    assert result.steps == 0


def test_enough_budget_decides_the_hard_history() -> None:
    """The same hard history is proven illegal with a large enough budget."""
    result = check_linearizability(_hard_history(4), _sequence_step, initial=())
    assert result.verdict == "illegal"


def test_prefix_is_shortest_in_a_long_history() -> None:
    """The prefix stops at the first impossible return, ignoring what follows."""
    history = [op("a", 0, 1, ("w", 1)), op("b", 2, 3, ("r",), 0)]
    history += [op("c", 4 + 2 * i, 5 + 2 * i, ("w", i)) for i in range(20)]
    result = check(history)
    assert result.verdict == "illegal"
    assert result.prefix == tuple(history[:2])
    assert result.culprit == history[1]


# --- argument validation ---------------------------------------------------


@pytest.mark.parametrize(
    ("call", "ret", "error", "fragment"),
    [
        ("0", 1, TypeError, "call must be an int or float"),
        (True, 1, TypeError, "call must be an int or float"),
        (float("nan"), 1, ValueError, "call must be finite"),
        (0, float("inf"), ValueError, "ret must be finite"),
        (5, 4, ValueError, "ret must not be before its call"),
        (0, "1", TypeError, "ret must be an int or float or None"),
    ],
)
def test_operation_rejects_bad_times(
    call: Any, ret: Any, error: type[Exception], fragment: str
) -> None:
    """Bad timestamps are refused with a message naming the field and value."""
    with pytest.raises(error, match=fragment):
        Operation("p", call, ret, ("r",), 0)


def test_check_rejects_bad_arguments() -> None:
    """Misuse raises precise errors."""
    good = [op("a", 0, 1, ("w", 1))]
    with pytest.raises(TypeError, match=r"history\[0\] must be an Operation"):
        check_linearizability(["x"], register_step, initial=0)  # type: ignore[list-item]
    with pytest.raises(TypeError, match="needs initial="):
        check_linearizability(good, register_step)
    with pytest.raises(TypeError, match="do not pass initial="):
        check_linearizability(good, RegisterSpec(), initial=0)
    with pytest.raises(TypeError, match="spec must be a step function"):
        check_linearizability(good, 42, initial=0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_steps must be a non-negative int"):
        check(good, max_steps=-1)
    with pytest.raises(TypeError, match="max_seconds must be a number"):
        check(good, max_seconds="1")
    with pytest.raises(ValueError, match="exactly once"):
        check(good, partition=lambda h: [h, h])
    with pytest.raises(TypeError, match="key must be callable"):
        partition_by(3)  # type: ignore[arg-type]


# --- the recorder ----------------------------------------------------------


def test_recorder_stamps_a_logical_clock() -> None:
    """invoke/respond tick one shared counter; unanswered operations stay pending."""
    rec = HistoryRecorder()
    w = rec.invoke("a", ("w", 1))
    r = rec.invoke("b", ("r",))
    rec.respond(w, None)
    with rec.operation("c", ("r",)) as box:
        box[0] = 1
    history = rec.history()
    assert history == (
        Operation("a", 1, 3, ("w", 1), None),
        Operation("b", 2, None, ("r",)),
        Operation("c", 4, 5, ("r",), 1),
    )
    assert history[1].pending
    assert len(rec) == 3
    assert "pending=1" in repr(rec)
    assert check_linearizability(rec, register_step, initial=0).verdict == "ok"
    rec.respond(r, 5)  # a value nobody wrote
    assert check_linearizability(rec, register_step, initial=0).verdict == "illegal"


def test_recorder_operation_left_pending_when_body_raises() -> None:
    """An exception inside operation() leaves the op pending (effect unknown)."""
    rec = HistoryRecorder()
    with pytest.raises(RuntimeError), rec.operation("a", ("w", 1)):
        raise RuntimeError("timed out")
    assert rec.history()[0].pending


def test_recorder_rejects_misuse() -> None:
    """Foreign or repeated handles and unhashable processes are refused."""
    rec, other = HistoryRecorder(), HistoryRecorder()
    handle = rec.invoke("a", 1)
    with pytest.raises(ValueError, match="not invoked on this recorder"):
        other.respond(handle, None)
    rec.respond(handle, None)
    with pytest.raises(ValueError, match="already responded"):
        rec.respond(handle, None)
    with pytest.raises(TypeError, match="expected the handle"):
        rec.respond("a", None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="process must be hashable"):
        rec.invoke([], 1)
    assert len(rec) == 1


def test_recorder_is_thread_safe() -> None:
    """Real threads recording at once get distinct ticks and lose nothing."""
    rec = HistoryRecorder()
    start = threading.Barrier(4)

    def worker(p: int) -> None:
        start.wait()
        for k in range(200):
            rec.respond(rec.invoke(p, ("w", k)), None)

    threads = [threading.Thread(target=worker, args=(p,)) for p in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    history = rec.history()
    stamps = [o.call for o in history] + [o.ret for o in history]
    assert len(history) == 800
    assert sorted(stamps) == list(range(1, 1601))


# --- properties ------------------------------------------------------------

register_ops = st.one_of(
    st.tuples(st.just("w"), st.integers(0, 2)).map(lambda t: (t, None)),
    st.tuples(st.just(("r",)), st.integers(0, 2)),
)


@st.composite
def random_histories(draw: st.DrawFn) -> list[Operation]:
    n = draw(st.integers(0, 5))
    ops = []
    for i in range(n):
        inp, out = draw(register_ops)
        call = draw(st.integers(0, 10))
        pending = draw(st.integers(0, 4)) == 0
        ret = None if pending else call + draw(st.integers(0, 5))
        ops.append(Operation(i, call, ret, inp, out))
    return ops


@given(random_histories())
@settings(max_examples=300, deadline=None)
def test_verdict_matches_brute_force(history: list[Operation]) -> None:
    """On small histories the search agrees with enumerating every order."""
    expected = "ok" if brute_force(history, register_step, 0) else "illegal"
    assert check(history).verdict == expected


@given(random_histories())
@settings(max_examples=300, deadline=None)
def test_prefix_is_minimal_and_illegal(history: list[Operation]) -> None:
    """The reported prefix is illegal, and one event less (its culprit still
    running) is linearizable."""
    result = check(history)
    if result.verdict != "illegal":
        return
    assert result.culprit is not None
    assert result.prefix_minimal
    assert check(list(result.prefix)).verdict == "illegal"
    shorter = [
        attrs.evolve(o, ret=None, output=None) if o == result.culprit else o for o in result.prefix
    ]
    assert check(shorter).verdict == "ok"
    # The longest linearization is a legal sequence of prefix operations.
    state = 0
    for o in result.longest_linearization:
        ok, state = register_step(state, o.input, UNKNOWN if o.ret is None else o.output)
        assert ok


kv_inputs = st.one_of(
    st.tuples(st.just("put"), st.sampled_from("xyz"), st.integers(0, 3)),
    st.tuples(st.just("get"), st.sampled_from("xyz")),
    st.tuples(st.just("cas"), st.sampled_from("xyz"), st.integers(0, 3), st.integers(0, 3)),
)


@st.composite
def sequential_executions(draw: st.DrawFn) -> list[Operation]:
    """Run random KV operations one at a time on the spec, then give each an
    interval around its linearization point 10*i (overlapping or not), and
    leave some unanswered."""
    inputs = draw(st.lists(kv_inputs, max_size=12))
    state: frozenset[tuple[str, int]] = frozenset()
    history = []
    for i, inp in enumerate(inputs):
        current = dict(state)
        out: Any
        if inp[0] == "get":
            out = current.get(inp[1])
        elif inp[0] == "cas":
            out = current.get(inp[1]) == inp[2]
        else:
            out = None
        ok, state = kv_step(state, inp, out)
        assert ok
        point = 10 * i
        call = point - draw(st.integers(0, 25))
        ret = None if draw(st.integers(0, 9)) == 0 else point + draw(st.integers(0, 25))
        history.append(Operation(draw(st.integers(0, 3)), call, ret, inp, out))
    return draw(st.permutations(history))


@given(sequential_executions(), st.booleans())
@settings(max_examples=200, deadline=None)
def test_sequential_executions_are_linearizable(history: list[Operation], split: bool) -> None:
    """Any history produced by really executing the operations in some order,
    with intervals containing that order's points, is linearizable."""
    partition = partition_by(lambda o: o.input[1]) if split else None
    result = check_linearizability(history, kv_step, initial=frozenset(), partition=partition)
    assert result.verdict == "ok", result.explanation


@st.composite
def random_kv_histories(draw: st.DrawFn) -> list[Operation]:
    n = draw(st.integers(0, 7))
    ops = []
    for i in range(n):
        inp = draw(kv_inputs)
        out: Any = None
        if inp[0] == "get":
            out = draw(st.one_of(st.none(), st.integers(0, 3)))
        elif inp[0] == "cas":
            out = draw(st.booleans())
        call = draw(st.integers(0, 12))
        ret = None if draw(st.integers(0, 5)) == 0 else call + draw(st.integers(0, 6))
        ops.append(Operation(i, call, ret, inp, out))
    return ops


@given(random_kv_histories())
@settings(max_examples=300, deadline=None)
def test_partitioning_gives_the_same_verdict(history: list[Operation]) -> None:
    """Checking per key agrees with checking the whole history."""
    whole = check_linearizability(history, kv_step, initial=frozenset())
    parts = check_linearizability(
        history, kv_step, initial=frozenset(), partition=partition_by(lambda o: o.input[1])
    )
    assert whole.verdict == parts.verdict


# --- explanations in words -----------------------------------------------------


def _register_reason(state: int, inp: tuple[Any, ...], out: Any) -> str | None:
    return f"the register holds {state}, the read returned {out}" if inp == ("r",) else None


def _stale_read() -> list[Operation]:
    return [op("a", 0, 1, ("w", 1)), op("b", 2, 3, ("r",), 0)]


def test_explain_says_why_the_spec_rejects_an_operation() -> None:
    result = check(_stale_read(), explain=_register_reason)
    assert result.verdict == "illegal"
    assert (
        "[b: ('r',) -> 0 @[2, 3]] is rejected by the spec in that state: "
        "the register holds 1, the read returned 0" in result.explanation
    )
    plain = check(_stale_read())
    assert "is rejected by the spec in that state\n" in plain.explanation + "\n"
    assert "the register holds" not in plain.explanation


def test_a_sequential_spec_object_s_explain_method_is_used() -> None:
    @attrs.frozen
    class Explained(RegisterSpec):
        def explain(self, state: int, inp: tuple[Any, ...], out: Any) -> str | None:
            return _register_reason(state, inp, out)

    result = check_linearizability(_stale_read(), Explained())
    assert "the register holds 1, the read returned 0" in result.explanation


def test_a_broken_explain_never_hides_the_verdict() -> None:
    def broken(state: int, inp: tuple[Any, ...], out: Any) -> str | None:
        raise RuntimeError("bug in the explanation")

    result = check(_stale_read(), explain=broken)
    assert result.verdict == "illegal"
    assert "is rejected by the spec in that state" in result.explanation


def test_explain_must_be_callable() -> None:
    with pytest.raises(TypeError, match="explain must be a function"):
        check(_stale_read(), explain="why")  # type: ignore[arg-type]

"""DPOR exactness on simulated programs: one complete execution per Mazurkiewicz trace.

Dependency notion (lockstep's): two steps conflict when they touch the same
resource key (same primitive, or checkpoints with the same resource); steps
of one thread are ordered; a thread's start follows its creation; a join
follows the joined thread's end.  Under that notion every pair of operations
on one shared object conflicts, so for checkpoints on one resource the
number of traces equals the number of interleavings of those operations:
2 threads x 2 ops -> C(4,2) = 6 traces, 3 threads x 2 ops -> 6!/(2!2!2!) =
90.  prior-art.md's "2 traces" and "6 traces" are the counts when each
thread's two operations form one critical section (lock acquire/release):
the traces are then the orders of the critical sections, 2! = 2 and 3! = 6,
which is what the lock cases below check.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lockstep.errors import InvalidArgument, InvalidArgumentType
from lockstep.strategies._dpor import DporStrategy

from ._sim import Op, Program, all_traces, canonical, explore


def check_exact(program: Program) -> DporStrategy:
    """DPOR's complete executions are exactly the traces, each once."""
    strategy = DporStrategy()
    exploration = explore(program, strategy)
    assert strategy.exhausted
    explored = {canonical(r) for r in exploration.results}
    expected = all_traces(program)
    assert explored == expected
    assert strategy.complete_executions == len(expected)
    assert strategy.executions == exploration.executions
    assert strategy.executions == strategy.complete_executions + strategy.blocked_executions
    return strategy


def cps(resource: object, n: int) -> list[Op]:
    return [Op("cp", resource) for _ in range(n)]


def critical(lock: object) -> list[Op]:
    return [Op("acq", lock), Op("cp", None), Op("rel", lock)]


def test_independent_threads_need_one_execution() -> None:
    """Threads on different resources: a single trace, a single execution."""
    program = Program.parallel(cps("a", 2), cps("b", 2), cps("c", 2))
    strategy = check_exact(program)
    assert strategy.executions == 1


def test_two_threads_two_ops_on_one_object() -> None:
    """2 x 2 conflicting operations: C(4, 2) = 6 traces."""
    strategy = check_exact(Program.parallel(cps("x", 2), cps("x", 2)))
    assert strategy.complete_executions == math.comb(4, 2) == 6
    assert strategy.blocked_executions == 0


def test_three_threads_two_ops_on_one_object() -> None:
    """3 x 2 conflicting operations: 6!/(2!^3) = 90 traces."""
    strategy = check_exact(Program.parallel(cps("x", 2), cps("x", 2), cps("x", 2)))
    assert strategy.complete_executions == 90
    assert strategy.blocked_executions == 0


def test_two_lock_critical_sections() -> None:
    """Two threads each acquire/release one lock: 2 traces (which goes first)."""
    strategy = check_exact(Program.parallel(critical("L"), critical("L")))
    assert strategy.complete_executions == 2


def test_three_lock_critical_sections() -> None:
    """Three critical sections on one lock: 3! = 6 traces."""
    strategy = check_exact(Program.parallel(critical("L"), critical("L"), critical("L")))
    assert strategy.complete_executions == 6


def test_abba_deadlock_is_explored() -> None:
    """Lock-order inversion: the deadlocking trace is among those explored."""
    program = Program.parallel(
        [Op("acq", "A"), Op("acq", "B"), Op("rel", "B"), Op("rel", "A")],
        [Op("acq", "B"), Op("acq", "A"), Op("rel", "A"), Op("rel", "B")],
    )
    strategy = DporStrategy()
    exploration = explore(program, strategy)
    assert any(r.deadlock for r in exploration.results)
    check_exact(program)


def test_timeouts_are_explored_both_ways() -> None:
    """A timed acquire may time out or wait: both outcomes are explored."""
    program = Program.parallel(critical("L"), [Op("tryacq", "L"), Op("cp", "x"), Op("rel", "L")])
    strategy = check_exact(program)
    kinds = {
        tuple(r.outcome.choices[k].kind for k in range(len(r.outcome.choices)))
        for r in explore(program, DporStrategy()).results
    }
    assert any("timeout" in k for k in kinds)
    assert strategy.complete_executions >= 3


def test_non_blocking_acquire_outcomes_are_all_explored() -> None:
    """acquire(blocking=False) inside or outside the other's critical section."""
    program = Program.parallel(
        [Op("cp", "x"), *critical("L")], [Op("cp", "y"), Op("nbacq", "L"), Op("rel", "L")]
    )
    check_exact(program)


def test_preemption_bound_limits_the_search() -> None:
    """Bound 0 explores only non-preemptive schedules: fewer executions."""
    program = Program.parallel(cps("x", 2), cps("x", 2))
    bounded = DporStrategy(preemption_bound=0)
    exploration = explore(program, bounded)
    assert bounded.exhausted
    assert bounded.complete_executions < 6
    for result in exploration.results:
        assert sum(s.preemption for s in result.outcome.steps) == 0


def test_constructor_validates() -> None:
    """Bad bounds are refused with the value in the message."""
    with pytest.raises(InvalidArgument, match="-1"):
        DporStrategy(preemption_bound=-1)
    with pytest.raises(InvalidArgumentType, match="'2'"):
        DporStrategy(preemption_bound="2")  # type: ignore[arg-type]


def rd(slot: str, shape: str = "keyed") -> Op:
    return Op("rd", (shape, slot))


def wr(slot: str, shape: str = "keyed") -> Op:
    return Op("wr", (shape, slot))


def test_reads_of_one_location_are_independent() -> None:
    """Watched reads commute: three threads reading one key form a single trace."""
    strategy = check_exact(Program.parallel([rd("k")], [rd("k")], [rd("k")]))
    assert strategy.executions == 1


def test_read_and_write_of_one_key_conflict() -> None:
    """`k in d` racing `d[k] = 1`: two traces (which comes first)."""
    strategy = check_exact(Program.parallel([rd("k"), wr("k")], [rd("k"), wr("k")]))
    # r1 w1 | r2 w2 interleavings that differ in conflicting order: the check-then-act race.
    assert strategy.complete_executions == len(
        all_traces(Program.parallel([rd("k"), wr("k")], [rd("k"), wr("k")]))
    )


def test_keys_are_independent_for_reads_but_writes_share_the_order() -> None:
    """A read of k and a write of j commute; writes of k and j do not (insertion order)."""
    assert check_exact(Program.parallel([rd("k")], [wr("j")])).executions == 1
    assert check_exact(Program.parallel([wr("k")], [wr("j")])).complete_executions == 2


def test_whole_container_read_depends_on_every_key_write() -> None:
    """len(d) against d[k] = v: two traces; a key read against clear(): two traces."""
    assert check_exact(Program.parallel([rd("*")], [wr("k")])).complete_executions == 2
    assert check_exact(Program.parallel([rd("k")], [wr("*")])).complete_executions == 2
    assert check_exact(Program.parallel([rd("*")], [rd("k")])).executions == 1


def test_move_to_end_commutes_with_lookups_only() -> None:
    """move_to_end(k) reorders: independent of `k in d`, dependent on writes and len."""
    assert check_exact(Program.parallel([Op("mv", "k")], [Op("rd", ("keyed", "k"))])).executions
    assert check_exact(Program.parallel([Op("mv", "k")], [wr("j")])).complete_executions == 2
    assert check_exact(Program.parallel([Op("mv", "k")], [rd("*")])).complete_executions == 2


def test_attributes_are_separate_locations() -> None:
    """Writes of two attributes commute; read and write of one attribute do not."""
    assert check_exact(Program.parallel([wr("a", "attr")], [wr("b", "attr")])).executions == 1
    assert (
        check_exact(Program.parallel([rd("a", "attr")], [wr("a", "attr")])).complete_executions == 2
    )


def test_reads_between_writes_are_all_reversed() -> None:
    """Two readers and two writers of one attribute: every trace once."""
    check_exact(
        Program.parallel(
            [rd("a", "attr"), wr("a", "attr")],
            [rd("a", "attr")],
            [wr("a", "attr"), rd("a", "attr")],
        )
    )


op_strategy = st.one_of(
    st.sampled_from(["k", "j", "*"]).map(lambda slot: [rd(slot)]),
    st.sampled_from(["k", "j", "*"]).map(lambda slot: [wr(slot)]),
    st.sampled_from(["a", "b"]).map(lambda slot: [rd(slot, "attr")]),
    st.sampled_from(["a", "b"]).map(lambda slot: [wr(slot, "attr")]),
    st.sampled_from(["k", "j"]).map(lambda slot: [Op("mv", slot)]),
    st.sampled_from("xyz").map(lambda r: [Op("cp", r)]),
    st.just([Op("cp", None)]),
    st.sampled_from("LM").map(critical),
    st.sampled_from("LM").map(lambda lock: [Op("tryacq", lock), Op("cp", "x"), Op("rel", lock)]),
    st.sampled_from("LM").map(lambda lock: [Op("nbacq", lock), Op("cp", "y"), Op("rel", lock)]),
)
worker_strategy = st.lists(op_strategy, min_size=1, max_size=2).map(
    lambda blocks: [op for block in blocks for op in block]
)


@given(st.lists(worker_strategy, min_size=1, max_size=3))
@settings(max_examples=60, deadline=None)
def test_random_programs_exactly_one_execution_per_trace(workers: list[list[Op]]) -> None:
    """Random programs: DPOR's complete executions are the traces, each exactly once."""
    program = Program.parallel(*workers)
    if sum(len(w) for w in workers) > 9:
        return  # keep the brute force small
    check_exact(program)

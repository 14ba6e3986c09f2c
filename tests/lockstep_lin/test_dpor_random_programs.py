"""Random small programs on the real runtime: DPOR reaches every outcome exhaustive DFS does.

Each worker runs a few blocks drawn from: a checkpoint on a shared resource, a
critical section, a timed acquire, a non-blocking acquire, an event set or timed
wait, a condition notify or timed wait, and accesses to watched state (a key
lookup, a key store, ``len`` of a watched dict, an unlocked read-modify-write of
a watched attribute). Race reporting is off, so racy programs run to the end.
Workers log what their operations returned; unbounded DFS enumerates every
interleaving (programs too big for it are skipped) and DPOR must produce exactly
the same set of logs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import lockstep
from lockstep.strategies._dpor import DporStrategy

Block = tuple[str, str]

blocks = st.one_of(
    st.tuples(st.just("cp"), st.sampled_from("xy")),
    st.tuples(st.just("critical"), st.sampled_from("LM")),
    st.tuples(st.just("timed"), st.sampled_from("LM")),
    st.tuples(st.just("try"), st.sampled_from("LM")),
    st.tuples(st.just("set"), st.just("E")),
    st.tuples(st.just("wait"), st.just("E")),
    st.tuples(st.just("notify"), st.just("C")),
    st.tuples(st.just("cwait"), st.just("C")),
    st.tuples(st.just("get"), st.sampled_from("kj")),
    st.tuples(st.just("put"), st.sampled_from("kj")),
    st.tuples(st.just("len"), st.just("d")),
    st.tuples(st.just("incr"), st.sampled_from("ab")),
)
programs = st.lists(st.lists(blocks, min_size=1, max_size=2), min_size=2, max_size=2)


class _Counters:
    def __init__(self) -> None:
        self.a = 0
        self.b = 0


def build(
    program: list[list[Block]], sink: list[tuple[tuple[Any, ...], ...]]
) -> Callable[[], None]:
    def scenario() -> None:
        locks = {"L": lockstep.threading.Lock(), "M": lockstep.threading.Lock()}
        event = lockstep.threading.Event()
        cond = lockstep.threading.Condition()
        box = {"x": 0, "y": 0}
        logs: list[list[Any]] = [[] for _ in program]
        table = lockstep.watch({"k": 0})
        counters = lockstep.watch(_Counters())

        def run(k: int) -> None:
            log = logs[k]
            for kind, arg in program[k]:
                if kind == "cp":
                    lockstep.checkpoint(f"touch {arg}", resource=arg)
                    box[arg] += 1
                    log.append(box[arg])
                elif kind == "critical":
                    with locks[arg]:
                        lockstep.checkpoint("inside", resource="x")
                        box["x"] += 1
                        log.append(box["x"])
                elif kind in ("timed", "try"):
                    lock = locks[arg]
                    got = lock.acquire(timeout=0.5) if kind == "timed" else lock.acquire(False)
                    log.append(got)
                    if got:
                        lock.release()
                elif kind == "set":
                    event.set()
                elif kind == "wait":
                    log.append(event.wait(timeout=0.5))
                elif kind == "get":
                    log.append(table.get(arg))
                elif kind == "put":
                    table[arg] = k
                elif kind == "len":
                    log.append(len(table))
                elif kind == "incr":
                    value = getattr(counters, arg)
                    setattr(counters, arg, value + 1)
                    log.append(value)
                elif kind == "notify":
                    with cond:
                        cond.notify()
                else:
                    with cond:
                        log.append(cond.wait(timeout=0.5))

        threads = [lockstep.spawn(run, k) for k in range(len(program))]
        for t in threads:
            t.join()
        sink.append(tuple(tuple(log) for log in logs))

    return scenario


@given(programs)
@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_dpor_matches_exhaustive_dfs(program: list[list[Block]]) -> None:
    """Same outcomes as every interleaving, with no more executions."""
    by_dfs: list[tuple[tuple[Any, ...], ...]] = []
    dfs = lockstep.explore(
        build(program, by_dfs),
        strategy=lockstep.DFSStrategy(preemption_bound=None),
        budget=3000,
        shrink=False,
        races=False,
    )
    assert dfs.ok, dfs.failure
    assume(dfs.exhausted)
    by_dpor: list[tuple[tuple[Any, ...], ...]] = []
    dpor = lockstep.explore(
        build(program, by_dpor), strategy=DporStrategy(), budget=3000, shrink=False, races=False
    )
    assert dpor.ok, dpor.failure
    assert dpor.exhausted
    assert set(by_dpor) == set(by_dfs)
    assert dpor.executions <= dfs.executions

"""The core agrees with the sequential spec (models_spec.spec) on random histories.

Single-threaded differential test: the same operations run on the real stack
(at decorator depths 0-3, with scripted load/unload failures, memory
pressure, pins, leases and aliases) and on the spec; every outcome, the exact
LRU order and the pins must agree after every step. Concurrency is checked
elsewhere (tests/core_threads, stateful_tests).
"""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models_spec.adapter import CoreAdapter
from models_spec.fakes import Script, ScriptedProbe, ScriptedRegistry
from models_spec.spec import apply, encode_outcome, initial_state

IDS = ["a", "b", "c", "d"]
ANY_ID = st.sampled_from([*IDS, "x"])
OPERATIONS = st.one_of(
    st.tuples(
        st.just("add"), st.sampled_from(IDS), st.sampled_from([None, "x", "y"]), st.booleans()
    ),
    st.tuples(st.just("remove"), ANY_ID),
    st.tuples(st.just("clear")),
    st.tuples(st.just("refresh"), ANY_ID),
    st.tuples(st.just("pin"), ANY_ID),
    st.tuples(st.just("unpin"), ANY_ID),
    st.tuples(st.just("lease"), ANY_ID),
    st.tuples(st.just("release")),
    st.tuples(st.just("lru")),
    st.tuples(st.just("keys")),
)
Lease = tuple[str, AbstractContextManager[Any]]


def run_real(stack: Any, op: tuple[Any, ...], leases: list[Lease]) -> object:
    kind = op[0]
    if kind == "add":
        return stack.add_model(op[1], model_id_alias=op[2], pin=op[3])
    if kind == "lease":
        context = stack.lease(op[1])
        model = context.__enter__()
        leases.append((op[1], context))
        return model.token
    if kind == "lru":
        return tuple(stack.lru_order())
    if kind == "keys":
        return tuple(sorted(stack.keys()))
    method = {
        "remove": stack.remove,
        "clear": stack.clear,
        "refresh": stack.refresh,
        "pin": stack.pin_model,
        "unpin": stack.unpin_model,
    }[kind]
    return method(*op[1:])


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=st.lists(OPERATIONS, max_size=30),
    seed=st.integers(0, 1000),
    max_size=st.integers(1, 3),
    depth=st.integers(0, 3),
    memory=st.booleans(),
)
def test_core_matches_sequential_spec(
    ops: list[tuple[Any, ...]], seed: int, max_size: int, depth: int, memory: bool
) -> None:
    """Outcomes, LRU order and pins agree with the spec after every operation."""
    logging.getLogger("modelmanager").setLevel(logging.ERROR)  # overflow warnings are expected
    script = Script.from_seed(seed, p_load=0.2, p_unload=0.2)
    if memory:
        script.set_memory(0, [None, 0.1, 0.9, 0.1, 0.1, 0.9, None] * 20)
    registry = ScriptedRegistry(script)
    probe = ScriptedProbe(script) if memory else None
    stack = CoreAdapter(depth).build(
        registry, max_size=max_size, memory_probe=probe, lock_timeout=0, queue_lock_timeout=0
    )
    state = initial_state(max_size=max_size, script=script, memory_threshold=0.5 if memory else 0)
    leases: list[Lease] = []
    try:
        for op in ops:
            if op[0] == "release":
                if leases:
                    resolved_id, context = leases.pop(0)
                    context.__exit__(None, None, None)
                    _, state = apply(state, ("release", resolved_id))
                continue
            expected, state = apply(state, op)
            try:
                got = encode_outcome(value=run_real(stack, op, leases))
            except Exception as error:
                got = encode_outcome(error=error)
            assert got == expected, (op, stack)
            assert tuple(stack.lru_order()) == state.lru, op
            assert stack.pinned() == state.pins, op
            assert stack.lifecycle_snapshot() == {}
    finally:
        for _, context in leases:
            context.__exit__(None, None, None)
        logging.getLogger("modelmanager").setLevel(logging.NOTSET)

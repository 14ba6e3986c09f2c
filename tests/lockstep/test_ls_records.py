"""The scheduler's per-step records: fast constructors and lazily built step records."""

from __future__ import annotations

import attrs
import pytest

from lockstep import explore, spawn
from lockstep._fastattrs import fast_constructor
from lockstep._schedule import Choice
from lockstep._trace import LazySteps, OpDescriptor, PrimitiveId, StepRecord
from lockstep.lowlevel import ThreadState
from lockstep.strategies import Capabilities, ExecutionOutcome, StepContext


def _record() -> StepRecord:
    op = OpDescriptor("Lock.acquire", PrimitiveId("Lock", 1), "Lock#1", "f.py:3")
    return StepRecord(
        index=4,
        thread=1,
        thread_name="t",
        op=op,
        choice=Choice.of(1),
        preemption=True,
        enabled=frozenset({0, 1}),
        timeouts=frozenset(),
        pending=((1, op),),
        clock=2.5,
    )


def test_fast_constructor_builds_the_same_frozen_value(backend):
    """Positional fast construction equals the regular one and stays frozen."""
    regular = _record()
    fields = [getattr(regular, field.name) for field in attrs.fields(StepRecord)]
    fast = fast_constructor(StepRecord)(*fields)
    assert fast == regular
    assert hash(fast.op) == hash(regular.op)
    assert repr(fast) == repr(regular)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        fast.index = 5  # type: ignore[misc]
    op = fast_constructor(OpDescriptor)("checkpoint", None, "x", "?")
    assert op == OpDescriptor("checkpoint", None, "x")
    fields = ("T1", True, False, "Event.wait Event#1", True, False, True)
    state = fast_constructor(ThreadState)(*fields)
    assert state == ThreadState(*fields)
    assert repr(state) == repr(ThreadState(*fields))


def test_fast_constructor_refuses_classes_it_cannot_build_exactly(backend):
    """Only slotted attrs classes without validators, converters or post-init."""

    @attrs.frozen(slots=True)
    class Checked:
        x: int = attrs.field(validator=attrs.validators.instance_of(int))

    @attrs.frozen(slots=False)
    class Unslotted:
        x: int

    with pytest.raises(TypeError, match="validator"):
        fast_constructor(Checked)
    with pytest.raises(TypeError, match="not a slotted attrs class"):
        fast_constructor(Unslotted)
    with pytest.raises(TypeError, match="not a slotted attrs class"):
        fast_constructor(dict)


def test_lazy_steps_behave_like_the_tuple_and_build_once(backend):
    """len is free; indexing, slicing, iteration, equality, hash as for the tuple."""
    built = []
    records = (_record(), _record())

    def build() -> tuple[StepRecord, ...]:
        built.append(1)
        return records

    lazy = LazySteps(2, build)
    assert len(lazy) == 2
    assert built == []
    assert lazy[0] == records[0]
    assert lazy[:1] == records[:1]
    assert list(lazy) == list(records)
    assert lazy == records
    assert lazy == list(records)
    assert lazy != records[:1]
    assert hash(lazy) == hash(records)
    assert repr(lazy) == repr(records)
    assert built == [1]


def test_outcome_steps_are_the_trace_steps(backend):
    """What end_execution reads is exactly the execution's trace."""
    outcomes: list[ExecutionOutcome] = []

    class Keep:
        capabilities = Capabilities(name="keep")

        def begin_execution(self) -> None:
            pass

        def choose(self, choices, step: StepContext) -> Choice:
            assert isinstance(step, StepContext)
            return choices[-1]

        def end_execution(self, outcome: ExecutionOutcome) -> bool:
            outcomes.append(outcome)
            return False

    def scenario():
        spawn(lambda: None).join()

    result = explore(scenario, strategy=Keep(), budget=1)
    assert result.failure is None
    (outcome,) = outcomes
    assert len(outcome.steps) == len(outcome.choices) == result.steps
    assert [s.choice for s in outcome.steps] == list(outcome.choices)
    assert outcome.steps == tuple(outcome.steps)


def test_step_context_is_an_immutable_record(backend):
    """StepContext: named fields, immutable, is_preemption and thread_count."""
    ctx = StepContext(
        step=3,
        current=1,
        enabled=frozenset({0, 1}),
        timeouts=frozenset(),
        pending={},
        thread_names=("main", "t"),
        clock=0.0,
    )
    assert ctx.thread_count == 2
    assert ctx.is_preemption(Choice.of(0))
    assert not ctx.is_preemption(Choice.of(1))
    with pytest.raises(AttributeError):
        ctx.step = 4  # type: ignore[misc]

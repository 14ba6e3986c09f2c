"""Strategy capabilities: one typed record in the protocol; a misspelt one is an error."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from ls_helpers import FirstChoiceMethods
from samples.cli_scenarios import correct

import lockstep
from lockstep import InvalidArgument
from lockstep.errors import InvalidArgumentType
from lockstep.strategies import (
    Capabilities,
    Choice,
    CountingStrategy,
    DeterminismCheck,
    DFSStrategy,
    DporStrategy,
    ExecutionOutcome,
    PCTStrategy,
    RandomStrategy,
    StepContext,
)


class _FirstChoice:
    """Runs the first choice; explores the one interleaving that gives."""

    capabilities = Capabilities(name="first", systematic=True, preemption_bound=0)

    def begin_execution(self) -> None:
        """Nothing to reset."""

    def choose(self, choices: Sequence[Choice], step: StepContext) -> Choice:
        return choices[0]

    def end_execution(self, outcome: ExecutionOutcome) -> bool:
        return False


def test_a_misspelt_capability_is_an_error_where_it_is_declared():
    """Declaring ``systemtic`` fails when the class is defined, naming the fix."""
    with pytest.raises(InvalidArgument) as raised:

        class _Misspelt:
            capabilities = Capabilities(systemtic=True)

    text = str(raised.value)
    assert "Capabilities has no field 'systemtic'; did you mean 'systematic'?" in text
    assert "known: name, preemption_bound, probability_bound, reduces, seed, systematic" in text


@pytest.mark.parametrize(
    ("fields", "error", "message"),
    [
        ({"systematic": 1}, InvalidArgumentType, "systematic must be True or False, got 1"),
        ({"seed": "7"}, InvalidArgumentType, "seed must be an int or None, got '7'"),
        ({"name": 3}, InvalidArgumentType, "name must be a str or None, got 3"),
        ({"preemption_bound": -1}, InvalidArgument, "preemption_bound must be >= 0"),
        ({"probability_bound": 2.0}, InvalidArgument, r"probability_bound must be in \[0, 1\]"),
        ({"reduces": True}, InvalidArgument, "reduces=True\\) needs systematic=True"),
    ],
)
def test_capability_values_are_validated(fields, error, message):
    """A wrong type or value is refused when the record is built."""
    with pytest.raises(error, match=message):
        Capabilities(**fields)


def test_a_strategy_without_capabilities_is_refused_saying_what_to_declare():
    """The three methods alone no longer make a Strategy: nothing defaults unnoticed."""

    class NoCapabilities(FirstChoiceMethods):
        pass

    with pytest.raises(InvalidArgumentType, match=r"capabilities = lockstep\.strategies"):
        lockstep.explore(correct, strategy=NoCapabilities(), budget=1)

    class Untyped(NoCapabilities):
        capabilities = ("systematic", True)

    with pytest.raises(InvalidArgumentType, match=r"Untyped\.capabilities must be a lockstep"):
        lockstep.explore(correct, strategy=Untyped(), budget=1)  # type: ignore[arg-type]


def test_declared_capabilities_decide_what_the_verdict_claims():
    """A custom strategy declaring itself systematic gets a completeness claim, under
    its declared name; the schedule records the declared name and seed."""
    result = lockstep.explore(correct, strategy=_FirstChoice(), budget=5)
    assert result.verdict.coverage == "complete"
    assert result.verdict.preemption_bound == 0
    assert result.strategy == "first"
    sampled = lockstep.explore(correct, strategy=RandomStrategy(seed=4), budget=2, progress=False)
    assert sampled.verdict.coverage == "sampled"
    assert sampled.seed == 4


def test_the_built_in_strategies_declare_their_capabilities():
    """Each built-in strategy says what it is; PCT's bound is known after a run."""
    assert RandomStrategy(seed=3).capabilities == Capabilities(name="random", seed=3)
    assert DFSStrategy(preemption_bound=1).capabilities == Capabilities(
        name="dfs", systematic=True, preemption_bound=1
    )
    assert DporStrategy().capabilities == Capabilities(name="dpor", systematic=True, reduces=True)
    pct = PCTStrategy(seed=2)
    assert pct.capabilities == Capabilities(name="pct", seed=2)
    lockstep.explore(correct, strategy=pct, budget=2, progress=False)
    bound = pct.capabilities.probability_bound
    assert bound is not None
    assert 0.0 < bound <= 1.0


def test_wrappers_forward_every_capability_of_the_strategy_they_wrap():
    """Counting and determinism checking keep the inner search's claims (reduces
    included: a wrapped DPOR still says its claim leaves out unordered locations)."""
    dpor = DporStrategy(preemption_bound=2)
    assert CountingStrategy(dpor).capabilities == dpor.capabilities
    checked = DeterminismCheck(dpor).capabilities
    assert checked == dpor.capabilities.replace(name="dpor+determinism")
    with pytest.raises(InvalidArgument, match="did you mean 'reduces'"):
        dpor.capabilities.replace(reduce=False)

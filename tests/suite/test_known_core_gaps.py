"""Known disagreements between the core and the spec that a search finds, pinned.

Each test runs the search that finds the disagreement and is marked
``xfail(strict=True)``: while the gap is open the search fails as described
(the test is an expected failure); the fix makes the search pass, the strict
mark then fails the test, and the mark goes with the fix. The default
``lockstep check`` (seed 0) does not reach these: they are listed here so a
passing check is never read as covering them.
"""

from __future__ import annotations

import pytest

from models_spec.adapter import CoreAdapter
from models_spec.catalogue import load
from models_spec.check import explore_scenario


@pytest.mark.xfail(
    strict=True,
    reason=(
        "I15 on B17: a cold add admits in rounds without holding its slot between them; "
        "after its first round evicted X, an acquire reloads X into the freed room, and "
        "the add's second round evicts the model added meanwhile as well. The spec's "
        "admission is one instant that reserves the slot, so no order explains the "
        "final keys. Open: the core should keep its slot across rounds, or the spec "
        "should model a slot-less second round."
    ),
)
@pytest.mark.parametrize("seed", [2, 4])
def test_b17_one_add_evicts_twice(seed: int) -> None:
    scenario = load().bug("B17").scenario
    outcome = explore_scenario(
        scenario, CoreAdapter(0), strategy="pct", seed=seed, budget=150, shrink=False
    )
    assert outcome.failure is None, str(outcome.failure)

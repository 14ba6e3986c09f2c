"""Every regression scenario fails on a core variant that has its bug.

This is what makes the regression tests worth having: each one is run
against a deliberately broken variant (``broken.py``) and must fail with the
message of the invariant it guards, not hang and not pass.
"""

from __future__ import annotations

import pytest

from .broken import BROKEN_CASES, BrokenCase
from .helpers import FakeRegistry
from .scenarios import SCENARIOS


def test_every_scenario_has_a_broken_variant() -> None:
    """No regression scenario goes without a proof that it can fail."""
    assert {case.scenario for case in BROKEN_CASES} == set(SCENARIOS)


@pytest.mark.parametrize("case", BROKEN_CASES, ids=lambda case: case.id)
def test_scenario_catches_variant(case: BrokenCase, registry: FakeRegistry) -> None:
    """The scenario fails on the variant with the invariant's own message."""
    scenario, _ = SCENARIOS[case.scenario]
    with pytest.raises(AssertionError, match=case.message):
        scenario(registry, case.build(registry))


@pytest.mark.parametrize("case", BROKEN_CASES, ids=lambda case: case.id)
def test_variant_works_sequentially(case: BrokenCase, registry: FakeRegistry) -> None:
    """Each variant is broken only under concurrency: one thread sees nothing wrong.

    So a scenario failing on it is caught by the interleaving, not by some
    unrelated breakage of the variant.
    """
    stack = case.build(registry)
    stack.add_model("X")
    stack.add_model("X")
    with stack.lease("X") as model:
        assert model.model_id == "X"
    with stack.acquire("Y") as model:
        assert model.model_id == "Y"
    stack.remove("Y")
    stack.remove("X")
    assert stack.keys() == []
    assert stack.lifecycle_snapshot() == {}
    assert stack.lease_counts() == {}
    if hasattr(stack, "lru_order"):
        assert stack.lru_order() == []
    assert registry.ghost.constructor_calls == {"X": 1, "Y": 1}
    assert all(model.successful_clears == 1 for model in registry.ghost.constructed())

"""The core passes every named scenario (depth 0) and a representative subset at depths 0-3."""

from __future__ import annotations

import pytest

from models_spec._check.check import explore_scenario
from models_spec._harness.scenario_index import named_scenarios
from models_spec.adapter import BareManagerAdapter, CoreAdapter
from models_spec.scenarios import random_scenario

NAMED = named_scenarios()

REPRESENTATIVE = (
    "B4-warm-fast-path-bypass",
    "B8-failure-erases-concurrent-success",
    "B14-admission-overshoot",
    "B16-error-masking",
    "B17-unload-under-running-model",
)


@pytest.mark.parametrize("scenario_id", list(NAMED))
def test_core_depth0_passes_named_scenario(scenario_id: str) -> None:
    """PCT and DPOR find nothing on Cache(Manager)."""
    for strategy in ("pct", "dpor"):
        outcome = explore_scenario(NAMED[scenario_id], CoreAdapter(0), strategy=strategy, budget=15)
        assert outcome.failure is None, str(outcome.failure)
        assert outcome.executions >= 1


@pytest.mark.parametrize("depth", [1, 2, 3])
@pytest.mark.parametrize("scenario_id", REPRESENTATIVE)
def test_core_deeper_stacks_pass(scenario_id: str, depth: int) -> None:
    """Pass-through decorators around and inside the cache change nothing."""
    outcome = explore_scenario(NAMED[scenario_id], CoreAdapter(depth), strategy="pct", budget=10)
    assert outcome.failure is None, str(outcome.failure)


@pytest.mark.parametrize(
    "scenario_id", [s.id for s in NAMED.values() if s.supported_by(BareManagerAdapter())]
)
def test_bare_manager_passes_supported_scenarios(scenario_id: str) -> None:
    """The plain ModelManager passes the scenarios it has the capabilities for."""
    outcome = explore_scenario(NAMED[scenario_id], BareManagerAdapter(), strategy="pct", budget=20)
    assert outcome.failure is None, str(outcome.failure)


def test_bare_manager_skips_scenarios_needing_an_lru() -> None:
    """A missing capability is a skip with the reason, never a pass."""
    outcome = explore_scenario(NAMED["B13-phantom-from-refresh"], BareManagerAdapter())
    assert outcome.skipped is not None
    assert "lru" in outcome.skipped
    assert outcome.executions == 0


@pytest.mark.parametrize("seed", [2, 21])
def test_core_random_history_is_linearizable(seed: int) -> None:
    """random-2 and random-21 (no scripted failure at all) under PCT: linearizable."""
    outcome = explore_scenario(random_scenario(seed), CoreAdapter(0), strategy="pct", budget=40)
    assert outcome.failure is None, str(outcome.failure)

"""The full-cache policy cells can fail: a cache that does not do what its
``on_full`` says is rejected by the spec judging it under that policy."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from models_spec._check.check import explore_scenario
from models_spec._harness.scenario_index import default_scenarios
from models_spec.adapter import CoreAdapter


@attrs.define
class _Mislabelled(CoreAdapter):
    """Claims ``on_full`` (the spec judges by it) but builds a cache with ``actual``."""

    actual: str = "proceed"

    def build(self, registry: Any, **kwargs: Any) -> Any:
        claimed, self.on_full = self.on_full, self.actual
        try:
            return super().build(registry, **kwargs)
        finally:
            self.on_full = claimed


@pytest.mark.parametrize(
    ("claimed", "actual"), [("wait", "proceed"), ("refuse", "proceed"), ("proceed", "refuse")]
)
def test_a_cache_with_another_policy_is_caught(claimed: str, actual: str) -> None:
    scenario = dict(default_scenarios())["B22-bound-not-restored"]
    adapter = _Mislabelled(0, name=f"{actual}-as-{claimed}", on_full=claimed, actual=actual)
    outcome = explore_scenario(scenario, adapter, strategy="pct", budget=60, shrink=False)
    assert outcome.failure is not None


@pytest.mark.parametrize("policy", ["wait", "refuse", "proceed"])
def test_the_core_passes_under_each_policy(policy: str) -> None:
    scenario = dict(default_scenarios())["B22-bound-not-restored"]
    outcome = explore_scenario(
        scenario, CoreAdapter(0, on_full=policy), strategy="pct", budget=60, shrink=False
    )
    assert outcome.failure is None, str(outcome.failure)

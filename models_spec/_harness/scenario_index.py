"""Every scenario the suite knows, by id: internal to models_spec.

The named scenarios belong to their bugs' modules (the catalogue), the specified
ones and the seeded families to `models_spec.scenarios`.  This index sits above
both, so that `scenarios` (which every bug module imports) never imports the
catalogue (which imports the bug modules): the import graph has no circle.
"""

from __future__ import annotations

from collections.abc import Mapping

from models_spec._harness.catalogue import load
from models_spec.scenarios import (
    Scenario,
    ScenarioError,
    basic_scenario,
    basic_scenarios,
    mixed_scenario,
    random_scenario,
    random_scenarios,
    specified_scenarios,
)

__all__ = ["default_scenarios", "get_scenario", "named_scenarios"]


def named_scenarios() -> Mapping[str, Scenario]:
    """The named scenarios by id, one per bug, in bug order (from the bug catalogue)."""
    return load().scenarios


def default_scenarios() -> Mapping[str, Scenario]:
    """Every scenario the suite runs by default: the named ones, the `SPECIFIED`
    ones, three random ones, then two basic ones (no capability needed)."""
    return {
        **named_scenarios(),
        **specified_scenarios(),
        **{s.id: s for s in random_scenarios()},
        **{s.id: s for s in basic_scenarios()},
    }


def get_scenario(scenario_id: str) -> Scenario:
    """The scenario called `scenario_id` (named, ``random-<seed>``, ``basic-<seed>`` or
    ``mixed-<seed>``).

    Raises `ScenarioError` naming the known ids.
    """
    named = {**named_scenarios(), **specified_scenarios()}
    if scenario_id in named:
        return named[scenario_id]
    for prefix, make in (
        ("random-", random_scenario),
        ("basic-", basic_scenario),
        ("mixed-", mixed_scenario),
    ):
        if isinstance(scenario_id, str) and scenario_id.startswith(prefix):
            try:
                return make(int(scenario_id.removeprefix(prefix)))
            except ValueError:
                pass
    raise ScenarioError(
        f"unknown scenario {scenario_id!r}; known: {', '.join(named)}, random-<seed>, "
        "basic-<seed> or mixed-<seed>"
    )

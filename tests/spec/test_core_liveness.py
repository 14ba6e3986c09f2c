"""The core keeps the liveness and lease-scope invariants on the scenarios of B18 and B19.

Fast, fixed-budget lockstep searches on the bare manager (where the lease
give-back and ``acquire`` live) and on the cache: a lost wake-up (I17) or a
lease outliving its block (I18) in the core fails them.  These are the
checks that kill the mutants the concurrency operators of
``tools/mutation/concurrency.py`` write in those paths (``notify_all`` ->
``notify``; a ``try/finally`` dropped).
"""

from __future__ import annotations

import pytest

from models_spec._check.check import explore_scenario
from models_spec._harness.catalogue import load
from models_spec.adapter import BareManagerAdapter, CoreAdapter, ManagerAdapter


@pytest.mark.parametrize(
    ("bug", "adapter", "budget"),
    [
        ("B18", BareManagerAdapter(), 120),
        ("B19", BareManagerAdapter(), 20),
        ("B19", CoreAdapter(0), 20),
    ],
    ids=["B18-bare", "B19-bare", "B19-cache"],
)
def test_the_core_keeps_liveness_and_lease_scope(
    bug: str, adapter: ManagerAdapter, budget: int
) -> None:
    """PCT and random within `budget`: no failure (I17 and I18 among the invariants)."""
    scenario = load().bug(bug).scenario
    for strategy in ("pct", "random"):
        outcome = explore_scenario(
            scenario, adapter, strategy=strategy, budget=budget, shrink=False
        )
        assert outcome.failure is None, str(outcome.failure)
        assert outcome.executions == budget

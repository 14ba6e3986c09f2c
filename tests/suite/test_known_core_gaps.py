"""Disagreements between the core and the spec that a search found, pinned.

While a gap is open its test runs the search that finds it and is marked
``xfail(strict=True)``; the fix makes the search pass, the strict mark then
fails the test, and the mark goes with the fix: the test stays as the
regression. The default ``lockstep check`` (seed 0) does not reach these
schedules, so they are listed here and never read as covered by it.

No gap is open. Closed:

* I15/I11 on B17 (one add evicting twice): a cold add made room in rounds
  without holding its slot between them, so a victim reloaded in between
  took the freed room and the add's next round evicted a second model; and
  a restoration that found its victim's lifecycle busy gave up, leaving the
  bound to nobody. The add now holds its slot across rounds, a restoration
  waits for a busy victim holding nothing, and a removal restores when it
  ends (``docs/cache-design.md``).
"""

from __future__ import annotations

import pytest

from models_spec.adapter import CoreAdapter
from models_spec.catalogue import load
from models_spec.check import explore_scenario


@pytest.mark.parametrize("seed", [2, 4])
def test_b17_one_add_never_evicts_twice(seed: int) -> None:
    """The PCT seeds that found the B17 gap, on the core: no failure."""
    scenario = load().bug("B17").scenario
    outcome = explore_scenario(
        scenario, CoreAdapter(0), strategy="pct", seed=seed, budget=150, shrink=False
    )
    assert outcome.failure is None, str(outcome.failure)

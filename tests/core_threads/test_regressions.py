"""Each reported interleaving (B1-B4, B7, B8, B14, B15, B17) against the core.

The scenarios live in ``scenarios.py``; ``test_broken_variants.py`` proves
each one fails on a core variant that has the bug it guards against.
"""

from __future__ import annotations

import pytest

from .helpers import FakeRegistry
from .scenarios import SCENARIOS


@pytest.mark.parametrize("depth", [0, 2], ids=["direct", "nested"])
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_core_keeps_invariant(name: str, depth: int, registry: FakeRegistry) -> None:
    """The core keeps the scenario's invariant, directly and through pass-through layers."""
    scenario, build = SCENARIOS[name]
    scenario(registry, build(registry, depth=depth))

"""B17 unload under a running model: `remove` does not wait for leases.

Bug path: `ModelManager._wait_for_leases` (one override, a no-op).  A
removal runs `clear_cache` while an inference holds a lease on the model and
uses it (I13).
"""

from __future__ import annotations

from modelmanager import ModelManager
from models_spec.bugs._support import cache_over_manager
from models_spec.catalogue import Bug, Variant
from models_spec.scenarios import Op, Scenario, Setup

__all__ = ["BUG", "NoLeaseDrainManager"]


class NoLeaseDrainManager(ModelManager):
    """Unloads without waiting for leases to be given back (upstream has no leases)."""

    def _wait_for_leases(self, resolved_id: str) -> None:
        return None


BUG = Bug(
    id="B17",
    title="unload under a running model",
    story=(
        "U leases X and runs an inference on it; R removes X without waiting for the "
        "lease to be given back: clear_cache runs while the model is in use (I13)."
    ),
    scenario=Scenario(
        "B17-unload-under-running-model",
        ("B17",),
        "remove(X) never runs clear_cache while an inference holds a lease on X",
        [("U", [Op("lease", "X")]), ("R", [Op("remove", "X")])],
        Setup(max_size=2, preload=("X",)),
        needs=frozenset({"leases"}),
    ),
    variants=Variant(cache_over_manager(manager_cls=NoLeaseDrainManager)),
    breaks=("I3", "I13", "I15"),
    caught_by=("pct", "dpor", "random"),
)

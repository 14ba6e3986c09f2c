"""B17 unload under a running model: `remove` does not wait for leases.

Bug path: `ModelManager._wait_for_leases` (one override, a no-op).  A
removal runs `clear_cache` while an inference holds a lease on the model and
uses it (I13).
"""

from __future__ import annotations

from modelmanager import ModelManager
from models_spec.variants._base import VariantAdapter, cache_over_manager

__all__ = ["BUG", "NoLeaseDrainManager", "adapter"]

BUG = "B17"


class NoLeaseDrainManager(ModelManager):
    """Unloads without waiting for leases to be given back (upstream has no leases)."""

    def _wait_for_leases(self, resolved_id: str) -> None:
        return None


def adapter() -> VariantAdapter:
    """`Cache(NoLeaseDrainManager)`."""
    return VariantAdapter(
        BUG,
        "variant-B17-unload-under-lease",
        __name__,
        cache_over_manager(manager_cls=NoLeaseDrainManager),
    )

"""B3 dispose-after-release: the entry is deleted right after the lock is released.

Bug path: `LifecycleTable.hold`'s exit (in `_lifecycle.RetiringTable`).  A
waiter that already holds a reference to L1 acquires it after the release
while a newcomer creates L2: two constructors at once (I2).
"""

from __future__ import annotations

from models_spec.variants._base import BARE_CAPABILITIES, VariantAdapter, bare_manager
from models_spec.variants._lifecycle import RetiringTable, manager_with

__all__ = ["BUG", "RetireAfterRelease", "adapter"]

BUG = "B3"


class RetireAfterRelease(RetiringTable):
    """Every outermost holder retires the entry just after releasing its lock."""

    def retire_after_release(self, failed: bool) -> bool:
        return True


def adapter() -> VariantAdapter:
    """A plain `ModelManager` (where the bug lives) with the dispose-after-release table."""
    return VariantAdapter(
        BUG,
        "variant-B3-dispose-after-release",
        __name__,
        bare_manager(manager_with(RetireAfterRelease)),
        BARE_CAPABILITIES,
    )

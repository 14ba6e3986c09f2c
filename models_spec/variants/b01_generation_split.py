"""B1 remove/add generation split: the holder deletes the id's lock entry while holding it.

Bug path: `LifecycleTable.hold` (the only override, in `_lifecycle.RetiringTable`).
A waiter W that already found generation L1 waits on it while a newcomer N,
finding no entry, creates L2 and constructs; when the remover releases L1, W
constructs too (I2).  The manager subclass only installs the table.
"""

from __future__ import annotations

from models_spec.variants._base import BARE_CAPABILITIES, VariantAdapter, bare_manager
from models_spec.variants._lifecycle import RetiringTable, manager_with

__all__ = ["BUG", "RetireWhileHolding", "adapter"]

BUG = "B1"


class RetireWhileHolding(RetiringTable):
    """Every outermost holder deletes the entry before releasing the lock (upstream)."""

    def retire_while_holding(self, failed: bool) -> bool:
        return True


def adapter() -> VariantAdapter:
    """A plain `ModelManager` (where the bug lives) with the retiring table."""
    return VariantAdapter(
        BUG,
        "variant-B1-generation-split",
        __name__,
        bare_manager(manager_with(RetireWhileHolding)),
        BARE_CAPABILITIES,
    )

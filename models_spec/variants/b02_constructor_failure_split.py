"""B2 constructor-failure split: a failed holder deletes the entry before releasing.

Bug path: `LifecycleTable.hold`'s error exit (in `_lifecycle.RetiringTable`).
H's constructor raises; its error path retires L1 while W waits on it; N
creates L2 and constructs; W then constructs on L1 (I2).
"""

from __future__ import annotations

from models_spec.variants._base import BARE_CAPABILITIES, VariantAdapter, bare_manager
from models_spec.variants._lifecycle import RetiringTable, manager_with

__all__ = ["BUG", "RetireOnFailure", "adapter"]

BUG = "B2"


class RetireOnFailure(RetiringTable):
    """The holder retires the entry before releasing only when its block raised."""

    def retire_while_holding(self, failed: bool) -> bool:
        return failed


def adapter() -> VariantAdapter:
    """A plain `ModelManager` (where the bug lives) with the table that retires on failure."""
    return VariantAdapter(
        BUG,
        "variant-B2-constructor-failure-split",
        __name__,
        bare_manager(manager_with(RetireOnFailure)),
        BARE_CAPABILITIES,
    )

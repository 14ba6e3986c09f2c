"""B12 lock-table leak: `remove` of a never-loaded id leaves a lifecycle entry.

Bug path: `ModelManager.remove` (one override).  Upstream looks the id's
lock up (creating it) and returns early without deleting it; here the early
return keeps a reservation nobody releases, so the table grows with every
unknown id removed (I9 at quiescence).
"""

from __future__ import annotations

from modelmanager import ModelManager
from models_spec._harness.catalogue import Bug, Variant
from models_spec.bugs._support import cache_over_manager
from models_spec.scenarios import Op, Scenario, Setup

__all__ = ["BUG", "LeakyRemoveManager"]


class LeakyRemoveManager(ModelManager):
    """Removing an unknown id creates its lock entry and never retires it."""

    def remove(self, model_id: str, delete_from_disk: bool = True) -> None:
        if model_id not in self:
            self._lifecycle._reserve(model_id)  # the entry upstream creates and keeps
            return
        super().remove(model_id, delete_from_disk)


BUG = Bug(
    id="B12",
    title="lock-table leak",
    story=(
        "R removes Y, which was never loaded: the lookup creates Y's lock entry and "
        "returns early without deleting it. The lifecycle table grows with every "
        "unknown id removed (I9 at quiescence)."
    ),
    scenario=Scenario(
        "B12-lock-table-leak",
        ("B12",),
        "remove of a never-loaded id leaves nothing behind (no per-id lock or entry)",
        [("R", [Op("remove", "Y")]), ("A", [Op("add", "X")])],
        Setup(max_size=2),
        needs=frozenset({"lifecycle"}),
    ),
    variants=Variant(cache_over_manager(manager_cls=LeakyRemoveManager)),
    breaks=("I9",),
    caught_by=("pct", "dpor", "random"),
)

"""B12 lock-table leak: `remove` of a never-loaded id leaves a lifecycle entry.

Bug path: `ModelManager.remove` (one override).  Upstream looks the id's
lock up (creating it) and returns early without deleting it; here the early
return keeps a reservation nobody releases, so the table grows with every
unknown id removed (I9 at quiescence).
"""

from __future__ import annotations

from modelmanager import ModelManager
from modelmanager._validation import check_bool, check_model_id
from models_spec.variants._base import VariantAdapter, cache_over_manager

__all__ = ["BUG", "LeakyRemoveManager", "adapter"]

BUG = "B12"


class LeakyRemoveManager(ModelManager):
    """Removing an unknown id creates its lock entry and never retires it."""

    def remove(self, model_id: str, delete_from_disk: bool = True) -> None:
        check_model_id(model_id)
        check_bool(delete_from_disk, "delete_from_disk")
        if model_id not in self._models:
            self._lifecycle._reserve(model_id)  # the entry upstream creates and keeps
            return
        super().remove(model_id, delete_from_disk)


def adapter() -> VariantAdapter:
    """`Cache(LeakyRemoveManager)`."""
    return VariantAdapter(
        BUG,
        "variant-B12-lock-table-leak",
        __name__,
        cache_over_manager(manager_cls=LeakyRemoveManager),
    )

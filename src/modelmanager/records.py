"""Frozen value records returned by the manager's introspection methods."""

from __future__ import annotations

import attrs

__all__ = ["LifecycleEntryInfo", "ModelDescription"]


@attrs.frozen
class ModelDescription:
    """One loaded model, as ``describe_models()`` reports it.

    ``model_id`` is the resolved id (the alias if one was given), the key
    everywhere; ``canonical_model_id`` is what the constructor received;
    ``model_class`` is the qualified name of the model's type; ``hits`` counts
    warm ``add_model`` calls since it was loaded; ``leases`` is the number of
    leases held when the description was taken.
    """

    model_id: str
    canonical_model_id: str
    model_class: str
    hits: int
    leases: int


@attrs.frozen
class LifecycleEntryInfo:
    """One entry of the per-id lifecycle table, as ``lifecycle_snapshot()`` reports it.

    ``generation`` is unique per entry ever created (a new entry for the same
    id gets a new generation); ``reservations`` counts callers holding or
    waiting for the entry's lock; ``held`` tells whether some thread holds it.
    """

    resolved_id: str
    generation: int
    reservations: int
    held: bool

"""The control: upstream's `ModelManager` with per-model lock disposal taken out.

Upstream's ``ModelManager`` deletes a model's lock entry while still holding
that lock (``remove``, and the error path of ``add_model``), so a caller
already waiting on the old lock and a newcomer that creates a new one can
both construct the model (B1, B2; B3 for disposing after release).  A
manager that never disposes keeps exactly one lock per id for the life of
the process (it leaks one lock per id ever seen: the price, not a fix to
ship).  A scenario that fails on ``ModelManager`` and passes on this
subclass, with nothing else changed, fails *because* of the disposal.
"""

from __future__ import annotations

from typing import Any

from models_spec.targets.roboflow_inference import upstream

__all__ = ["NeverDisposeModelManager"]

_Base: Any = upstream.ModelManager


class NeverDisposeModelManager(_Base):  # type: ignore[misc]
    """``ModelManager`` whose ``_dispose_model_lock`` does nothing."""

    def _dispose_model_lock(self, model_id: str) -> None:
        """Keep the entry: one lock object per id, forever."""
        del model_id

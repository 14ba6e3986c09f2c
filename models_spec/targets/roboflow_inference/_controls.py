"""The control: upstream's `ModelManager` with per-model lock disposal taken out.

Upstream's ``ModelManager`` deletes a model's lock entry while still holding
that lock (``remove``, and the error path of ``add_model``), so a caller
already waiting on the old lock and a newcomer that creates a new one can
both construct the model (B1, B2; B3 for disposing after release).  A
manager that never disposes keeps exactly one lock per id for the life of
the process (it leaks one lock per id ever seen: the price, not a fix to
ship).  A scenario that fails on ``ModelManager`` and passes on this
subclass, with nothing else changed, fails *because* of the disposal.

A control must change what it claims to change.  `inert_reason` says when it
does not: the method it overrides is not a method of the upstream class in the
imported version (pull request #2821 removed ``_dispose_model_lock``: the
subclass would be the plain manager under another name), or upstream never
called the override since the last call (the cell never reached the disposal,
so it compares nothing).  The check turns either into an ERROR cell.
"""

from __future__ import annotations

from typing import Any, Final

from models_spec.targets.roboflow_inference import upstream

__all__ = ["OVERRIDDEN", "NeverDisposeModelManager", "inert_reason"]

_Base: Any = upstream.ModelManager

OVERRIDDEN: Final = "_dispose_model_lock"
"""The one method of ``ModelManager`` the control replaces."""


class NeverDisposeModelManager(_Base):  # type: ignore[misc]
    """``ModelManager`` whose ``_dispose_model_lock`` does nothing (and counts its calls)."""

    calls: int = 0
    """How often upstream called the override since `inert_reason` last looked."""

    def _dispose_model_lock(self, model_id: str) -> None:
        """Keep the entry: one lock object per id, forever."""
        del model_id
        NeverDisposeModelManager.calls += 1


def inert_reason() -> str:
    """Why the control changed nothing since the last call ("" when it did); resets the count."""
    calls, NeverDisposeModelManager.calls = NeverDisposeModelManager.calls, 0
    if not callable(getattr(_Base, OVERRIDDEN, None)):
        return (
            f"control is inert: `{OVERRIDDEN}` is not a method of ModelManager in "
            f"inference {upstream.VERSION} ({upstream.LOCATION}): the control is the plain "
            "manager under another name"
        )
    if calls == 0:
        return (
            f"control is inert in this cell: upstream never called `{OVERRIDDEN}`, so the "
            "control ran exactly as the plain manager and shows nothing"
        )
    return ""

"""B11 nested decorators break: a base-decorator helper assumes the innermost manager.

Bug path: `ModelManagerDecorator.lifecycle` (one override): it reaches for
the wrapped layer's private lifecycle table instead of delegating, which
only the innermost `ModelManager` has.  The variant's stack is
`Cache(Decorator(Decorator(Manager)))`; the first add raises AttributeError
(I8: composition).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from modelmanager import ModelManager, ModelManagerDecorator, WithFixedSizeCache
from models_spec.variants._base import VariantAdapter

__all__ = ["BUG", "InnermostAssumingDecorator", "adapter"]

BUG = "B11"


class InnermostAssumingDecorator(ModelManagerDecorator):
    """A pass-through layer whose `lifecycle` assumes it wraps the manager itself."""

    def lifecycle(self, resolved_id: str) -> AbstractContextManager[None]:
        inner: Any = self._manager
        return inner._lifecycle.hold(resolved_id, inner.lock_timeout)  # type: ignore[no-any-return]


def _build(
    registry: Any,
    *,
    max_size: int,
    memory_probe: Any = None,
    lock_timeout: float = 60.0,
    queue_lock_timeout: float = 5.0,
) -> Any:
    manager = ModelManager(registry, lock_timeout=lock_timeout)
    inner = InnermostAssumingDecorator(InnermostAssumingDecorator(manager))
    kwargs: dict[str, Any] = {"queue_lock_timeout": queue_lock_timeout}
    if memory_probe is not None:
        kwargs["memory_probe"] = memory_probe
        kwargs["memory_free_threshold"] = float(getattr(memory_probe, "threshold", 0.5))
    return WithFixedSizeCache(inner, max_size=max_size, **kwargs)


def adapter() -> VariantAdapter:
    """`Cache(Decorator(Decorator(Manager)))` with the innermost-assuming decorator."""
    return VariantAdapter(BUG, "variant-B11-nested-decorators", __name__, _build)

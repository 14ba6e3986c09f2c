"""B11 nested decorators break: a base-decorator helper assumes the innermost manager.

Bug path: `ModelManagerDecorator.lifecycle` (one override): it reaches for
the wrapped layer's private lifecycle table instead of delegating, which
only the innermost `ModelManager` has.  The variant's stack is
`Cache(Decorator(Decorator(Manager)))`; the first add raises AttributeError
(I8: composition).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Unpack

from modelmanager import ModelManager, ModelManagerDecorator, WithFixedSizeCache
from models_spec._harness.catalogue import Bug, Variant
from models_spec.adapter import BuildKwargs, BuildOptions
from models_spec.scenarios import Op, Scenario, Setup

__all__ = ["BUG", "InnermostAssumingDecorator"]


class InnermostAssumingDecorator(ModelManagerDecorator):
    """A pass-through layer whose `lifecycle` assumes it wraps the manager itself."""

    def lifecycle(self, resolved_id: str) -> AbstractContextManager[None]:
        inner: Any = self.manager
        return inner._lifecycle.hold(resolved_id, inner.lock_timeout)  # type: ignore[no-any-return]


def _build(registry: Any, **options: Unpack[BuildKwargs]) -> Any:
    settings = BuildOptions(**options)
    manager = ModelManager(registry, lock_timeout=settings.lock_timeout)
    inner = InnermostAssumingDecorator(InnermostAssumingDecorator(manager))
    return WithFixedSizeCache(inner, max_size=settings.max_size, **settings.cache_kwargs())


BUG = Bug(
    id="B11",
    title="nested decorators break",
    story=(
        "A helper on the decorator base assumes the state only the innermost manager "
        "has: through Cache(Decorator(Decorator(Manager))) the first public call raises "
        "AttributeError (I8: the stack does not compose)."
    ),
    scenario=Scenario(
        "B11-nested-decorators",
        ("B11",),
        "every public call works through nested decorators",
        [("T", [Op("add", "X"), Op("describe"), Op("lease", "X"), Op("remove", "X")])],
        Setup(max_size=2),
        linearizable=False,
    ),
    variants=Variant(_build),
    breaks=("I8",),
    caught_by=("pct", "dpor", "random"),
)

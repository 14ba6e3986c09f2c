"""What a strategy declares about itself, in one typed record the runtime reads.

explore() needs to know a few facts about the strategy it runs: the name and seed a
schedule records, whether "no more executions" means every interleaving up to a bound
was explored (and which bound), whether the search skips interleavings it judges
equivalent, and PCT's probability guarantee. They decide what the verdict claims, so a
fact that is misspelt must not fall back to a default silently (a ``systemtic = True``
attribute would make a complete search report itself as sampled): every strategy
declares them in one :class:`Capabilities` value, its ``capabilities`` attribute, and
``Capabilities`` refuses a name it does not know when it is built (at class definition
for a class attribute), suggesting the nearest.
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from lockstep._names import check_names
from lockstep.errors import InvalidArgument, InvalidArgumentType

__all__ = ["CAPABILITY_NAMES", "Capabilities"]


def _optional_str(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and not isinstance(value, str):
        raise InvalidArgumentType(f"{attribute.name} must be a str or None, got {value!r}")


def _optional_int(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidArgumentType(f"{attribute.name} must be an int or None, got {value!r}")
    if attribute.name == "preemption_bound" and value < 0:
        raise InvalidArgument(f"preemption_bound must be >= 0 or None, got {value!r}")


def _flag(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, bool):
        raise InvalidArgumentType(f"{attribute.name} must be True or False, got {value!r}")


def _probability(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    if not isinstance(value, float):
        raise InvalidArgumentType(f"probability_bound must be a float or None, got {value!r}")
    if not 0.0 <= value <= 1.0:
        raise InvalidArgument(f"probability_bound must be in [0, 1], got {value!r}")


@attrs.frozen
class Capabilities:
    """A strategy's declared facts (``strategy.capabilities``), read by explore().

    ``name``: recorded as ``Schedule.strategy`` (None: the strategy's class name).
    ``seed``: recorded as ``Schedule.seed``. ``systematic``: "no more executions" means
    every interleaving up to ``preemption_bound`` was explored; only then does the
    verdict claim completeness (False: a sampler). ``preemption_bound``: the bound that
    claim is up to (None: unbounded; read at the end of the search, so a strategy that
    deepens its bound reports the last one). ``reduces``: a systematic search that
    skips interleavings it judges equivalent by the dependencies of their steps, as
    DPOR does: its claim then excludes the orders of declared locations seen unordered
    (``Verdict.unordered``); needs ``systematic``. ``probability_bound``: PCT's
    guarantee, reported as ``ExploreResult.pct_bound``.

    Validated when built: a wrong type or value raises InvalidArgument(Type) naming the
    field; an unknown name raises InvalidArgument with the nearest known one.
    """

    name: str | None = attrs.field(default=None, validator=_optional_str)
    seed: int | None = attrs.field(default=None, validator=_optional_int)
    systematic: bool = attrs.field(default=False, validator=_flag)
    preemption_bound: int | None = attrs.field(default=None, validator=_optional_int)
    reduces: bool = attrs.field(default=False, validator=_flag)
    probability_bound: float | None = attrs.field(default=None, validator=_probability)

    def __new__(cls, *args: object, **kwargs: object) -> Capabilities:
        # Before the generated __init__, whose TypeError would not say what was meant.
        if args:
            raise InvalidArgumentType(f"Capabilities takes keyword arguments only, got {args!r}")
        check_names("Capabilities", kwargs, CAPABILITY_NAMES)
        instance: Capabilities = super().__new__(cls)
        return instance

    def __attrs_post_init__(self) -> None:
        if self.reduces and not self.systematic:
            raise InvalidArgument(
                "Capabilities(reduces=True) needs systematic=True: only a systematic "
                "search reduces the interleavings it explores"
            )

    def replace(self, **changes: Any) -> Capabilities:
        """A copy with ``changes``, validated like a new one (a wrapper renames itself)."""
        check_names("Capabilities", changes, CAPABILITY_NAMES)
        return attrs.evolve(self, **changes)


CAPABILITY_NAMES: Final = tuple(a.name for a in attrs.fields(Capabilities))

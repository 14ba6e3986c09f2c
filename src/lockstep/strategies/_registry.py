"""Strategies by name, for the CLI and the pytest plugin."""

from __future__ import annotations

import importlib
from typing import Any

from lockstep.errors import InvalidArgument
from lockstep.strategies._base import Strategy
from lockstep.strategies._dfs import DFSStrategy
from lockstep.strategies._pct import PCTStrategy
from lockstep.strategies._random import RandomStrategy

__all__ = ["STRATEGY_NAMES", "make_strategy"]

STRATEGY_NAMES = ("dfs", "dpor", "pct", "random")


def make_strategy(name: str, *, seed: int | None = 0, **options: Any) -> Strategy:
    """See :func:`_make`; an option the strategy does not take is an InvalidArgument."""
    try:
        return _make(name, seed=seed, **options)
    except TypeError as exc:
        raise InvalidArgument(
            f"strategy {name!r} does not accept the option(s) {sorted(options)}: {exc}"
        ) from exc


def _make(name: str, *, seed: int | None = 0, **options: Any) -> Strategy:
    """Build the strategy called ``name`` (one of STRATEGY_NAMES).

    ``seed`` goes to the seeded ones (random, pct); ``options`` to the constructor
    (e.g. depth=3 for pct, preemption_bound=2 for dfs/dpor). Raises InvalidArgument for
    an unknown name.
    """
    if name == "random":
        return RandomStrategy(seed, **options)
    if name == "pct":
        return PCTStrategy(seed, **options)
    if name == "dfs":
        return DFSStrategy(**options)
    if name == "dpor":
        try:
            module = importlib.import_module("lockstep.strategies._dpor")
        except ImportError as exc:
            raise InvalidArgument(f"the dpor strategy is not available: {exc}") from exc
        factory = getattr(module, "DporStrategy", None) or getattr(module, "DPORStrategy", None)
        if factory is None:
            raise InvalidArgument("lockstep.strategies._dpor defines no DporStrategy")
        strategy: Strategy = factory(**options)
        return strategy
    raise InvalidArgument(f"unknown strategy {name!r}; expected one of {', '.join(STRATEGY_NAMES)}")

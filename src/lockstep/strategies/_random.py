"""Controlled random scheduling: a seeded uniform choice at every step.

SCTBench found this naive strategy competitive with systematic ones. The generator's
state carries over between executions, so the i-th execution of a seed is fixed.
When some threads can fire timeouts, a timeout is chosen with ``timeout_probability``
(always when nothing can run), so timed waits are explored without dominating;
``timeouts=False`` never fires one while a thread can run (the knob every strategy
has; ``timeout_probability`` stays for fine-tuning).
"""

from __future__ import annotations

import os
import random as _random
from collections.abc import Sequence

from lockstep._schedule import Choice
from lockstep.errors import InvalidArgument, InvalidArgumentType
from lockstep.strategies._base import ExecutionOutcome, StepContext, check_timeouts

__all__ = ["RandomStrategy", "resolve_seed"]


def resolve_seed(seed: int | None) -> int:
    """Validate ``seed``; None picks a fresh random one (recorded in schedules)."""
    if seed is None:
        return int.from_bytes(os.urandom(4), "big")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise InvalidArgumentType(f"seed must be an int or None, got {seed!r}")
    return seed


def check_probability(name: str, value: float) -> float:
    """Validate a probability argument."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise InvalidArgumentType(f"{name} must be a number in [0, 1], got {value!r}")
    if not 0.0 <= value <= 1.0:
        raise InvalidArgument(f"{name} must be in [0, 1], got {value!r}")
    return float(value)


class RandomStrategy:
    """Uniformly random among runnable threads (seeded; ``seed=None`` picks one).

    ``timeouts`` (default True): pending timeouts are choices, taken with
    ``timeout_probability``; False: a timeout fires only when nothing can run.
    """

    name = "random"

    def __init__(
        self,
        seed: int | None = 0,
        *,
        timeouts: bool = True,
        timeout_probability: float = 0.1,
    ) -> None:
        self.seed = resolve_seed(seed)
        self.timeouts = check_timeouts("RandomStrategy", timeouts)
        self.timeout_probability = check_probability("timeout_probability", timeout_probability)
        if not timeouts:
            self.timeout_probability = 0.0
        self._rng = _random.Random(self.seed)

    def begin_execution(self) -> None:
        """Nothing to prepare: the generator continues."""

    def choose(self, choices: Sequence[Choice], step: StepContext) -> Choice:
        """A uniformly random run choice, or (sometimes) a random timeout."""
        if len(choices) == 1:
            return choices[0]
        if not step.timeouts:  # every choice is a "run": the same draw as below, sooner
            return self._rng.choice(choices)
        runs = [c for c in choices if c.kind == "run"]
        if len(runs) < len(choices) and (not runs or self._rng.random() < self.timeout_probability):
            return self._rng.choice([c for c in choices if c.kind == "timeout"])
        return self._rng.choice(runs)

    def end_execution(self, outcome: ExecutionOutcome) -> bool:
        """Always wants more."""
        return True

    def __repr__(self) -> str:
        timeouts = "" if self.timeouts else ", timeouts=False"
        return f"RandomStrategy(seed={self.seed}{timeouts})"

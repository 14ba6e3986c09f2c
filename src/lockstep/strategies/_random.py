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
from lockstep.strategies._capabilities import Capabilities

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
        self.capabilities = Capabilities(name=self.name, seed=self.seed)
        self._getrandbits = self._rng.getrandbits

    def _below(self, n: int) -> int:
        """``random.Random.choice``'s index draw (``_randbelow_with_getrandbits``), without
        its two Python calls: this runs at most steps. The same numbers as ``choice``
        (tests/lockstep/test_ls_strategies.py checks it against the interpreter's)."""
        getrandbits = self._getrandbits
        k = n.bit_length()
        r: int = getrandbits(k)
        while r >= n:
            r = getrandbits(k)
        return r

    def begin_execution(self) -> None:
        """Nothing to prepare: the generator continues."""

    def choose(self, choices: Sequence[Choice], step: StepContext) -> Choice:
        """A uniformly random run choice, or (sometimes) a random timeout."""
        n = len(choices)
        if n == 1:
            return choices[0]
        if not step.timeouts:  # every choice is a "run": the same draw as below, sooner
            # self._below(n), inlined (the hottest line of a random search)
            getrandbits = self._getrandbits
            k = n.bit_length()
            r: int = getrandbits(k)
            while r >= n:
                r = getrandbits(k)
            return choices[r]
        runs = [c for c in choices if c.kind == "run"]
        if len(runs) < n and (not runs or self._rng.random() < self.timeout_probability):
            timeouts = [c for c in choices if c.kind == "timeout"]
            return timeouts[self._below(len(timeouts))]
        return runs[self._below(len(runs))]

    def end_execution(self, outcome: ExecutionOutcome) -> bool:
        """Always wants more."""
        return True

    def __repr__(self) -> str:
        timeouts = "" if self.timeouts else ", timeouts=False"
        return f"RandomStrategy(seed={self.seed}{timeouts})"

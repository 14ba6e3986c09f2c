"""PCT: probabilistic concurrency testing with a guarantee (Burckhardt et al., 2010).

Each thread gets a random priority when it first appears; the highest-priority runnable
thread always runs; at ``depth - 1`` random steps (change points, drawn from 1..k where
k is the longest execution seen so far) the thread about to run is demoted below every
initial priority. For n threads and k steps, one execution finds a given bug of depth
d with probability at least 1/(n * k^(d-1)); :attr:`PCTStrategy.probability_bound`
reports that bound for the largest n and k observed.

Timed waits: a blocked thread's timeout is chosen when nothing can run, and otherwise
with ``timeout_probability`` (highest priority first), so timeouts are explored too;
``timeouts=False`` fires one only when nothing can run.
"""

from __future__ import annotations

import random as _random
from collections.abc import Sequence

from lockstep._schedule import Choice
from lockstep.errors import InvalidArgument, InvalidArgumentType
from lockstep.strategies._base import ExecutionOutcome, StepContext, check_timeouts
from lockstep.strategies._capabilities import Capabilities
from lockstep.strategies._random import check_probability, resolve_seed

__all__ = ["PCTStrategy"]


class PCTStrategy:
    """PCT with bug depth ``depth`` (>= 1; 1 finds ordering bugs, 2-3 atomicity bugs)."""

    name = "pct"

    def __init__(
        self,
        seed: int | None = 0,
        depth: int = 3,
        *,
        steps_hint: int = 20,
        timeouts: bool = True,
        timeout_probability: float = 0.05,
    ) -> None:
        if not isinstance(depth, int) or isinstance(depth, bool):
            raise InvalidArgumentType(f"depth must be an int >= 1, got {depth!r}")
        if depth < 1:
            raise InvalidArgument(f"depth must be >= 1, got {depth!r}")
        if not isinstance(steps_hint, int) or steps_hint < 1:
            raise InvalidArgument(f"steps_hint must be an int >= 1, got {steps_hint!r}")
        self.seed = resolve_seed(seed)
        self.depth = depth
        self.timeouts = check_timeouts("PCTStrategy", timeouts)
        self.timeout_probability = check_probability("timeout_probability", timeout_probability)
        if not timeouts:
            self.timeout_probability = 0.0
        self._rng = _random.Random(self.seed)
        self._k = steps_hint
        self._observed_k = 0
        self._observed_n = 0
        self._priorities: dict[int, float] = {}
        self._change_points: frozenset[int] = frozenset()
        self._lowest = 0.0

    @property
    def capabilities(self) -> Capabilities:
        """A seeded sampler with a probability guarantee (:attr:`probability_bound`)."""
        return Capabilities(
            name=self.name, seed=self.seed, probability_bound=self.probability_bound
        )

    @property
    def probability_bound(self) -> float | None:
        """1/(n * k^(d-1)) for the most threads n and steps k observed (None before any)."""
        if self._observed_n == 0:
            return None
        k = max(self._observed_k, 1)
        return 1.0 / (self._observed_n * float(k) ** (self.depth - 1))

    def begin_execution(self) -> None:
        """Fresh priorities and d-1 change points in 1..k."""
        self._priorities = {}
        self._lowest = 0.0
        count = min(self.depth - 1, self._k)
        self._change_points = frozenset(self._rng.sample(range(1, self._k + 1), count))

    def _priority(self, thread: int) -> float:
        priority = self._priorities.get(thread)
        if priority is None:
            # Initial priorities lie in (depth, depth + 1): above every demoted one.
            priority = self._priorities[thread] = self.depth + self._rng.random()
        return priority

    def choose(self, choices: Sequence[Choice], step: StepContext) -> Choice:
        """The highest-priority runnable thread (demoting it first at a change point).

        A thread that yields (a ``sleep``, a timeout: :attr:`StepContext.yielded`) while
        another can run is demoted below every other, as PCT does at a yield: a polling
        loop would otherwise keep the highest priority and starve the thread it waits for.
        """
        current = step.current
        if step.yielded and current is not None and any(t != current for t in step.enabled):
            self._lowest -= 1.0
            self._priorities[current] = self._lowest
        if len(choices) == 1:  # what the general case below does with one choice
            only = choices[0]
            self._priority(only.thread)  # a thread's first priority draws, as max() would
            if only.kind == "run" and step.step in self._change_points:
                self._lowest -= 1.0
                self._priorities[only.thread] = self._lowest
            return only
        runs = [c for c in choices if c.kind == "run"]
        timeouts = [c for c in choices if c.kind == "timeout"]
        if timeouts and (not runs or self._rng.random() < self.timeout_probability):
            return max(timeouts, key=lambda c: self._priority(c.thread))
        best = max(runs, key=lambda c: self._priority(c.thread))
        if step.step in self._change_points:
            self._lowest -= 1.0
            self._priorities[best.thread] = self._lowest
            best = max(runs, key=lambda c: self._priority(c.thread))
        return best

    def end_execution(self, outcome: ExecutionOutcome) -> bool:
        """Update n and k from the execution; always wants more."""
        steps = len(outcome.choices)  # one choice per step (reading the records costs more)
        self._observed_k = max(self._observed_k, steps)
        self._k = max(self._k, steps)
        threads = 1 + max((c.thread for c in outcome.choices), default=0)
        self._observed_n = max(self._observed_n, threads)
        return True

    def __repr__(self) -> str:
        return f"PCTStrategy(seed={self.seed}, depth={self.depth})"

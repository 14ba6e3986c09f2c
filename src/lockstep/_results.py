"""Result records of explore() and replay() (frozen values), and the verdict wording."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import attrs

from lockstep._failure import Failure
from lockstep._schedule import Schedule
from lockstep._trace import Trace
from lockstep.errors import LockstepError

__all__ = ["Coverage", "ExecutionResult", "ExplorationFailed", "ExploreResult", "Verdict"]

Coverage = Literal["failed", "complete", "partial", "execution-budget", "time-budget", "sampled"]
"""How an exploration ended: a failure; a systematic strategy explored every
interleaving up to its bound; it was cut short by the execution or time budget; a
sampling strategy (random, PCT, Hypothesis) ran its budget."""


class ExplorationFailed(LockstepError, AssertionError):
    """Raised by ``raise_for_failure()``: carries the Failure; str() is the full report."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(str(failure))
        self.failure = failure


@attrs.frozen(slots=True)
class ExecutionResult:
    """One execution (what ``replay`` returns): its schedule, trace and failure (or None)."""

    schedule: Schedule
    trace: Trace
    failure: Failure | None

    @property
    def ok(self) -> bool:
        """True when the execution passed."""
        return self.failure is None

    @property
    def steps(self) -> int:
        """Number of steps executed."""
        return len(self.trace)

    def raise_for_failure(self) -> None:
        """Raise ExplorationFailed if the execution failed."""
        if self.failure is not None:
            raise ExplorationFailed(self.failure)


@attrs.frozen(slots=True)
class Verdict:
    """What an exploration established, as data (``describe()`` words it).

    ``coverage``: see :data:`Coverage`. ``executions``: how many ran (before any
    shrinking). ``strategy`` / ``seed``: what searched. ``preemption_bound``: the
    systematic strategy's bound (None: unbounded or not systematic). ``watched``:
    some execution watched shared state (``lockstep.watch``), so its accesses were
    switch points and dependencies. ``races_checked``: data races on watched state
    were reported (``races=True``) and something was watched. ``benign``: the
    locations declared intentionally racy (not reported as races). ``failure_kind``:
    the failure's kind when ``coverage == "failed"``. ``time_budget``: the budget
    that stopped it (seconds), when it did. ``unordered``: declared locations read
    holding a lock but written without it: DPOR does not reorder those reads with
    those writes, so an exhausted systematic search is ``"partial"``, not
    ``"complete"``.
    """

    coverage: Coverage
    executions: int
    strategy: str
    seed: int | None = None
    preemption_bound: int | None = None
    watched: bool = False
    races_checked: bool = False
    benign: tuple[str, ...] = ()
    failure_kind: str | None = None
    time_budget: float | None = None
    unordered: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        """True when every interleaving up to the bound was explored without a failure."""
        return self.coverage == "complete"

    @property
    def sound(self) -> bool:
        """True for the strongest claim: complete, over watched state, races checked."""
        return self.complete and self.watched and self.races_checked

    def scope(self) -> str:
        """What the switch points covered."""
        if self.watched:
            return "over synchronisation and watched state"
        return (
            "over synchronisation only (nothing was watched: races on unsynchronised "
            "state are not covered)"
        )

    def _findings(self) -> str:
        if not self.watched:
            return "no failure"
        if self.races_checked:
            text = "no failure, no data race on watched state"
        else:
            text = "no failure (data races not checked: races=False)"
        if self.benign:
            n = len(self.benign)
            text += f"; {n} location{'s' if n != 1 else ''} declared intentionally racy"
        return text

    def describe(self) -> str:
        """One sentence a user can trust; never a bare "exhausted"."""
        n = self.executions
        runs = f"{n} execution{'s' if n != 1 else ''}"
        if self.coverage == "failed":
            return f"failed: {self.failure_kind} found in execution {n} of {self.strategy}"
        bound = (
            ""
            if self.preemption_bound is None
            else f" with at most {self.preemption_bound} preemption"
            + ("s" if self.preemption_bound != 1 else "")
        )
        if self.coverage == "complete":
            return (
                f"explored every interleaving{bound} {self.scope()} in {runs}: {self._findings()}"
            )
        if self.coverage == "partial":
            names = ", ".join(self.unordered)
            return (
                f"explored every interleaving{bound} {self.scope()} in {runs} except the orders "
                f"of {names} (declared intentionally racy, read holding a lock but written "
                f"without it: those reads are not reordered with those writes, so no "
                f"completeness claim for them; declare only locations written under the lock "
                f"their locked readers hold, or search them with dfs, random or pct): "
                f"{self._findings()}"
            )
        if self.coverage == "time-budget":
            budget = "" if self.time_budget is None else f" ({self.time_budget:g} s)"
            return (
                f"stopped by the time budget{budget} after {runs} of {self.strategy}, "
                f"{self.scope()}: {self._findings()} so far (not every interleaving was "
                "explored: no completeness claim)"
            )
        if self.coverage == "execution-budget":
            return (
                f"stopped by the execution budget after {runs} of {self.strategy}, "
                f"{self.scope()}: {self._findings()} so far (not every interleaving was "
                "explored: no completeness claim)"
            )
        seed = "" if self.seed is None else f" (seed {self.seed})"
        return (
            f"sampled {n} schedule{'s' if n != 1 else ''} with {self.strategy}{seed}, "
            f"{self.scope()}: {self._findings()} ({self.strategy} samples: no completeness "
            "claim)"
        )

    def __str__(self) -> str:
        return self.describe()


def _derived_verdict(result: ExploreResult) -> Verdict:
    """The verdict of a result built without one (by hand: tests, older callers)."""
    coverage: Coverage = (
        "failed" if result.failure is not None else "complete" if result.exhausted else "sampled"
    )
    return Verdict(
        coverage,
        result.executions,
        result.strategy,
        result.seed,
        failure_kind=None if result.failure is None else result.failure.kind,
    )


@attrs.frozen(slots=True)
class ExploreResult:
    """What ``explore`` found.

    ``verdict``: what the exploration established (:class:`Verdict`: complete, cut
    short by a budget, or sampled; over watched state or synchronisation only; races
    checked); ``str(result.verdict)`` is the wording to show users. ``executions``
    run, ``exhausted`` (the strategy reported its bounded space explored before the
    budget ran out, with no failure; prefer ``verdict``, which says over what), the
    shrunk ``failure`` (or None), wall-clock ``elapsed`` seconds,
    ``schedules_per_second``, total ``steps``; ``pct_bound``: PCT's guaranteed
    per-execution probability 1/(n*k^(d-1)) for the observed n threads and k steps
    (None for other strategies); ``max_threads``/``max_steps_seen`` observed;
    ``switch_points``: source file -> steps taken at synchronisation switch points
    (controlled primitives and checkpoints, not watched accesses) located in it, over
    every execution (not shrinking): a module the scenario should exercise but that has
    no entry was never interleaved at its synchronisation (is it patched?).
    ``failures``: with ``explore(keep_going=True)``, the first failure of each distinct
    kind and label (``Failure.signature``) in the order found, the first one being
    ``failure`` (shrunk; the others as found); otherwise ``(failure,)`` or ``()``.
    ``failed_at``: the 1-based index of the execution that found ``failure`` (None
    without one); with ``keep_going`` the search runs on past it, so ``executions``
    is the whole search.  Reporting only: it takes no part in equality or the verdict.
    """

    executions: int
    exhausted: bool
    failure: Failure | None
    elapsed: float
    schedules_per_second: float
    steps: int
    strategy: str
    seed: int | None = None
    pct_bound: float | None = None
    max_threads: int = 0
    max_steps_seen: int = 0
    shrink_executions: int = 0
    verdict: Verdict = attrs.field(default=attrs.Factory(_derived_verdict, takes_self=True))
    switch_points: Mapping[str, int] = attrs.field(factory=dict, eq=False)
    failures: tuple[Failure, ...] = attrs.field(default=(), eq=False)
    failed_at: int | None = attrs.field(default=None, eq=False)

    @property
    def ok(self) -> bool:
        """True when no failure was found."""
        return self.failure is None

    def raise_for_failure(self) -> None:
        """Raise ExplorationFailed (an AssertionError) if a failure was found."""
        if self.failure is not None:
            raise ExplorationFailed(self.failure)

    def summary(self) -> str:
        """One line: the verdict, then executions, rate, steps (and PCT's bound)."""
        parts = [
            f"{self.executions} executions of strategy {self.strategy}",
            f"{self.schedules_per_second:.0f}/s",
            f"{self.steps} steps",
        ]
        if self.pct_bound is not None:
            # Said as what it guarantees: "PCT bound" alone is the paper's term.
            parts.append(
                f"each execution finds a bug of PCT's depth with probability at least "
                f"{self.pct_bound:.3g}"
            )
        return f"{self.verdict.describe()} [{', '.join(parts)}]"

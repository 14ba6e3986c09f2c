"""Races on plain Python state are found once the state is watched, and only then.

The programs (``lockstep_race_programs.py``) race on a dict or an attribute.
Budgets and why they hold (seeds are fixed and DPOR is deterministic, so every
count below is exact; the arithmetic says why it is small, not a probability of
passing):

* races reported (the default): the race detector flags two unordered
  accesses in the first execution that contains both, whatever their order.
  In the unlocked check and the lost update every execution contains both, so
  every strategy finds the race in execution 1. In the split-lock program the
  two adds' accesses are unordered only in executions where the remove disposes
  of the lock while an add waits on it (the adds then hold different locks):
  an ordering of lock operations, depth 2 in PCT's terms. DPOR reaches it by
  reversing lock acquisitions (execution 8); random seed 0 needs 5, PCT seed 0
  7; bounded DFS, depth-first from the non-preemptive schedule, needs 1,200.
* races off: the accesses are switch points and DPOR dependencies. DPOR
  reverses the read/write pair in its second or third execution. Random picks
  uniformly among k runnable threads at each step; the lost update needs the
  second thread's read between the first's read and write, one step out of
  about four, so an execution fails with probability around 1/4 and 100
  executions miss it with probability below 1e-12 (seed 0 needs a handful).
* unwatched: the only switch points are lock operations and thread
  starts/joins, so DPOR explores every order of those and reports "complete
  over synchronisation only": the verdict no longer reads as a proof.
"""

from __future__ import annotations

import pytest
from lockstep_race_programs import PROGRAMS, hunt

pytestmark = pytest.mark.quality

NAMES = sorted(PROGRAMS)
BUDGET = 100


@pytest.mark.parametrize("strategy", ["dpor", "random", "dfs", "pct"])
@pytest.mark.parametrize("name", ["unlocked_check", "lost_update"])
def test_watched_race_is_reported_at_once(name: str, strategy: str) -> None:
    """With the state watched, every strategy reports the data race in execution 1."""
    result = hunt(PROGRAMS[name], strategy, watched=True)
    assert result.failure is not None
    assert result.failure.kind == "data-race", result.failure.message
    assert result.executions == 1


@pytest.mark.parametrize("strategy", ["dpor", "random", "pct"])
def test_split_lock_race_is_reported_within_budget(strategy: str) -> None:
    """The split-lock race needs one lock ordering; DPOR, random and PCT (seed 0)
    report it as a data race on the models dict within 100 executions."""
    result = hunt(PROGRAMS["split_lock"], strategy, watched=True, budget=BUDGET)
    assert result.failure is not None, f"{strategy} missed it in {result.executions}"
    assert result.failure.kind == "data-race", result.failure.message
    assert result.failure.race is not None
    assert result.failure.race.location == "dict#2['X']"
    assert result.executions <= BUDGET


@pytest.mark.parametrize("strategy", ["dpor", "random"])
@pytest.mark.parametrize("name", NAMES)
def test_watched_race_leads_to_the_invariant_violation(name: str, strategy: str) -> None:
    """With races off, DPOR (deterministically) and random seed 0 find what the race
    does (two loads, two creations, a lost update) within 100 executions."""
    result = hunt(PROGRAMS[name], strategy, watched=True, races=False, budget=BUDGET)
    assert result.failure is not None, f"{strategy} missed {name} in {result.executions}"
    assert result.failure.kind == "exception"
    assert result.executions <= BUDGET


@pytest.mark.parametrize("name", NAMES)
def test_unwatched_dpor_claims_only_synchronisation(name: str) -> None:
    """Unwatched, DPOR cannot see the race (its only switch points are locks and
    threads); the verdict says the search covered synchronisation only."""
    result = hunt(PROGRAMS[name], "dpor", watched=False, budget=BUDGET)
    if result.failure is None:
        assert result.verdict.complete
        assert not result.verdict.watched
        assert "over synchronisation only" in result.verdict.describe()


@pytest.mark.parametrize("races", [True, False])
@pytest.mark.parametrize("name", NAMES)
def test_race_free_controls_are_explored_completely(name: str, races: bool) -> None:
    """The same programs with one lock: DPOR explores every trace and finds nothing;
    with races on that is the sound claim."""
    result = hunt(PROGRAMS[name], "dpor", watched=True, races=races, fixed=True, budget=1000)
    assert result.failure is None, result.failure
    assert result.verdict.complete
    assert result.verdict.watched
    assert result.verdict.sound == races

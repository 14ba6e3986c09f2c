"""The concurrent Hypothesis machine finds known bugs from scratch.

For each bug, the machine (`stateful_tests.concurrent_machine`) runs against
the bug's first known-bug variant (`models_spec._harness.catalogue`) with a fixed
budget: at most `BUDGET` examples, `derandomize=True` and no example
database, so every run draws the same examples and the outcome is
deterministic.  It must find, and shrink, a violation of one of the
invariants the bug module says the variant breaks (`breaks`); failures
through other invariants are counted and reported but do not count as
finding the bug.

Measured with this budget on the shared 2-core machine (shrunk results; the
times are for generation plus shrinking, 5-60 s each depending on load):

* B7: I4 "LRU holds duplicates" from two threads each running `add('a')`
  (one preemption);
* B1: I9 (the first model of 'a' is overwritten by a second construction and
  never torn down) from `add('a')` || `remove('a'); add('a')`;
* B4: I15 (`acquire('a')` answers ModelNotFound while `remove('a')` runs:
  the unlocked fast path said "loaded").
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.database import InMemoryExampleDatabase

from models_spec._harness.catalogue import load
from stateful_tests.concurrent_machine import (
    ConcurrentCheckFailed,
    Example,
    examples,
    run_example,
)

pytestmark = pytest.mark.quality

BUDGET = 300
"""At most this many examples (each one lockstep execution) per bug, unless
`BUDGETS` says otherwise."""

BUDGETS = {"B4": 1000}
"""B4's fast-path window needs more draws since evictions stopped waiting for a busy
victim's lifecycle (the core's switch points moved; found between 600 and 1000)."""


def _catalogue(bug: str) -> frozenset[str]:
    """The invariants that catch `bug`'s first variant, as its bug module declares them
    (e.g. B7: I4; B1 also I9 and I13: two generations of one id break its mutual
    exclusion as a whole, not only as two overlapping constructors)."""
    return frozenset(load().bug(bug).breaks)


def _hunt(
    bug: str,
    *,
    database: InMemoryExampleDatabase | None = None,
    phases: tuple[Phase, ...] = (Phase.generate, Phase.shrink),
    seen: Counter[str] | None = None,
) -> ConcurrentCheckFailed | None:
    """Run the machine on `bug`'s variant until it violates one of `bug`'s invariants.

    Failures through other invariants (a known-bug variant often breaks
    several) are counted in `seen` and otherwise ignored, so Hypothesis
    searches for, and shrinks, a violation of the bug's own invariants.
    Returns that (shrunk) failure, or None when the budget ran out.
    """
    adapter = load().variants_of(bug)[0].adapter()
    wanted = _catalogue(bug)
    counts = seen if seen is not None else Counter()

    @settings(
        max_examples=BUDGETS.get(bug, BUDGET),
        deadline=None,
        derandomize=database is None,
        database=database,
        phases=phases,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
    )
    @given(example=examples(capabilities=adapter.capabilities), data=st.data())
    def machine(example: Example, data: st.DataObject) -> None:
        try:
            run_example(example, data, adapter=adapter)
        except ConcurrentCheckFailed as failure:
            if failure.invariant in wanted:
                raise
            counts[str(failure.invariant)] += 1

    try:
        machine()
    except ConcurrentCheckFailed as failure:
        return failure
    return None


@pytest.mark.parametrize("bug", ["B1", "B4", "B7"])
def test_machine_finds_bug_from_scratch(bug: str) -> None:
    seen: Counter[str] = Counter()
    failure = _hunt(bug, seen=seen)
    assert failure is not None, (
        f"{bug}: no violation of {sorted(_catalogue(bug))} within "
        f"{BUDGETS.get(bug, BUDGET)} examples "
        f"(other failures seen: {dict(seen)})"
    )
    assert failure.invariant in _catalogue(bug)
    # Shrunk to a small program (B4 under the CI profile: 3 threads, 6 operations);
    # the report shows program and interleaving.
    assert len(failure.example.programs) <= 3, failure.example.describe()
    assert sum(map(len, failure.example.programs)) <= 6, failure.example.describe()
    text = str(failure)
    assert "Program:" in text
    assert "preemption" in text


def test_failure_replays_from_the_example_database() -> None:
    """A failure saved in the database is replayed exactly (program and interleaving)."""
    database = InMemoryExampleDatabase()
    first = _hunt("B7", database=database)
    assert first is not None
    assert database.data, "the shrunk failure was not saved"
    again = _hunt("B7", database=database, phases=(Phase.reuse,))
    assert again is not None, "the saved example did not fail again"
    assert again.example == first.example
    assert again.invariant == first.invariant
    assert again.failure.schedule.choices == first.failure.schedule.choices

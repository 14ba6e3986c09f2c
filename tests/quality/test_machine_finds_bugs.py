"""The concurrent Hypothesis machine finds known bugs from scratch.

For each bug, the machine (`stateful_tests.concurrent_machine`) runs against
the bug's known-bug variant (`models_spec.variants.VARIANTS`) with a fixed
budget: at most `BUDGET` examples, `derandomize=True` and no example
database, so every run draws the same examples and the outcome is
deterministic.  It must fail, after shrinking, with a violation of an
invariant through which that bug may legitimately show (`_expected`).

Measured (derandomized, this budget): B7 is found at once (I4, two cold adds
of one id), B1 within a few examples and B4 within a few dozen; shrunk to
two threads and one or two operations each.  The slowest case (B4, with
shrinking) takes about a minute on a loaded 2-core machine.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.database import InMemoryExampleDatabase

from models_spec.invariants import CATALOGUE
from models_spec.variants import VARIANTS
from stateful_tests.concurrent_machine import (
    ConcurrentCheckFailed,
    Example,
    examples,
    run_example,
)

pytestmark = pytest.mark.quality

BUDGET = 300
"""At most this many examples (each one lockstep execution) per bug."""

# The invariants through which each bug may legitimately be found: the
# catalogue's, I15 (linearizability judges every history), and
# * B1: I13 - with two generations of one id, a lease taken under the new one
#   does not stop a remove holding the old one from running clear_cache;
# * B4: I4 - the variant's fast path re-appends X to the LRU (a phantom).
EXTRA = {"B1": {"I13"}, "B4": {"I4"}}


def _expected(bug: str) -> set[str]:
    catalogue = {i for i, info in CATALOGUE.items() if bug in info.bugs}
    return catalogue | {"I15"} | EXTRA.get(bug, set())


def _hunt(
    bug: str,
    *,
    shrink: bool = True,
    database: InMemoryExampleDatabase | None = None,
    phases: tuple[Phase, ...] | None = None,
) -> ConcurrentCheckFailed | None:
    """Run the machine on `bug`'s variant; the failure it raises, or None."""
    adapter = VARIANTS[bug]()
    if phases is None:
        phases = (Phase.generate, Phase.shrink) if shrink else (Phase.generate,)

    @settings(
        max_examples=BUDGET,
        deadline=None,
        derandomize=database is None,
        database=database,
        phases=phases,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
    )
    @given(example=examples(capabilities=adapter.capabilities), data=st.data())
    def machine(example: Example, data: st.DataObject) -> None:
        run_example(example, data, adapter=adapter)

    try:
        machine()
    except ConcurrentCheckFailed as failure:
        return failure
    return None


@pytest.mark.parametrize("bug", ["B1", "B4", "B7"])
def test_machine_finds_bug_from_scratch(bug: str) -> None:
    failure = _hunt(bug)
    assert failure is not None, f"{bug} not found within {BUDGET} examples"
    assert failure.invariant in _expected(bug), (
        f"{bug} was found, but through {failure.invariant!r} (expected one of "
        f"{sorted(_expected(bug))}):\n{failure}"
    )
    # Shrunk to a small program, and the report shows program and interleaving.
    assert len(failure.example.programs) == 2, failure.example.describe()
    assert sum(map(len, failure.example.programs)) <= 4, failure.example.describe()
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

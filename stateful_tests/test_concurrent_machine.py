"""The concurrent Hypothesis machine against the core (CoreAdapter, depths 0 and 2).

Each example is one lockstep execution of 2-3 threads running 1-3
operations each, every scheduling choice drawn from the same Hypothesis
data (see `concurrent_machine`).  Budget: `EXAMPLES` examples per adapter,
derandomized (CI runs the same examples every time, whatever the Hypothesis
profile); 4-15 s per adapter on the shared 2-core machine.

Room made for a load still in flight is observable before the load is
(chosen semantics 3); the history is checked with each add split into its
admission and its completion (`models_spec.spec.expand_adds`), so that
window is judged, not excused. 800 non-derandomized examples at depth 0
found nothing (`scenario_for(example)` turns any example into a plain
lockstep scenario for longer searches).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models_spec.adapter import CoreAdapter

from .concurrent_machine import Example, examples, run_example

EXAMPLES = 150

_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@_SETTINGS
@given(example=examples(), data=st.data())
def test_core_depth0_is_correct_under_concurrency(example: Example, data: st.DataObject) -> None:
    run_example(example, data, adapter=CoreAdapter(0))


@_SETTINGS
@given(example=examples(), data=st.data())
def test_core_depth2_is_correct_under_concurrency(example: Example, data: st.DataObject) -> None:
    run_example(example, data, adapter=CoreAdapter(2))

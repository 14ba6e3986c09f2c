"""The soak (``benchmarks/soak.py``), bounded by operations: real threads, every policy.

Each run drives 6 threads x 120 operations (acquire, add, remove, lease,
getitem, refresh, pin, unpin, keys) over 6 ids with injected constructor and
``clear_cache`` failures and memory pressure. The schedule is the OS's, so
the assertions are the soak's own checks, which hold on every schedule of
correct code: only documented exception types, no ``ModelNotFound`` through
``acquire``, no ``clear_cache`` under a lease, never two constructors of one
id at once, and at the end the LRU equals the registered models, every
constructed model is registered or was cleared exactly once, and the bound
(count, and weight when weighted) holds. The 60 s run is
``python3 -m benchmarks.soak --seconds 60 --threads 8`` (benchmarks/README.md).
"""

from __future__ import annotations

import pytest

from benchmarks.soak import SoakConfig, format_report, run

pytestmark = pytest.mark.stress


@pytest.mark.parametrize(
    ("on_full", "weighted"),
    [("wait", False), ("proceed", False), ("refuse", False), ("wait", True), ("proceed", True)],
)
def test_bounded_soak_finds_no_violation(on_full: str, weighted: bool) -> None:
    config = SoakConfig(
        ops=120, threads=6, on_full=on_full, weighted=weighted, sample=False, seed=7
    )
    report = run(config)
    assert report.ok, format_report(config, report)
    assert report.operations == config.threads * 120
    stats = report.statistics
    if on_full in ("wait", "refuse"):
        # The bound is a safety property under these policies: only an add whose
        # thread holds a lease ("wait") or a model heavier than the weight bound
        # alone may go over it, and the soak has neither (no add inside a lease,
        # every weight below max_weight).
        assert stats.pinned_overflow == 0
    if on_full == "refuse":
        assert stats.full_waits == 0
    if on_full == "wait":
        assert stats.full_refusals == 0

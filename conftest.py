"""Repository-wide pytest configuration.

pytest only honours ``pytest_plugins`` in the rootdir conftest, so plugins
the tests share are declared here, and so are the Hypothesis profiles (they
must apply to every test directory, whichever ones a run collects):

* ``dev`` (default locally): few examples, quick local runs;
* ``ci`` (default when the ``CI`` environment variable is set, as in
  ``.ci/run``): more examples and steps, derandomized so every CI run tries
  the same examples.

``HYPOTHESIS_PROFILE`` chooses one explicitly. Tests that state their own
``@settings`` keep them.

Every test must leave the garbage collector as it found it (``_collector_guard``):
the same thresholds, enabled or not, the same number of frozen objects, and no more
than ``LEAK_BOUND`` more allocated memory blocks after a full collection. A test's cost
must not depend on what ran before it in the same xdist worker: the core's memory-
pressure eviction calls ``gc.collect()``, whose cost is the size of the whole process,
and a worker that had kept every earlier exploration's runs (1.6 million objects, a
greenlet leak) made ``stateful_tests/test_spec_machine.py`` 40 times slower than alone,
past the timeout.

Bytecode is cached during a test run even where ``PYTHONDONTWRITEBYTECODE`` is set:
a run starts many Python processes (the xdist workers, and the ``lockstep`` CLI,
``lockstep check`` workers and inner pytest sessions the tests start), and without
``__pycache__`` every one of them compiles the project from source again. On 2 cores
that was a quarter of the suite's time (155 s against 120 s, the same tests). The
``__pycache__`` directories are git-ignored.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Iterator

import pytest
from hypothesis import settings

sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # for the processes the tests start

pytest_plugins = ["pytester"]

settings.register_profile(
    "dev",
    max_examples=25,
    stateful_step_count=20,
    deadline=None,
)
settings.register_profile(
    "ci",
    max_examples=100,
    stateful_step_count=30,
    deadline=None,
    derandomize=True,
    print_blob=True,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture(autouse=True)
def _inner_runs_are_not_xdist_workers(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test that runs pytest itself (``pytester``) runs a whole session of its own:
    under xdist the worker's ``PYTEST_XDIST_WORKER`` would tell that session's
    plugins it is a worker of this one."""
    if "pytester" in request.fixturenames:
        monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)


LEAK_BOUND = 500_000
"""Allocated memory blocks (``sys.getallocatedblocks()``) a test may leave behind, read
after a full collection: above what the project's bounded caches keep once filled
(interned operations, memoised verdicts: up to about 410,000 blocks, measured after
``tests/suite/test_known_core_gaps.py``), below what the greenlet leak kept in one
test (the runs of hundreds of executions)."""

IMPORT_ALLOWANCE = 1_000_000
"""Added to the bound for a test that imported modules: a first import is no leak
(importing torch allocates about 520,000 blocks)."""


def _collector() -> tuple[tuple[int, ...], bool, int]:
    return gc.get_threshold(), gc.isenabled(), gc.get_freeze_count()


def collector_changes(
    before: tuple[tuple[int, ...], bool, int], after: tuple[tuple[int, ...], bool, int]
) -> list[str]:
    """What a test changed in the collector's settings, in words (empty: nothing)."""
    (thresholds, enabled, frozen), (thresholds_now, enabled_now, frozen_now) = before, after
    changes = []
    if thresholds_now != thresholds:
        changes.append(
            f"thresholds (gc.get_threshold()): {thresholds} before, {thresholds_now} after"
        )
    if enabled_now != enabled:
        changes.append(f"enabled (gc.isenabled()): {enabled} before, {enabled_now} after")
    # More frozen objects is a freeze, none left of some an unfreeze. Fewer, but not none,
    # is no change a test made: a frozen object that is freed (its last reference dropped,
    # by this thread or another, e.g. xdist's I/O thread) leaves the frozen set with it.
    if frozen_now > frozen or (frozen > 0 and frozen_now == 0):
        changes.append(f"frozen objects: {frozen} before, {frozen_now} after")
    return changes


@pytest.fixture(autouse=True)
def _collector_guard() -> Iterator[None]:
    """Fail a test (an error at its teardown) that leaves the collector's settings changed
    or keeps more than `LEAK_BOUND` blocks alive; the settings are put back, so the tests
    after it run as they would have."""
    settings_before = _collector()
    modules = len(sys.modules)
    blocks = sys.getallocatedblocks()
    yield
    settings_after = _collector()
    problems = collector_changes(settings_before, settings_after)
    if problems:
        gc.unfreeze()
        if settings_before[2]:
            gc.freeze()
        gc.set_threshold(*settings_before[0])
        (gc.enable if settings_before[1] else gc.disable)()
    bound = LEAK_BOUND + (IMPORT_ALLOWANCE if len(sys.modules) > modules else 0)
    if sys.getallocatedblocks() - blocks > bound:
        gc.collect()  # only here: most of the growth is usually garbage not yet collected
        grown = sys.getallocatedblocks() - blocks
        if grown > bound:
            problems.append(
                f"{grown:,} more allocated blocks after a full collection (bound {bound:,}): "
                "something keeps what the test made"
            )
    if problems:
        pytest.fail(
            "the test left the process's garbage collector changed (the tests after it in "
            "this worker would pay for it): " + "; ".join(problems),
            pytrace=False,
        )

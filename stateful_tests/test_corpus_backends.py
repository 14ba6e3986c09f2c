"""The recorded corpus replays identically on both lockstep backends.

Every schedule of ``models_spec/schedules/`` is replayed on its variant once on
the greenlet backend (every logical thread a greenlet on one OS thread) and once on
the thread backend (an OS thread each): the two traces must be equal step for step
(thread, operation, resource, label, file:line, enabled set, pending operations,
virtual clock) and the failures the same (kind, invariant, exception type). The
backend decides nothing: only the schedule does. Skipped, saying why, where the
greenlet backend cannot run (``lockstep.errors.BackendUnavailable``: greenlet
missing, or a free-threaded CPython whose GIL importing it would turn back on);
``test_corpus.py`` replays the corpus on the backend there is.
"""

from __future__ import annotations

import pytest

import lockstep
from models_spec._check.check import failure_label
from models_spec._harness.catalogue import load
from models_spec._harness.corpus import load_corpus

CATALOGUE = load()
CORPUS = load_corpus()


def _replay(name: str, backend: str) -> lockstep.ExecutionResult:
    entry = CORPUS[name]
    variant = CATALOGUE.variant(name)
    adapter = variant.adapter()
    return lockstep.replay(
        variant.scenario.build(adapter),
        entry.schedule(),
        patch=adapter.patch_modules(),
        backend=backend,
    )


@pytest.mark.parametrize("name", list(CORPUS))
def test_schedule_replays_identically_on_both_backends(name: str) -> None:
    """Same steps, same failure on the greenlet and the thread backend."""
    try:
        fast = _replay(name, "greenlet")
    except lockstep.errors.BackendUnavailable as unavailable:  # refused before any step
        pytest.skip(str(unavailable))
    threads = _replay(name, "thread")
    entry = CORPUS[name]
    assert fast.failure is not None, f"{entry.file} no longer fails on the greenlet backend"
    assert (fast.failure.kind, failure_label(fast.failure)) == (entry.kind, entry.label)
    assert threads.failure is not None
    assert (threads.failure.kind, failure_label(threads.failure)) == (entry.kind, entry.label)
    assert fast.trace.steps == threads.trace.steps
    assert fast.schedule == threads.schedule

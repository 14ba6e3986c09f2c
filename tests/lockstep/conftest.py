"""Shared fixtures for lockstep's own tests."""

import threading

import pytest


@pytest.fixture(autouse=True)
def _no_leaked_threads():
    """Every test must leave no lockstep worker thread behind."""
    yield
    leaked = [t for t in threading.enumerate() if t.name.startswith("lockstep-")]
    for t in leaked:
        t.join(5)
    leaked = [t for t in threading.enumerate() if t.name.startswith("lockstep-") and t.is_alive()]
    assert leaked == []

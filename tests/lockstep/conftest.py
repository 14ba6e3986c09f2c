"""Shared fixtures for lockstep's own tests.

Every test in this directory runs once per backend ("greenlet" and "thread"): the
autouse ``backend`` fixture sets ``LOCKSTEP_BACKEND``, which is the default backend of
every explore()/replay() that names none, in this process and in the subprocesses a
test starts. A new test gets both runs for free; a test that must run on one backend
only names it explicitly (``backend=`` or ``--backend``).
"""

import threading

import pytest

from lockstep._backend import BACKEND_NAMES, ENV_VAR


@pytest.fixture(autouse=True, params=BACKEND_NAMES)
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The backend this run of the test uses by default."""
    name: str = request.param
    monkeypatch.setenv(ENV_VAR, name)
    return name


@pytest.fixture(autouse=True)
def _no_leaked_threads():
    """Every test must leave no lockstep worker (or carrier) thread behind."""
    yield
    leaked = [t for t in threading.enumerate() if t.name.startswith("lockstep-")]
    for t in leaked:
        t.join(5)
    leaked = [t for t in threading.enumerate() if t.name.startswith("lockstep-") and t.is_alive()]
    assert leaked == []

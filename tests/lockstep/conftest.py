"""Shared fixtures for lockstep's own tests.

Every test in this directory runs once per backend ("greenlet" and "thread"): the
autouse ``backend`` fixture sets ``LOCKSTEP_BACKEND``, which is the default backend of
every explore()/replay() that names none, in this process and in the subprocesses a
test starts. A new test gets both runs for free; a test that must run on one backend
only names it explicitly (``backend=`` or ``--backend``). Where the greenlet backend
cannot run (greenlet is not installed, or importing it would turn a free-threaded
CPython's GIL back on: ``lockstep._backend.greenlet_unavailable``) the "greenlet" runs
are skipped saying why, and so is every test marked with ``ls_helpers.needs_greenlet``
(it names the greenlet backend itself, or compares the two).
"""

import threading

import pytest
from ls_helpers import needs_greenlet

from lockstep._backend import BACKEND_NAMES, ENV_VAR


@pytest.fixture(
    autouse=True,
    params=[
        pytest.param(name, marks=needs_greenlet) if name == "greenlet" else name
        for name in BACKEND_NAMES
    ],
)
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

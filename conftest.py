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

Bytecode is cached during a test run even where ``PYTHONDONTWRITEBYTECODE`` is set:
a run starts many Python processes (the xdist workers, and the ``lockstep`` CLI,
``lockstep check`` workers and inner pytest sessions the tests start), and without
``__pycache__`` every one of them compiles the project from source again. On 2 cores
that was a quarter of the suite's time (155 s against 120 s, the same tests). The
``__pycache__`` directories are git-ignored.
"""

from __future__ import annotations

import os
import sys

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
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev")
)


@pytest.fixture(autouse=True)
def _inner_runs_are_not_xdist_workers(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test that runs pytest itself (``pytester``) runs a whole session of its own:
    under xdist the worker's ``PYTEST_XDIST_WORKER`` would tell that session's
    plugins it is a worker of this one."""
    if "pytester" in request.fixturenames:
        monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)

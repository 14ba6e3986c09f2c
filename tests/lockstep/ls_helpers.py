"""Helpers for lockstep tests: run a body once as a scenario and return what it produced;
pieces several test files share (a suite that records the backend, the lost-update test file,
a strategy's three methods)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from samples.cli_scenarios import _racy_count

import lockstep
from lockstep._backend import default_backend, greenlet_unavailable
from lockstep.strategies import Choice, ExecutionOutcome, StepContext
from lockstep.strategies._replay import PrefixStrategy

GREENLET_UNAVAILABLE = greenlet_unavailable()
"""Why the greenlet backend cannot run in this test process (None: it can)."""


def backend_budget(*, greenlet: int, thread: int) -> int:
    """Executions for a test that explores a scenario expecting no failure, by backend.

    Every execution checks the same assertions; the greenlet backend switches in
    microseconds, the thread backend hands over through the OS scheduler, which on a
    loaded free-threaded build costs milliseconds a switch. A test whose point holds in
    every execution explores fewer on the thread backend (what ``thread`` covers is said
    where the test calls this), so it stays far inside pytest-timeout there.
    """
    return greenlet if default_backend() == "greenlet" else thread


needs_greenlet = pytest.mark.skipif(
    GREENLET_UNAVAILABLE is not None,
    reason=f"the greenlet backend cannot run here: {GREENLET_UNAVAILABLE}",
)
"""A test that runs on the greenlet backend whatever the ``backend`` fixture says."""


def run_once(body: Callable[[], Any], *, choices=()) -> tuple[Any, lockstep.ExploreResult]:
    """Run ``body`` as a scenario under the non-preemptive default (after ``choices``)."""
    box: dict[str, Any] = {}

    def scenario() -> None:
        box["value"] = body()

    result = lockstep.explore(scenario, strategy=PrefixStrategy(choices), budget=1, shrink=False)
    return box.get("value"), result


def raises_in_run(body: Callable[[], Any]) -> BaseException | None:
    """Run ``body`` inside a run; return the exception it raised (None if none)."""
    box: dict[str, BaseException | None] = {"exc": None}

    def scenario() -> None:
        try:
            body()
        except BaseException as exc:
            box["exc"] = exc

    lockstep.explore(scenario, strategy=PrefixStrategy(()), budget=1, shrink=False)
    return box["exc"]


LOST_UPDATE_TEST = f"""
import lockstep
import pytest


@pytest.mark.lockstep(budget=300)
def test_lost_update():
    count = _racy_count()
    assert count == 2, f"lost update: {{count}}"


{inspect.getsource(_racy_count)}"""
"""A test file for ``pytester`` whose one lockstep test (``test_lost_update``) loses an
update in some interleavings: the CLI tests' lost update (``samples.cli_scenarios._racy_count``,
its source written out after the test, so that main starts on a one-digit line and the
swimlane keeps ``start main @test_sample.py:N`` on one line); its source is edited by tests
that change the code."""


class BackendSeen:
    """A suite recording which backend an explore() inside it would use."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def run(self, options: Any) -> int:
        self.seen.append(default_backend())
        return 0


class FirstChoiceMethods:
    """A strategy's three methods, always running the first thread offered, without the
    ``capabilities`` a Strategy must also declare (a subclass adds it, or shows it missing)."""

    def begin_execution(self) -> None:
        pass

    def choose(self, choices: Sequence[Choice], step: StepContext) -> Choice:
        return choices[0]

    def end_execution(self, outcome: ExecutionOutcome) -> bool:
        return False

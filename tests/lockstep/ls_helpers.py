"""Helpers for lockstep tests: run a body once as a scenario and return what it produced."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import lockstep
from lockstep._backend import greenlet_unavailable
from lockstep.strategies._replay import PrefixStrategy

GREENLET_UNAVAILABLE = greenlet_unavailable()
"""Why the greenlet backend cannot run in this test process (None: it can)."""

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

"""The Settings `lockstep check` builds from its flags reach every exploration of the
suite whole (no option threaded keyword by keyword through the harness)."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

import lockstep
from lockstep.suites import SuiteOptions
from models_spec._check.suite import plan_jobs, run_job


def test_the_suite_explores_with_the_settings_it_was_given(monkeypatch: pytest.MonkeyPatch):
    """A job carries SuiteOptions.settings; its explorations start from them, with the
    suite's own budget and shrinking applied on top."""
    given = lockstep.Settings(stall_diagnosis=0.7, stall_timeout=40.0)
    (job,) = [
        j
        for j in plan_jobs(
            SuiteOptions(strategy="pct", budget=2), scenarios=("B5-failed-remove-desyncs-lru",)
        )
        if j.implementation == "core-depth1"
    ]
    job = attrs.evolve(job, settings=given)
    seen: list[lockstep.Settings] = []
    real = lockstep.explore

    def spy(scenario: Any, settings: Any = None, **kwargs: Any) -> Any:
        seen.append(settings)
        return real(scenario, settings, **kwargs)

    monkeypatch.setattr(lockstep, "explore", spy)
    run_job(job)
    assert seen == [given]

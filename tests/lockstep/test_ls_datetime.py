"""In a patched module, ``datetime.now()`` and ``date.today()`` read the virtual clock.

Code that reads the wall clock through ``datetime`` instead of ``time`` (a cron-like
scheduler, an expiry stamp) used to see real time barely move while virtual timeouts
fired, so its due work never came due within an execution.
"""

from __future__ import annotations

import datetime as real_datetime
from typing import Any

import pytest
from samples import dates_module

import lockstep
from lockstep import explore
from lockstep import time as ls_time
from lockstep._clock import EPOCH

PATCH = ["samples.dates_module"]


def _in_run(body: Any) -> Any:
    box: dict[str, Any] = {}

    def scenario() -> None:
        box["value"] = body()

    result = explore(scenario, budget=1, patch=PATCH, shrink=False)
    assert result.failure is None, result.failure
    return box["value"]


def test_now_and_today_follow_the_virtual_clock() -> None:
    def body() -> tuple[Any, ...]:
        before = dates_module.stamp()
        ls_time.sleep(3600.0)
        return before, dates_module.stamp(), dates_module.stamp_utc(), dates_module.today()

    before, after, utc, today = _in_run(body)
    assert after - before == real_datetime.timedelta(hours=1)  # exactly: virtual
    assert before == real_datetime.datetime.fromtimestamp(EPOCH)
    assert utc == real_datetime.datetime.fromtimestamp(EPOCH + 3600.0, real_datetime.UTC)
    assert today == real_datetime.date.fromtimestamp(EPOCH + 3600.0)
    # the values are the real classes' instances
    assert type(after) is real_datetime.datetime
    assert type(today) is real_datetime.date


def test_due_work_comes_due_after_a_virtual_wait() -> None:
    def body() -> tuple[bool, bool]:
        due = dates_module.later(10.0)
        early = dates_module.is_due(due)
        ls_time.sleep(10.0)
        return early, dates_module.is_due(due)

    assert _in_run(body) == (False, True)


def test_real_values_pass_isinstance_and_construction_gives_real_instances() -> None:
    with lockstep.patched(dates_module):
        stand_in = dates_module.DateTime
        assert stand_in is not real_datetime.datetime
        assert isinstance(real_datetime.datetime(2026, 1, 1), stand_in)
        assert issubclass(real_datetime.datetime, stand_in)
        assert not isinstance(real_datetime.date(2026, 1, 1), stand_in)
        built = stand_in(2026, 1, 2, 3, 4)
        assert type(built) is real_datetime.datetime
        assert type(stand_in.fromisoformat("2026-01-02T03:04:00")) is real_datetime.datetime
        assert dates_module.timedelta is real_datetime.timedelta
        assert dates_module.datetime.timezone is real_datetime.timezone
        # outside a run, now() is the machine's
        assert abs(stand_in.now() - real_datetime.datetime.now()) < real_datetime.timedelta(
            minutes=5
        )
    assert dates_module.DateTime is real_datetime.datetime
    assert dates_module.datetime is real_datetime


def test_patching_datetime_itself_is_refused() -> None:
    with (
        pytest.raises(lockstep.InvalidArgument, match="refusing to patch 'datetime'"),
        lockstep.patched("datetime"),
    ):
        pass

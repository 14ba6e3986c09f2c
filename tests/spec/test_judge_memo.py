"""I15's verdicts are remembered per (history, initial state): the search is pure.

Most executions of a cell record one of a few histories (70% repeat in the
default check), so the driver judges each distinct one once per process.
"""

from __future__ import annotations

from typing import Any

import pytest

import models_spec._harness.driver as driver_module
from lockstep.linearizability import Operation
from models_spec.spec import initial_state


@pytest.fixture
def searches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = driver_module.check_linearizability

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(driver_module, "check_linearizability", counting)
    driver_module._judged.cache_clear()
    yield calls
    driver_module._judged.cache_clear()


def _history(output: object) -> list[Operation]:
    return [
        Operation("T0", 1, 2, ("admit", 0, "X", None, False), ("ok", None)),
        Operation("T0", 1, 2, ("complete", 0, "X", None, False, False), output),
    ]


def test_a_history_seen_before_is_not_searched_again(searches: list[int]) -> None:
    initial = initial_state(max_size=2)
    first = driver_module._judge(_history(("ok", None)), initial)
    again = driver_module._judge(_history(("ok", None)), initial)  # equal, not the same
    assert again is first
    assert searches == [1]
    other = driver_module._judge(_history(("ok", None)), initial_state(max_size=1))
    assert len(searches) == 2  # another initial state is another question
    assert other.verdict == first.verdict


def test_an_unhashable_history_is_judged_afresh(searches: list[int]) -> None:
    initial = initial_state(max_size=2)
    unhashable = ("ok", ["a list"])
    driver_module._judge(_history(unhashable), initial)
    driver_module._judge(_history(unhashable), initial)
    assert searches == [1, 1]


def test_a_different_configuration_is_another_question(searches: list[int]) -> None:
    """The spec's configuration (script, full-cache policy, weights) is left out of the
    state's equality; it still keys the memo."""
    from models_spec.fakes import Script

    history = _history(("ok", None))
    driver_module._judge(history, initial_state(max_size=2))
    driver_module._judge(history, initial_state(max_size=2, on_full="refuse"))
    driver_module._judge(
        history, initial_state(max_size=2, script=Script(load_failures={"X": [1]}))
    )
    driver_module._judge(history, initial_state(max_size=2, max_weight=3))
    driver_module._judge(history, initial_state(max_size=2, semantics={"evicts-in-rounds-of-3"}))
    assert searches == [1, 1, 1, 1, 1]
    driver_module._judge(history, initial_state(max_size=2, on_full="refuse"))
    driver_module._judge(
        history, initial_state(max_size=2, script=Script(load_failures={"X": [1]}))
    )
    assert searches == [1, 1, 1, 1, 1]  # equal configurations: remembered

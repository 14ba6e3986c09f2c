"""The driver's per-step checks reuse a verdict only on identical inputs.

`models_spec._harness.driver._StateInvariants` takes the adapter's snapshot at every step
but reruns the checks that are pure functions of the snapshot's values (I1, I4,
I11 without slack, I18 with the driver's open lease blocks) only when those
inputs changed since the last step where they held. These tests show that a
broken state is still caught at the same step and under the same invariant id:
unit tests on scripted snapshots (a changed value, a different model object, a
lease block closing, I11's slack), then every known-bug variant's recorded
schedule and a search, with the reuse on and off.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import models_spec._harness.driver as driver_module
from models_spec._check.check import explore_scenario, replay_scenario
from models_spec._harness.catalogue import load
from models_spec._harness.corpus import load_corpus
from models_spec._harness.driver import UNBOUNDED, Driver
from models_spec.adapter import CoreAdapter, Snapshot
from models_spec.fakes import Script, ScriptedRegistry
from models_spec.invariants import InvariantViolation
from tests.spec._scripted import ScriptedAdapter, ScriptedStack


@pytest.fixture
def models() -> dict[str, object]:
    registry = ScriptedRegistry(Script())
    return {rid: registry.get_model(rid)(model_id=rid) for rid in ("a", "b")}


def _snapshot(models: dict[str, object], **changes: Any) -> Snapshot:
    fields: dict[str, Any] = {
        "registered": models,
        "lru": tuple(models),
        "lifecycle": {},
        "pins": frozenset(),
        "leases": {},
        "in_flight_loads": 0,
        "max_size": 2,
    }
    fields.update(changes)
    return Snapshot(**fields)


def _checker(stack: ScriptedStack) -> tuple[Driver, Callable[[], None]]:
    registry = ScriptedRegistry(Script())
    driver = Driver(ScriptedAdapter(), stack, registry.ghost, Script(), bound=UNBOUNDED)
    checks = driver.state_checks()
    assert checks[0].each_step is False  # where another thread could run next

    def check() -> None:  # what lockstep runs where another thread could run next
        for each in checks:
            each()

    return driver, check


@pytest.fixture
def i4_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the runs of I4's check (the lambdas look it up in the module at call time)."""
    calls: list[int] = []
    real = driver_module.check_i4

    def counting(*args: Any, **kwargs: Any) -> None:
        calls.append(1)
        real(*args, **kwargs)

    monkeypatch.setattr(driver_module, "check_i4", counting)
    return calls


def test_an_unchanged_state_is_not_rechecked(
    models: dict[str, object], i4_calls: list[int]
) -> None:
    _, check = _checker(ScriptedStack(_snapshot(models)))
    check()
    check()
    check()
    assert len(i4_calls) == 1  # the reuse happens (else this module tests nothing)


def test_a_changed_value_is_checked_at_that_step(
    models: dict[str, object], i4_calls: list[int]
) -> None:
    stack = ScriptedStack(_snapshot(models))
    _, check = _checker(stack)
    check()
    check()
    stack.state = _snapshot(models, lru=("a", "b", "a"))
    with pytest.raises(InvariantViolation, match=r"^I4 violated"):
        check()
    assert len(i4_calls) == 2


def test_the_registered_models_are_read_at_every_step(models: dict[str, object]) -> None:
    stack = ScriptedStack(_snapshot(models))
    _, check = _checker(stack)
    check()
    check()
    # The same snapshot values, but the model under "a" now says it was loaded for "b"
    # (I7 reads the models themselves, not only the snapshot's values).
    models["a"].resolved_id = "b"  # type: ignore[attr-defined]
    with pytest.raises(InvariantViolation, match=r"^I7 violated"):
        check()


def test_another_model_object_under_the_same_key_is_a_change(
    models: dict[str, object], i4_calls: list[int]
) -> None:
    stack = ScriptedStack(_snapshot(models))
    _, check = _checker(stack)
    check()
    registry = ScriptedRegistry(Script())
    stack.state = _snapshot({"a": models["a"], "b": registry.get_model("b")(model_id="b")})
    check()
    assert len(i4_calls) == 2


def test_a_closing_lease_block_is_checked_at_that_step(models: dict[str, object]) -> None:
    stack = ScriptedStack(_snapshot(models, leases={"a": 1}))
    driver, check = _checker(stack)
    driver._open_lease("a", +1)
    check()
    check()
    driver._open_lease("a", -1)  # the stack still holds the lease: it outlived its block
    with pytest.raises(InvariantViolation, match=r"^I18 violated"):
        check()


def test_capacity_held_by_slack_is_rechecked(models: dict[str, object]) -> None:
    registry = ScriptedRegistry(Script())
    third = registry.get_model("c")(model_id="c")
    over = {**models, "c": third}
    stack = ScriptedStack(_snapshot(over, max_size=2), pinned_overflow=1)
    _, check = _checker(stack)
    check()  # 3 > 2, but one admission over capacity is counted: holds thanks to the slack
    stack.pinned_overflow = 0  # the snapshot did not change; the slack did
    with pytest.raises(InvariantViolation, match=r"^I11 violated"):
        check()


@pytest.fixture
def no_reuse(monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    def disable() -> None:
        monkeypatch.setattr(driver_module, "_same_state", lambda a, b: False)

    return disable


def _signature(outcome: Any) -> tuple[object, ...]:
    failure = outcome.failure
    if failure is None:
        return (outcome.executions, None, None, None)
    return (
        outcome.executions,
        True,
        failure.kind,
        failure.invariant,
        failure.message,
        len(failure.trace),
        failure.schedule.choices,
    )


def test_every_variant_schedule_fails_at_the_same_step_either_way(
    no_reuse: Callable[[], None],
) -> None:
    bugs, corpus = load(), load_corpus()
    cases = [(e.scenario, e.adapter()) for e in bugs.variant_entries if e.name in corpus]
    assert len(cases) >= 20
    schedules = [corpus[adapter.name].schedule() for _, adapter in cases]
    with_reuse = [
        _signature(replay_scenario(scenario, adapter, schedule))
        for (scenario, adapter), schedule in zip(cases, schedules, strict=True)
    ]
    no_reuse()
    without = [
        _signature(replay_scenario(scenario, adapter, schedule))
        for (scenario, adapter), schedule in zip(cases, schedules, strict=True)
    ]
    assert all(sig[1] for sig in with_reuse)  # each variant fails its schedule
    assert with_reuse == without


def test_searches_find_the_same_failures_and_the_core_the_same_pass(
    no_reuse: Callable[[], None],
) -> None:
    bugs = load()
    variants = {e.name: e for e in bugs.variant_entries}
    lru = variants["variant-B7-duplicate-lru"]  # I4, a state invariant, after 24 DPOR runs
    capacity = variants["variant-B14-admission-overshoot"]  # I11, the slack path
    scenario = bugs.scenarios["B1-remove-add-generation-split"]

    def runs() -> list[tuple[object, ...]]:
        return [
            _signature(
                explore_scenario(
                    lru.scenario, lru.adapter(), strategy="dpor", budget=40, shrink=False
                )
            ),
            _signature(
                explore_scenario(
                    capacity.scenario, capacity.adapter(), strategy="pct", budget=40, shrink=False
                )
            ),
            _signature(explore_scenario(scenario, CoreAdapter(0), strategy="random", budget=8)),
        ]

    first = runs()
    no_reuse()
    assert runs() == first
    assert [sig[2] for sig in first] == ["invariant", "invariant", None]
    assert [sig[3] for sig in first[:2]] == ["I4", "I11"]
    assert first[0][0] > 1  # found after several executions, not by the first one

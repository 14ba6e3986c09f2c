"""The suite watches the stack's shared state: what is watched, the core's declared
lock-free reads, and race variants caught by every systematic search."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import lockstep
from models_spec._check.check import explore_scenario
from models_spec._harness.scenario_index import get_scenario
from models_spec._harness.watching import default_watched, watched_objects
from models_spec.adapter import BareManagerAdapter, CoreAdapter
from models_spec.fakes import ScriptedRegistry

ROOT = Path(__file__).resolve().parents[2]


def _stack(adapter: Any) -> tuple[Any, ScriptedRegistry]:
    scenario = get_scenario("B14-admission-overshoot")
    registry = ScriptedRegistry(scenario.setup.script())
    return adapter.build(registry, max_size=2), registry


def test_default_watches_the_implementation_not_the_suites_inputs() -> None:
    """The stack's layers and helpers are watched; the registry and its ghost are not."""
    stack, registry = _stack(CoreAdapter(1))
    watched = default_watched(stack, exclude=(registry, registry.ghost))
    names = {type(obj).__qualname__ for obj in watched}
    assert {
        "ModelManagerDecorator",
        "WithFixedSizeCache",
        "ModelManager",
        "LifecycleTable",
        "LeaseTable",
        "Counters",
    } <= names
    assert not any(type(obj).__module__.startswith("models_spec") for obj in watched)


def test_an_adapter_can_choose_what_to_watch() -> None:
    """`watched(stack)` replaces the default; () watches nothing, and the verdict says so."""

    class Unwatched(BareManagerAdapter):
        def watched(self, stack: Any) -> tuple[object, ...]:
            return ()

    stack, _ = _stack(BareManagerAdapter())
    assert watched_objects(Unwatched(), stack) == []
    scenario = get_scenario("B1-remove-add-generation-split")
    outcome = explore_scenario(scenario, Unwatched(), strategy="dpor", budget=3)
    assert outcome.verdict is not None
    assert not outcome.verdict.watched
    watched = explore_scenario(scenario, BareManagerAdapter(), strategy="dpor", budget=3)
    assert watched.verdict is not None
    assert watched.verdict.watched


def test_an_object_an_adapter_names_must_be_watchable() -> None:
    """Naming something watch() cannot track is an error, not a silent skip."""

    class Slotted:
        __slots__ = ("x",)

    class Bad(BareManagerAdapter):
        def watched(self, stack: Any) -> tuple[object, ...]:
            return (Slotted(),)

    outcome = explore_scenario(
        get_scenario("B1-remove-add-generation-split"), Bad(), strategy="random", budget=1
    )
    assert outcome.failure is not None
    assert "__slots__ without __dict__" in outcome.failure.message


def _declarations() -> dict[str, dict[str, str]]:
    import modelmanager.decorators._cache_admission as admission_module
    import modelmanager.decorators._cache_book as book_module
    import modelmanager.leases as leases_module
    import modelmanager.lifecycle as lifecycle_module
    import modelmanager.manager as manager_module
    import modelmanager.statistics as statistics_module

    classes = [
        manager_module.ModelManager,
        lifecycle_module.LifecycleTable,
        leases_module.LeaseTable,
        statistics_module.Counters,
        admission_module.AdmissionControl,
        book_module.CacheBook,
    ]
    return {cls.__name__: dict(vars(cls)["__benign_races__"]) for cls in classes}


def test_every_declared_core_race_is_listed_in_the_docs() -> None:
    """docs/races.md lists each of the core's intended lock-free reads."""
    text = (ROOT / "docs" / "races.md").read_text(encoding="utf-8")
    for cls, attributes in _declarations().items():
        for attribute in attributes:
            assert re.search(rf"`{cls}\.{attribute}`", text), f"{cls}.{attribute} not documented"


def test_the_declarations_are_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without ModelManager's declaration its lock-free reads of the records (the
    cache's warm path shares the dict as ``_records``) are reported as a data race."""
    from modelmanager.manager import ModelManager

    scenario = get_scenario("random-2")
    declared = explore_scenario(scenario, CoreAdapter(0), strategy="random", budget=20)
    assert declared.failure is None, declared.failure
    monkeypatch.setattr(ModelManager, "__benign_races__", {})
    undeclared = explore_scenario(scenario, CoreAdapter(0), strategy="random", budget=20)
    assert undeclared.failure is not None
    assert undeclared.failure.kind == "data-race"
    race = undeclared.failure.race
    assert race is not None
    assert race.location.startswith(("WithFixedSizeCache#1._records", "ModelManager#1._models"))


@pytest.mark.parametrize(
    ("strategy", "budget"),
    [
        ("dpor", 100),
        pytest.param("dfs", 1500, marks=pytest.mark.slow),
        ("random", 10),
        ("pct", 20),
    ],
)
def test_a_race_variant_is_caught_as_a_data_race(strategy: str, budget: int) -> None:
    """B21's unlocked counter increment is a write/write race on the counters (declared
    for lock-free reads, not for lost updates): every strategy reports it as a data
    race (measured: DPOR 63 executions, bounded DFS 1066, random 1, PCT 5, since the
    cache's lease wrapper and restoration added switch points)."""
    from models_spec._harness.catalogue import load

    entry = load().variants_of("B21")[0]
    outcome = explore_scenario(
        entry.scenario, entry.adapter(), strategy=strategy, budget=budget, shrink=False
    )
    assert outcome.failure is not None, f"{strategy} missed it in {outcome.executions}"
    assert outcome.failure.kind == "data-race", outcome.failure.message
    race = outcome.failure.race
    assert race is not None
    assert (race.first.mode, race.second.mode) == ("write", "write")
    assert "_values" in race.location


def test_lru_order_is_one_snapshot() -> None:
    """Watching found lru_order's two lock-free copies straddling a removal (I15):
    DPOR explores the window scenario on the core and finds nothing now."""
    outcome = explore_scenario(
        get_scenario("I15-eviction-window"), CoreAdapter(0), strategy="dpor", budget=40
    )
    assert outcome.failure is None, outcome.failure


def test_unlocked_check_example_is_caught_by_dpor() -> None:
    """examples/own_manager.py: the unlocked check-then-act is found by DPOR (I2)."""
    from examples.own_manager import SerialManagerAdapter, UnlockedCheckManagerAdapter

    scenario = get_scenario("B1-remove-add-generation-split")
    buggy = explore_scenario(scenario, UnlockedCheckManagerAdapter(), strategy="dpor", budget=50)
    assert buggy.failure is not None
    assert buggy.label == "I2"
    correct = explore_scenario(scenario, SerialManagerAdapter(), strategy="dpor", budget=50)
    assert correct.failure is None, correct.failure
    assert correct.verdict is not None
    assert correct.verdict.benign == ("SerialManager#1.models",)
    assert isinstance(lockstep.Verdict, type)

"""The suite watches the stack's shared state: what is watched, the core's declared
lock-free reads, and race variants caught by every systematic search."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import lockstep
from models_spec.adapter import BareManagerAdapter, CoreAdapter
from models_spec.check import explore_scenario
from models_spec.fakes import ScriptedRegistry
from models_spec.scenarios import get_scenario
from models_spec.watching import default_watched, watched_objects

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
    import modelmanager.decorators.fixed_size_cache as cache_module
    import modelmanager.leases as leases_module
    import modelmanager.lifecycle as lifecycle_module
    import modelmanager.manager as manager_module
    import modelmanager.statistics as statistics_module

    classes = [
        manager_module.ModelManager,
        lifecycle_module.LifecycleTable,
        leases_module.LeaseTable,
        statistics_module.Counters,
        cache_module.WithFixedSizeCache,
    ]
    return {cls.__name__: dict(vars(cls)["__benign_races__"]) for cls in classes}


def test_every_declared_core_race_is_listed_in_the_docs() -> None:
    """docs/races.md lists each of the core's intended lock-free reads."""
    text = (ROOT / "docs" / "races.md").read_text(encoding="utf-8")
    for cls, attributes in _declarations().items():
        for attribute in attributes:
            assert re.search(rf"`{cls}\.{attribute}`", text), f"{cls}.{attribute} not documented"


def test_the_declarations_are_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without ModelManager's declaration its lock-free membership test is a data race."""
    from modelmanager.manager import ModelManager

    scenario = get_scenario("B14-admission-overshoot")
    declared = explore_scenario(scenario, CoreAdapter(0), strategy="random", budget=20)
    assert declared.failure is None, declared.failure
    monkeypatch.setattr(ModelManager, "__benign_races__", {})
    undeclared = explore_scenario(scenario, CoreAdapter(0), strategy="random", budget=20)
    assert undeclared.failure is not None
    assert undeclared.failure.kind == "data-race"
    assert undeclared.failure.race is not None
    assert undeclared.failure.race.location.startswith("ModelManager#1._models")


# Variants whose bug is a data race on the watched state (found as such by every
# strategy; the invariants they break are found too with races off).
RACE_VARIANTS = ("B3", "B4", "B7", "B12", "B14", "B21")


def _variant(bug: str) -> Any:
    from models_spec.catalogue import load

    catalogue = load()
    factory = next(iter(catalogue.variants_of(bug)))
    return factory() if callable(factory) else factory


@pytest.mark.parametrize("bug", RACE_VARIANTS)
@pytest.mark.parametrize("strategy", ["dpor", "dfs"])
def test_race_variants_are_caught_by_systematic_search(bug: str, strategy: str) -> None:
    """DPOR and DFS catch each race variant on its own scenario within a small budget."""
    adapter = _variant(bug)
    scenario = next(
        s for s in lockstep_scenarios() if bug in s.bugs
    )
    outcome = explore_scenario(scenario, adapter, strategy=strategy, budget=30, shrink=False)
    assert outcome.failure is not None, f"{strategy} missed {bug}"
    assert outcome.failure.kind in ("data-race", "invariant"), outcome.failure.message


def lockstep_scenarios() -> list[Any]:
    from models_spec.scenarios import named_scenarios

    return list(named_scenarios().values())


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

"""Scenario values: validation, determinism, capabilities, and the per-run world."""

from __future__ import annotations

import pytest

import lockstep
from lockstep.suites import SuiteOptions
from models_spec._check.suite import plan_jobs
from models_spec._harness.scenario_index import default_scenarios, get_scenario, named_scenarios
from models_spec.adapter import BareManagerAdapter, CoreAdapter
from models_spec.scenarios import (
    Op,
    Scenario,
    ScenarioError,
    Setup,
    basic_scenario,
    basic_scenarios,
    mixed_scenario,
    random_scenario,
    random_scenarios,
)

NAMED = named_scenarios()
SCENARIOS = default_scenarios()


def test_every_named_scenario_has_one_bug_and_a_stable_id() -> None:
    """Ids start with their bug and are unique; SCENARIOS holds the named ones first."""
    for scenario_id, scenario in NAMED.items():
        assert scenario_id == scenario.id
        assert scenario_id.startswith(f"{scenario.bugs[0]}-")
    assert list(SCENARIOS)[: len(NAMED)] == list(NAMED)
    assert [s for s in SCENARIOS if s.startswith("random-")] == ["random-1", "random-2", "random-3"]
    assert [s for s in SCENARIOS if s.startswith("basic-")] == ["basic-1", "basic-2"]


def test_basic_scenarios_need_nothing_and_always_fail_an_unload() -> None:
    """Any manager runs them; each removes its preloaded id, whose first unload fails,
    while another thread adds it again; a pure function of the seed."""
    assert basic_scenario(7) == basic_scenario(7)
    assert basic_scenario(7) != basic_scenario(8)
    assert basic_scenarios(2, first_seed=7) == (basic_scenario(7), basic_scenario(8))
    assert get_scenario("basic-42") == basic_scenario(42)
    for seed in range(1, 30):
        scenario = basic_scenario(seed)
        assert scenario.all_needs == frozenset()
        assert scenario.supported_by(BareManagerAdapter())
        (preloaded,) = scenario.setup.preload
        assert scenario.threads[0][1][0] == Op("remove", preloaded)
        assert scenario.threads[1][1][0] == Op("add", preloaded)
        assert dict(scenario.setup.unload_failures)[preloaded] == (1,)
        assert scenario.final == (Op("clear"),)
    assert basic_scenario(1).describe().endswith("\n  main, after joining them: clear")


def test_random_scenarios_are_a_pure_function_of_the_seed() -> None:
    """Same seed, same scenario; another seed, another one."""
    assert random_scenario(7) == random_scenario(7)
    assert random_scenario(7) != random_scenario(8)
    assert random_scenarios(2, first_seed=7) == (random_scenario(7), random_scenario(8))
    assert get_scenario("random-42") == random_scenario(42)


def test_mixed_scenarios_pin_and_lease_and_stay_out_of_the_default_check() -> None:
    """A pure function of the seed over pins, leases with ops inside and a cache of 1
    or 2; run by ``models_spec.hunt``, never by the default check."""
    assert mixed_scenario(7) == mixed_scenario(7)
    assert mixed_scenario(7) != mixed_scenario(8)
    assert get_scenario("mixed-42") == mixed_scenario(42)
    assert not [s for s in SCENARIOS if s.startswith("mixed-")]
    kinds: set[str] = set()
    for seed in range(40):
        scenario = mixed_scenario(seed)
        assert {"pins", "leases", "capacity"} <= scenario.all_needs
        assert scenario.setup.max_size in (1, 2)
        assert len(scenario.setup.preload) == scenario.setup.max_size
        for _, ops in scenario.threads:
            for op in ops:
                kinds.add("pinned-add" if op.pin else op.kind)
                kinds.update(f"inside-{inner.kind}" for inner in op.inside)
    assert {"pinned-add", "pin", "unpin", "acquire", "lease"} <= kinds
    assert any(kind.startswith("inside-") for kind in kinds)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: Op("explode", "X"), "op kind must be one of"),
        (lambda: mixed_scenario(1, threads=7), "threads must be an int in 1..6"),
        (lambda: mixed_scenario(1.0), "seed must be an int"),  # type: ignore[arg-type]
        (lambda: Op("add", ""), "non-empty model_id"),
        (lambda: random_scenario(1, threads=0), "threads must be an int in 1..6"),
        (lambda: random_scenario("1"), "seed must be an int"),  # type: ignore[arg-type]
        (lambda: random_scenarios(-1), "count must be an int >= 0"),
        (lambda: basic_scenario(1, ops=7), "ops must be an int in 1..6"),
        (lambda: basic_scenario(None), "seed must be an int"),  # type: ignore[arg-type]
        (lambda: basic_scenarios(True), "count must be an int >= 0"),
        (lambda: get_scenario("basic-x"), "basic-<seed> or mixed-<seed>"),
        (lambda: Op("clear", "a"), "op 'clear' takes no model_id"),
        (
            lambda: Scenario("S", (), "t", [("T1", [Op("keys")])], final=["clear"]),
            "final needs a tuple of Op",
        ),
        (lambda: get_scenario("B99-nothing"), "unknown scenario 'B99-nothing'"),
        (lambda: Op("remove", "X", alias="A"), "alias is for add and acquire"),
        (lambda: Op("add", "X", body_raises=True), "body_raises is for lease and acquire"),
        (lambda: Setup(lock_timeout=float("inf")), "Setup.lock_timeout must be a finite"),
        (lambda: Setup(queue_lock_timeout=-1), "Setup.queue_lock_timeout must be a finite"),
        (lambda: Setup(lock_timeout=True), "Setup.lock_timeout must be a finite"),
        (lambda: Setup(lock_timeout=1e300), "threading.TIMEOUT_MAX"),
        (lambda: Setup(max_size=0), "Setup.max_size must be an int >= 1"),
    ],
)
def test_bad_declarations_raise_scenario_error(call: object, message: str) -> None:
    """Misdeclared scenarios and unknown ids raise ScenarioError naming the value."""
    with pytest.raises(ScenarioError, match=message):
        call()  # type: ignore[operator]


def test_capabilities_decide_support() -> None:
    """A scenario with refresh ops needs the refresh capability; the bare manager lacks it."""
    scenario = NAMED["B13-phantom-from-refresh"]
    assert {"lru", "refresh"} <= scenario.all_needs
    assert scenario.supported_by(CoreAdapter(0))
    assert not scenario.supported_by(BareManagerAdapter())
    assert NAMED["B9-failed-multi-eviction"].all_needs >= {"pins", "capacity"}


def test_built_scenario_runs_under_lockstep_and_names_itself() -> None:
    """build(adapter) gives a zero-argument callable lockstep.explore runs."""
    adapter = CoreAdapter(0)
    run = NAMED["B12-lock-table-leak"].build(adapter)
    assert run.__name__ == "scenario_B12-lock-table-leak"
    result = lockstep.explore(run, budget=3, patch=adapter.patch_modules(), progress=False)
    assert result.failure is None
    assert result.executions == 3


def test_strategy_option_narrows_every_job() -> None:
    """--strategy pct: core depth 0 runs follow + pct, variants replay + pct."""
    jobs = plan_jobs(SuiteOptions(strategy="pct"), scenarios=("B5-failed-remove-desyncs-lru",))
    modes = {(j.implementation, j.modes) for j in jobs}
    assert ("core-depth0", ("follow", "pct")) in modes
    assert ("core-depth1", ("pct",)) in modes
    assert ("variant-B5-failed-remove-desync", ("replay", "pct")) in modes


def test_scenarios_are_hashable_values() -> None:
    """Frozen all the way down: scenarios can be set members and dict keys."""
    assert len(set(SCENARIOS.values())) == len(SCENARIOS)
    setup = NAMED["B2-constructor-failure-split"].setup
    assert setup.load_failures == (("X", (1,)),)
    assert setup.script().load_fails("X", 1)
    assert not setup.script().load_fails("X", 2)

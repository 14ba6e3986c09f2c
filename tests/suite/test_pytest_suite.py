"""The pytest entry point, used the way a user's CI would: against the core adapter."""

from __future__ import annotations

from pathlib import Path

import pytest

from models_spec.adapter import AdapterError, BareManagerAdapter, CoreAdapter
from models_spec.pytest_suite import conformance_tests, resolve_adapter
from models_spec.scenarios import ScenarioError

# What a user writes: one parametrized test per scenario (a subset, to stay fast).
test_core_conformance = conformance_tests(
    CoreAdapter,
    scenarios=[
        "B4-warm-fast-path-bypass",
        "B9-failed-multi-eviction",
        "B13-phantom-from-refresh",
        "B17-unload-under-running-model",
        "random-1",
    ],
    budget=10,
)

# By "module:factory"; a scenario the adapter cannot run is skipped (B13 needs an LRU).
test_bare_conformance = conformance_tests(
    "models_spec.adapter:BareManagerAdapter",
    scenarios=["B12-lock-table-leak", "B17-unload-under-running-model"],
    strategies=("pct",),
    budget=10,
)


class _Request:
    """What the generated test reads from pytest's ``request``: the save directory."""

    def __init__(self, save_dir: Path) -> None:
        self.config = self
        self.save_dir = save_dir

    def getoption(self, name: str) -> str:
        assert name == "--lockstep-save-dir"
        return str(self.save_dir)


def test_generated_test_fails_on_a_variant(tmp_path: Path) -> None:
    """The generated test fails (with the invariant named) when the adapter is broken,
    saving the schedule and timeline and printing the command that replays it."""
    from models_spec._harness.catalogue import load

    variant = load().variant("variant-B13-refresh-phantom")
    generated = conformance_tests(variant.adapter, scenarios=["B13-phantom-from-refresh"])
    with pytest.raises(pytest.fail.Exception, match=r"I4 \(LRU bijection\) broken") as raised:
        generated("B13-phantom-from-refresh", _Request(tmp_path))
    saved = sorted(p.name for p in tmp_path.iterdir())
    assert [Path(name).suffix for name in saved] == [".html", ".json"]
    schedule = tmp_path / saved[1]
    # On one line, or the command alone on the next when the path makes the line too long.
    assert f"reproduce: lockstep replay {schedule}" in " ".join(str(raised.value).split())


def test_generated_test_skips_missing_capabilities(request: pytest.FixtureRequest) -> None:
    """A missing capability is a pytest skip naming it."""
    generated = conformance_tests(BareManagerAdapter, scenarios=["B13-phantom-from-refresh"])
    with pytest.raises(pytest.skip.Exception, match="lru"):
        generated("B13-phantom-from-refresh", request)


def test_bad_arguments_are_rejected_at_definition_time() -> None:
    """Unknown scenario ids, empty strategies and bad budgets raise before any test runs."""
    with pytest.raises(ScenarioError, match="no-such-scenario"):
        conformance_tests(CoreAdapter, scenarios=["no-such-scenario"])
    with pytest.raises(ValueError, match="strategies"):
        conformance_tests(CoreAdapter, strategies=())
    with pytest.raises(ValueError, match="budget"):
        conformance_tests(CoreAdapter, budget=0)


def test_resolve_adapter_accepts_instances_factories_and_targets() -> None:
    """An adapter, a class, a factory or a target string all resolve; junk does not."""
    assert resolve_adapter(CoreAdapter(1)).name == "core-depth1"
    assert resolve_adapter(CoreAdapter).name == "core-depth0"
    assert resolve_adapter("models_spec.adapter:BareManagerAdapter").name == "core-bare-manager"
    with pytest.raises(AdapterError):
        resolve_adapter(object)  # type: ignore[arg-type]


def test_shards_of_the_generated_tests_partition_the_scenarios() -> None:
    """conformance_tests(shard="K/N") keeps a disjoint slice; the N slices are all ids."""
    from models_spec._harness.scenario_index import default_scenarios

    def ids(test: object) -> list[str]:
        marks = getattr(test, "pytestmark", [])
        (mark,) = [m for m in marks if m.name == "parametrize"]
        return list(mark.args[1])

    everything = ids(conformance_tests(CoreAdapter))
    assert everything == list(default_scenarios())
    parts = [ids(conformance_tests(CoreAdapter, shard=f"{k}/3")) for k in (1, 2, 3)]
    assert sorted(x for part in parts for x in part) == sorted(everything)
    assert sum(len(part) for part in parts) == len(everything)
    with pytest.raises(ValueError, match="K/N"):
        conformance_tests(CoreAdapter, shard="4of3")

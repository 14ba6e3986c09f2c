"""Saved schedules name a scenario `lockstep replay` can import."""

from __future__ import annotations

import pytest

import lockstep
from lockstep._cli import load_scenario
from models_spec._harness.catalogue import load
from models_spec._harness.corpus import load_corpus
from models_spec.replayable import replay_name, resolve


def test_corpus_schedule_ids_resolve_and_replay_to_the_recorded_failure() -> None:
    """lockstep._cli.load_scenario finds the corpus's scenario; replay fails as recorded."""
    entry = load_corpus()["variant-B13-refresh-phantom"]
    schedule = entry.schedule()
    assert schedule.scenario_id == (
        f"models_spec.replayable:{replay_name(entry.scenario, entry.variant)}"
    )
    scenario = load_scenario(schedule.scenario_id)
    result = lockstep.replay(
        scenario, schedule, patch=load().variant(entry.variant).adapter().patch_modules()
    )
    assert result.failure is not None
    assert result.failure.invariant == entry.label


@pytest.mark.parametrize(
    "name",
    [
        "B4-warm-fast-path-bypass",  # no implementation
        "B4-warm-fast-path-bypass@no-such-implementation",
        "no-such-scenario@core-depth0",
        "B4-warm-fast-path-bypass@core-depthX",
    ],
)
def test_bad_names_raise_attribute_error(name: str) -> None:
    """Unknown names are an AttributeError naming the problem (what getattr expects)."""
    with pytest.raises(AttributeError):
        resolve(name)


def test_core_names_resolve() -> None:
    """Every core depth and the bare manager can be named."""
    for implementation in ("core-depth0", "core-depth3", "core-bare-manager"):
        assert callable(resolve(replay_name("B12-lock-table-leak", implementation)))

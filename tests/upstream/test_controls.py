"""Controls: what fails on upstream's manager because it disposes per-model locks passes
on the same manager with disposal taken out, so the table shows cause, not coincidence."""

from __future__ import annotations

import pytest

from models_spec._check.check import explore_scenario, follow_scenario
from models_spec._check.suite import DEFAULT_BUDGET
from models_spec._harness.scenario_index import get_scenario
from models_spec.adapter import load_adapter
from models_spec.upstream_schedules import load_manifest
from tests.upstream._upstream import require_upstream

require_upstream()

TARGET = "models_spec.targets.roboflow_inference"
DISPOSAL_SCENARIOS = (
    "B1-remove-add-generation-split",
    "B2-constructor-failure-split",
    "B3-dispose-after-release",
)
DISPOSAL_BUGS = frozenset({"B1", "B2", "B3", "B16"})
MANAGER_ENTRIES = [e for e in load_manifest() if e.implementation == "inference-manager"]
# The manager's failures the control is about (its other ones it shares with the control):
# the split generations and the false failure of a timed-out disposal, in any scenario.
DISPOSAL_ENTRIES = [e for e in MANAGER_ENTRIES if e.bug in DISPOSAL_BUGS]


@pytest.mark.parametrize("scenario", DISPOSAL_SCENARIOS)
@pytest.mark.parametrize("strategy", ["pct", "dpor", "random"])
def test_never_dispose_control_passes_where_the_manager_fails(scenario: str, strategy: str) -> None:
    """The manager fails each of these scenarios; the control passes the same search."""
    control = load_adapter(f"{TARGET}:manager_never_dispose")
    outcome = explore_scenario(
        get_scenario(scenario), control, strategy=strategy, budget=DEFAULT_BUDGET, seed=0
    )
    assert outcome.failure is None, str(outcome.failure)
    assert outcome.executions >= 1


def test_the_manager_fails_every_disposal_scenario() -> None:
    """Cause needs an effect: a recorded failure of the manager exists for each scenario."""
    assert {e.scenario for e in DISPOSAL_ENTRIES} >= set(DISPOSAL_SCENARIOS)


def test_the_managers_other_failures_are_shared_by_the_control() -> None:
    """What the manager fails that is not a disposal bug the control fails too, as the
    same finding: disposal is not their cause (none on 1.8.3 since clear()'s semantics are
    declared)."""
    control = {
        (e.scenario, e.invariant, e.bug)
        for e in load_manifest()
        if e.implementation == "inference-manager-never-dispose"
    }
    others = [e for e in MANAGER_ENTRIES if e.bug not in DISPOSAL_BUGS]
    for entry in others:
        assert (entry.scenario, entry.invariant, entry.bug) in control, entry


@pytest.mark.parametrize(
    "entry", DISPOSAL_ENTRIES, ids=[e.file.removesuffix(".json") for e in DISPOSAL_ENTRIES]
)
def test_the_failing_interleaving_passes_on_the_control(entry: object) -> None:
    """Each recorded manager failure, followed on the control as far as it offers the same
    choices, ends without a failure: only the disposal differs."""
    import lockstep

    control = load_adapter(f"{TARGET}:manager_never_dispose")
    schedule = lockstep.Schedule.load(entry.path())  # type: ignore[attr-defined]
    outcome = follow_scenario(get_scenario(entry.scenario), control, schedule)  # type: ignore[attr-defined]
    assert outcome.failure is None, str(outcome.failure)


def test_a_control_whose_method_is_gone_is_inert(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where ModelManager has no `_dispose_model_lock` (pull request #2821 removed it), the
    override changes nothing: the control says it is inert, naming the method."""
    from models_spec.targets.roboflow_inference import _controls

    monkeypatch.setattr(_controls, "_Base", type("ModelManager", (), {}))
    reason = _controls.inert_reason()
    assert reason.startswith(
        "control is inert: `_dispose_model_lock` is not a method of ModelManager"
    )


def test_a_control_never_called_in_a_cell_is_an_error(tmp_path: object) -> None:
    """B10 never disposes a lock: the control's cell is ERROR, not a PASS that compares
    nothing; B1 disposes, so the control's PASS there stands."""
    from pathlib import Path

    from lockstep.suites import SuiteOptions
    from models_spec._check.suite import plan_jobs, run_job

    spec = f"{TARGET}:manager_never_dispose"
    options = SuiteOptions(budget=5, output_dir=Path(str(tmp_path)), target=spec)
    jobs = plan_jobs(
        options,
        targets=[("inference-manager-never-dispose", spec)],
        scenarios=("B1-remove-add-generation-split", "B10-alias-is-the-key"),
    )
    cells = {job.scenario: run_job(job) for job in jobs}
    assert cells["B1-remove-add-generation-split"].verdict == "PASS"
    b10 = cells["B10-alias-is-the-key"]
    assert (b10.verdict, b10.label) == ("ERROR", "inert control")
    assert "upstream never called `_dispose_model_lock`" in b10.message

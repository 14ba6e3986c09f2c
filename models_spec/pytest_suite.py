"""Run the model-manager scenarios as pytest tests against your own adapter.

`conformance_tests(adapter)` returns a test function parametrized over the
scenarios; assign it to a ``test_*`` name in one of your test modules and
pytest collects one test per scenario.  Each test explores the scenario
under every requested lockstep strategy within the budget and fails with
lockstep's report (the broken invariant, the swimlanes of the shrunk
failing interleaving and the schedule to replay it) when any run fails.
A scenario needing a capability your adapter lacks is skipped, naming it.

Worked example (``tests/test_conformance.py`` of a project that wraps its
own manager in an adapter, see `models_spec.adapter.ManagerAdapter`)::

    from models_spec.pytest_suite import conformance_tests

    from mypkg.testing import MyAdapter  # name, capabilities, build, snapshot,
                                         # patch_modules

    test_conformance = conformance_tests(MyAdapter, budget=50)

    # or by "module:factory", as `lockstep check --target` takes it:
    test_conformance_core = conformance_tests("models_spec.adapter:CoreAdapter")

Then ``python3 -m pytest tests/test_conformance.py`` runs
``test_conformance[B1-remove-add-generation-split]``, ...,
``test_conformance[random-3]``.  ``scenarios=`` narrows the ids and
``strategies=`` the strategies ("pct", "dpor", "random", "dfs").
Deterministic: seeded strategies, fresh state per execution, so the verdicts
are the same under ``pytest -n auto`` (pytest-xdist) or split across machines
(``docs/ci.md``).

Before any search the adapter is validated once (`models_spec._harness.validate`: one
sequential add/remove); a violation fails every test naming the missing piece.
A test whose executions reached no switch point inside the code under test
fails ("0 switch points: patch_modules() patches nothing (it returns no module); ...: add
module mymgr to patch_modules()"), as does a
thread stuck in an uncontrolled primitive (a stall). A failure saves its
schedule and HTML timeline under ``--lockstep-save-dir`` and explains itself
(`models_spec._check.report`): the invariant and message, the shrunk swimlanes, the
paths and a ``lockstep replay`` command that works from any directory.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from lockstep.suites import Shard
from models_spec._check.check import explore_scenario
from models_spec._check.report import explain_failure, safe_stem, write_artifacts
from models_spec._check.unpatched import zero_switch_head
from models_spec._harness.scenario_index import default_scenarios, get_scenario
from models_spec._harness.validate import validate_adapter
from models_spec.adapter import AdapterError, ManagerAdapter, load_adapter

__all__ = ["conformance_tests", "resolve_adapter"]

AdapterSource = ManagerAdapter | Callable[[], ManagerAdapter] | str


def resolve_adapter(source: AdapterSource) -> ManagerAdapter:
    """An adapter from an adapter, a zero-argument factory (or class), or "module:factory".

    Raises `AdapterError` when the result is not a `ManagerAdapter`.
    """
    if isinstance(source, str):
        return load_adapter(source)
    candidate: Any = source
    if isinstance(source, type) or (callable(source) and not hasattr(source, "build")):
        candidate = source()
    if not isinstance(candidate, ManagerAdapter):
        raise AdapterError(f"{source!r} did not give a models_spec.adapter.ManagerAdapter")
    return candidate


def conformance_tests(
    adapter: AdapterSource,
    *,
    scenarios: Sequence[str] | None = None,
    strategies: Sequence[str] = ("pct", "dpor"),
    budget: int = 40,
    seed: int = 0,
    shard: str | Shard | None = None,
) -> Callable[..., None]:
    """A pytest test function parametrized over `scenarios` (default: all).

    ``shard`` ("K/N" or a `lockstep.suites.Shard`, e.g. from an environment
    variable of a CI matrix job) keeps only that shard of the scenarios: the N
    shards are disjoint and together are all of them (``docs/ci.md``).
    Raises `ScenarioError` at definition time for an unknown scenario id and
    `ValueError` for an empty strategy list, a budget below 1 or a bad shard.  The adapter
    is resolved lazily, in each test, so a broken adapter fails the tests
    with its `AdapterError` instead of breaking collection.
    """
    import pytest  # noqa: PLC0415 - pytest is only needed when this is used

    ids = list(scenarios) if scenarios is not None else list(default_scenarios())
    for scenario_id in ids:
        get_scenario(scenario_id)  # raises ScenarioError naming the known ids
    if not strategies:
        raise ValueError("strategies must name at least one lockstep strategy")
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise ValueError(f"budget must be an int >= 1 (got {budget!r})")
    if shard is not None:
        ids = (Shard.parse(shard) if isinstance(shard, str) else shard).select(ids)
    chosen = tuple(strategies)
    validated: dict[int, str | None] = {}

    @pytest.mark.parametrize("scenario_id", ids)
    def test_scenario(scenario_id: str, request: pytest.FixtureRequest) -> None:
        implementation = resolve_adapter(adapter)
        key = id(implementation)
        if key not in validated:
            try:
                validate_adapter(implementation)
                validated[key] = None
            except AdapterError as error:
                validated[key] = str(error)
        if validated[key] is not None:
            pytest.fail(str(validated[key]), pytrace=False)
        scenario = get_scenario(scenario_id)
        if not scenario.supported_by(implementation):
            missing = sorted(scenario.all_needs - frozenset(implementation.capabilities))
            pytest.skip(f"{implementation.name} lacks capabilities {missing}")
        reached = 0
        for strategy in chosen:
            outcome = explore_scenario(
                scenario, implementation, strategy=strategy, budget=budget, seed=seed
            )
            reached += outcome.switch_points or 0
            if outcome.failure is not None:
                save_dir = Path(_save_dir(request)).resolve()
                saved = write_artifacts(
                    save_dir,
                    safe_stem(scenario_id, implementation.name, strategy),
                    outcome.failure,
                    title=f"{scenario_id} on {implementation.name} ({strategy})",
                    description=scenario.story(),
                )
                verb = "stalled under" if outcome.kind == "stall" else "found by"
                pytest.fail(
                    explain_failure(
                        outcome.failure,
                        heading=(
                            f"{scenario_id} on {implementation.name}: {verb} {strategy} "
                            f"at execution {outcome.executions}"
                        ),
                        artifacts=saved,
                        scenario=scenario.story(),
                    ),
                    pytrace=False,
                )
        if reached == 0:
            pytest.fail(
                f"{zero_switch_head(implementation)}. {scenario_id} never reached a "
                "controlled primitive inside the code under test, so none of its "
                "interleavings was explored",
                pytrace=False,
            )

    test_scenario.__doc__ = "One models_spec scenario explored under lockstep (conformance)."
    return test_scenario


def _save_dir(request: Any) -> str:
    """The lockstep plugin's ``--lockstep-save-dir`` (its default without the plugin)."""
    try:
        value = request.config.getoption("--lockstep-save-dir")
    except ValueError:  # the lockstep plugin is not loaded
        value = None
    return str(value or "lockstep-failures")

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
Deterministic: seeded strategies, fresh state per execution.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from models_spec.adapter import AdapterError, ManagerAdapter, load_adapter
from models_spec.check import explore_scenario
from models_spec.scenarios import default_scenarios, get_scenario

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
) -> Callable[[str], None]:
    """A pytest test function parametrized over `scenarios` (default: all).

    Raises `ScenarioError` at definition time for an unknown scenario id and
    `ValueError` for an empty strategy list or a budget below 1.  The adapter
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
    chosen = tuple(strategies)

    @pytest.mark.parametrize("scenario_id", ids)
    def test_scenario(scenario_id: str) -> None:
        implementation = resolve_adapter(adapter)
        scenario = get_scenario(scenario_id)
        if not scenario.supported_by(implementation):
            missing = sorted(scenario.all_needs - frozenset(implementation.capabilities))
            pytest.skip(f"{implementation.name} lacks capabilities {missing}")
        for strategy in chosen:
            outcome = explore_scenario(
                scenario, implementation, strategy=strategy, budget=budget, seed=seed
            )
            if outcome.failure is not None:
                pytest.fail(
                    f"{scenario_id} failed on {implementation.name} under {strategy} "
                    f"({outcome.label}):\n{outcome.failure}",
                    pytrace=False,
                )

    test_scenario.__doc__ = "One models_spec scenario explored under lockstep (conformance)."
    return test_scenario

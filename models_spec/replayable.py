"""Scenario callables by name, so ``lockstep replay`` can find a saved schedule's scenario.

Schedules written by the suite, the corpus recorder and `models_spec._check.check`
carry ``scenario_id = "models_spec.replayable:<scenario id>@<implementation>"``
and, in ``Schedule.patch``, the adapter's `patch_modules()` by name (lockstep's
explore records them), so ``lockstep replay FILE`` (the exact command is in
every failure's report) needs no ``--patch`` flags: it imports this module and
asks it for that attribute, which is the scenario built for that
implementation: ``core-depth0`` ... ``core-depth3``, ``core-bare-manager`` or a
known-bug variant's name, or ``target=<module>:<factory>`` for a user's adapter
loaded with ``--target`` (dots of the module written as ``/``, since lockstep
reads the part after the colon as a dotted attribute path).
"""

from __future__ import annotations

from collections.abc import Callable

from models_spec._harness.catalogue import load
from models_spec._harness.scenario_index import get_scenario
from models_spec.adapter import (
    AdapterError,
    BareManagerAdapter,
    ManagerAdapter,
    core_adapter_named,
    load_adapter,
    loaded_from,
)
from models_spec.scenarios import ScenarioError

__all__ = ["implementation_token", "replay_name", "resolve"]

_TARGET_PREFIX = "target="


def replay_name(scenario_id: str, implementation: str) -> str:
    """The attribute name for `scenario_id` on `implementation`."""
    return f"{scenario_id}@{implementation}"


def implementation_token(adapter: ManagerAdapter) -> str:
    """How a schedule names `adapter`: its name, or its ``--target`` for a loaded one."""
    target = loaded_from(adapter)
    if target is None:
        return adapter.name
    return _TARGET_PREFIX + target.replace(".", "/")


def _adapter(implementation: str) -> ManagerAdapter | None:
    if implementation.startswith(_TARGET_PREFIX):
        target = implementation.removeprefix(_TARGET_PREFIX).replace("/", ".")
        try:
            return load_adapter(target)
        except AdapterError as error:
            raise AttributeError(f"cannot load the recorded target: {error}") from None
    if implementation.startswith("core-depth"):
        return core_adapter_named(implementation)
    if implementation == BareManagerAdapter().name:
        return BareManagerAdapter()
    entry = load().variants.get(implementation)
    return None if entry is None else entry.adapter()


def resolve(name: str) -> Callable[[], None]:
    """The scenario callable called `name` ("<scenario id>@<implementation>").

    Raises AttributeError (what ``getattr`` on this module raises) naming the
    problem.
    """
    scenario_id, sep, implementation = name.rpartition("@")
    adapter = _adapter(implementation) if sep else None
    if adapter is None:
        raise AttributeError(
            f"{name!r} is not '<scenario id>@<implementation>' with a known implementation"
        )
    try:
        scenario = get_scenario(scenario_id)
    except ScenarioError as error:
        raise AttributeError(str(error)) from None
    return scenario.build(adapter)


def __getattr__(name: str) -> Callable[[], None]:
    if name.startswith("__"):
        raise AttributeError(name)
    return resolve(name)

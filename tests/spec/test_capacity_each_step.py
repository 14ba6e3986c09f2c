"""I11 holds at every step, also where the running thread alone can go on.

Lockstep checks invariants where another thread could run next: a state only the
running thread can see is checked where its stretch ends. Capacity is not such a
state: models alive at once are memory in use whether or not another thread could
look, and the other threads may be blocked on the very load that overshoots. So
the driver registers a twin of I11 with ``each_step=True``, which reads the models
alive from the ghost (`Ghost.live`) and takes the snapshot only past the bound.
"""

from __future__ import annotations

from typing import Any

import pytest

import lockstep
from lockstep import DFSStrategy, explore
from models_spec._harness.driver import Driver
from models_spec.adapter import Snapshot
from models_spec.fakes import Ghost, Script, ScriptedRegistry
from tests.spec._scripted import ScriptedAdapter, ScriptedStack


def _state(models: dict[str, Any]) -> Snapshot:
    return Snapshot(
        registered=dict(models),
        lru=tuple(models),
        lifecycle={},
        pins=frozenset(),
        leases={},
        in_flight_loads=0,
        max_size=2,
    )


def _overshoot_scenario(*, overshoot: bool, each_step: bool = True) -> Any:
    """One worker loads a and b, then (``overshoot``) loads c over the bound of 2 and
    unloads it again before anything else can run: the main thread waits in join, so
    every step of the worker's is one where it alone can go on."""

    def scenario() -> None:
        registry = ScriptedRegistry(Script())
        stack = ScriptedStack(_state({}))
        driver = Driver(ScriptedAdapter(), stack, registry.ghost, Script(), bound=2)
        for check in driver.state_checks():
            if check.each_step and not each_step:
                continue
            lockstep.add_invariant(check, each_step=check.each_step)

        def worker() -> None:
            models = {rid: registry.get_model(rid)(model_id=rid) for rid in ("a", "b")}
            stack.state = _state(models)
            lockstep.checkpoint("two loaded")
            if overshoot:
                third = registry.get_model("c")(model_id="c")
                stack.state = _state({**models, "c": third})
                lockstep.checkpoint("three loaded")  # alone: main waits in join
                third.clear_cache()
                stack.state = _state(models)
            lockstep.checkpoint("two again")

        lockstep.spawn(worker).join()

    return scenario


def test_an_overshoot_only_the_loading_thread_could_see_is_reported():
    failure = explore(_overshoot_scenario(overshoot=True), strategy=DFSStrategy(), budget=5).failure
    assert failure is not None
    assert failure.kind == "invariant"
    assert failure.invariant == "I11"
    assert (
        "3 models loaded (['a', 'b', 'c']) and 0 load(s) in flight at once, more than max_size 2"
        in failure.message
    )


def test_without_the_each_step_twin_it_would_pass_unseen():
    """What the twin is for: the checks made where another thread could run next see
    two models before and after, never the third."""
    result = explore(
        _overshoot_scenario(overshoot=True, each_step=False), strategy=DFSStrategy(), budget=5
    )
    assert result.failure is None


def test_within_the_bound_nothing_is_reported():
    result = explore(_overshoot_scenario(overshoot=False), strategy=DFSStrategy(), budget=5)
    assert result.failure is None


def test_the_ghost_counts_the_models_alive():
    registry = ScriptedRegistry(Script(load_failures={"b": [1]}))
    ghost: Ghost = registry.ghost
    a = registry.get_model("a")(model_id="a")
    assert ghost.live == 1
    with pytest.raises(Exception, match="b"):
        registry.get_model("b")(model_id="b")  # a failed constructor holds nothing
    assert ghost.live == 1
    a.clear_cache()
    assert ghost.live == 0
    a.clear_cache()  # a second teardown frees nothing more
    assert ghost.live == 0

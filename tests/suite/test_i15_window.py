"""The eviction window (I15) is specified: the core reaches it, the spec allows exactly it.

A cold add that needs room chooses its victim and commits to it (revalidated
at the commit); the victim is unregistered only when its ``clear_cache``
returns.  In between, another thread's removal may complete and observers
(``keys``, ``lru_order``, ``len``, ``in``) still list the victim.  The spec
makes the add three instants (admit: choose; evict: unload; complete:
register), so such a history is linearizable, while a victim listed after
the add returned, or a victim evicted although the room existed at the
admission, is not.
"""

from __future__ import annotations

from typing import Any

import lockstep
from lockstep.linearizability import Operation, check_linearizability
from models_spec._harness.scenario_index import get_scenario
from models_spec.adapter import CoreAdapter
from models_spec.scenarios import World
from models_spec.spec import expand_adds, initial_state, step

WINDOW = get_scenario("I15-eviction-window")


def _op(process: str, call: int, ret: int | None, op_input: Any, output: Any = None) -> Operation:
    return Operation(process, call, ret, op_input, output)


def _verdict(ops: list[Operation]) -> str:
    initial = initial_state(max_size=2)
    return check_linearizability(expand_adds(ops), step, initial=initial).verdict


def _window_history(keys_call: int, keys_ret: int) -> list[Operation]:
    """a, b loaded; T1 adds c [10, 20]; T2 removes b [11, 12]; T3 reads keys."""
    return [
        _op("main", 0, 1, ("add", "a", None, False), ("ok", None)),
        _op("main", 2, 3, ("add", "b", None, False), ("ok", None)),
        _op("T1", 10, 20, ("add", "c", None, False), ("ok", None)),
        _op("T2", 11, 12, ("remove", "b"), ("ok", None)),
        _op("T3", keys_call, keys_ret, ("keys",), ("ok", ("a",))),
        _op("main", 30, 31, ("keys",), ("ok", ("c",))),
    ]


def test_the_window_is_linearizable_and_closes_when_the_add_returns() -> None:
    """Victim a listed after b's removal returned, during the add: legal.  Listed after
    the add returned: illegal (the eviction is an instant of the add)."""
    assert _verdict(_window_history(13, 14)) == "ok"
    assert _verdict(_window_history(21, 22)) == "illegal"


def test_an_eviction_needs_room_at_its_admission() -> None:
    """b was removed before the add was called: no room needed, evicting a is illegal."""
    history = [
        _op("main", 0, 1, ("add", "a", None, False), ("ok", None)),
        _op("main", 2, 3, ("add", "b", None, False), ("ok", None)),
        _op("T2", 4, 5, ("remove", "b"), ("ok", None)),
        _op("T1", 10, 20, ("add", "c", None, False), ("ok", None)),
        _op("main", 30, 31, ("keys",), ("ok", ("c",))),
    ]
    assert _verdict(history) == "illegal"


def _shows_window(history: tuple[Operation, ...]) -> bool:
    """An observer listed the victim a after b's removal returned, during c's add,
    and a is gone at the end."""
    add = next(op for op in history if op.input[:2] == ("add", "c"))
    remove = next(op for op in history if op.input == ("remove", "b"))
    final = history[-2] if history[-1].input == ("lru",) else history[-1]
    if add.ret is None or remove.ret is None or "a" in (final.output or ("", ()))[1]:
        return False
    return any(
        op.process == "T3"
        and op.input in (("keys",), ("lru",))
        and op.output is not None
        and "a" in op.output[1]
        and remove.ret < op.call
        and op.ret is not None
        and op.ret < add.ret
        for op in history
    )


def test_the_core_reaches_the_window_and_passes() -> None:
    """PCT on the core: no failure (I15 judged every time), and some execution
    exhibits the window."""
    adapter = CoreAdapter(0)
    windows = 0

    def scenario() -> None:
        nonlocal windows
        world = World(WINDOW, adapter)
        world.run()
        if _shows_window(world.driver.recorder.history()):
            windows += 1

    result = lockstep.explore(
        scenario,
        strategy=lockstep.PCTStrategy(seed=0),
        budget=150,
        patch=adapter.patch_modules(),
    )
    assert result.failure is None, str(result.failure)
    assert windows > 0

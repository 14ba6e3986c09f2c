"""A cell that reached no switch point names what was patched, the real lock the stack
holds and the module to add; cells failing from one such cause are explained once."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from types import ModuleType

from examples.own_manager import SerialManagerAdapter
from models_spec._check.cells import Cell
from models_spec._check.report import failure_reports
from models_spec._check.unpatched import uncontrolled_cause, zero_switch_head


class _PatchesItself(SerialManagerAdapter):
    """An adapter in its own file that patches that file, not the manager's module."""

    def patch_modules(self) -> Sequence[ModuleType]:
        return [sys.modules[__name__]]


def test_the_module_to_add_is_the_one_holding_the_real_lock() -> None:
    assert zero_switch_head(_PatchesItself()) == (
        f"0 switch points: patch_modules() patches {__name__}; stack._lock, a real "
        "threading.Lock that examples.own_manager.SerialManager holds, is not controlled by "
        "lockstep: add module examples.own_manager to patch_modules()"
    )


def test_a_patched_manager_has_no_uncontrolled_lock_to_name() -> None:
    adapter = SerialManagerAdapter()
    assert uncontrolled_cause(adapter) == ""
    assert zero_switch_head(adapter) == (
        "0 switch points: patch_modules() patches examples.own_manager: is the code under "
        "test in one of them?"
    )


def _cell(scenario: str, cause: str) -> Cell:
    return Cell(
        scenario,
        "mine",
        "target",
        "ERROR",
        "uncontrolled sync",
        1,
        0.0,
        (),
        (),
        explanation=f"{scenario} on mine: the full report",
        cause=cause,
    )


def test_cells_with_one_cause_are_explained_once() -> None:
    lock = "stack._lock: add module m"
    cells = [_cell("A", lock), _cell("B", lock), _cell("C", ""), _cell("D", lock)]
    assert failure_reports(cells) == [
        "--- ERROR 1/4 " + "-" * 40,
        "A on mine: the full report",
        f"  Cause: {lock}. 2 other cell(s) below fail from it ('same cause')",
        "",
        "--- ERROR 2/4: B on mine: uncontrolled sync, same cause as 1/4",
        "",
        "--- ERROR 3/4 " + "-" * 40,
        "C on mine: the full report",
        "",
        "--- ERROR 4/4: D on mine: uncontrolled sync, same cause as 1/4",
        "",
    ]

"""The two hand-written bugs that once escaped every test are caught when put back by hand.

Each test rewrites the core's own current source of one method the way a
person would have broken it, installs the rewritten method, and runs the
bug's named scenario against the *core* adapter: the suite must fail with
the invariant the catalogue names.

* B18: the lease give-back wakes drain waiters with ``notify()`` instead of
  ``notify_all()`` (`modelmanager.leases.LeaseTable._wake_drainers`): I17.
* B19: ``ModelManager.acquire`` gives the lease back after ``yield`` only
  (`ModelManager._acquire_context` without the ``try`` that gives it back
  when the body raises): I18.

If the core's code changes so that a rewrite no longer applies, the test
fails saying so: update the rewrite, never drop the test.
"""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap
from collections.abc import Callable
from typing import Any

import pytest

from modelmanager import ModelManager
from modelmanager.leases import LeaseTable
from models_spec._check.check import explore_scenario
from models_spec._harness.catalogue import load
from models_spec.adapter import BareManagerAdapter, CoreAdapter, ManagerAdapter


def _rewritten(function: Callable[..., Any], rewrite: Callable[[ast.Module], ast.Module]) -> Any:
    """`function` recompiled from its current source after `rewrite`, in its module."""
    unwrapped = inspect.unwrap(function)
    tree = ast.parse(textwrap.dedent(inspect.getsource(unwrapped)))
    original = ast.dump(tree)
    tree = ast.fix_missing_locations(rewrite(tree))
    assert ast.dump(tree) != original, f"the rewrite no longer applies to {function.__qualname__}"
    namespace = dict(sys.modules[unwrapped.__module__].__dict__)
    exec(compile(tree, inspect.getsourcefile(unwrapped) or "<rewritten>", "exec"), namespace)
    return namespace[unwrapped.__name__]


class _NotifyOne(ast.NodeTransformer):
    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if node.attr == "notify_all":
            node.attr = "notify"
        return self.generic_visit(node)


class _DropCleanupOnError(ast.NodeTransformer):
    """``try: BODY finally: FINAL`` -> ``BODY; FINAL``, and ``try: BODY except
    BaseException: CLEANUP; raise`` -> ``BODY`` (the cleanup no longer runs on error)."""

    def visit_Try(self, node: ast.Try) -> Any:
        self.generic_visit(node)
        if node.finalbody and not node.handlers:
            return [*node.body, *node.finalbody]
        if (
            not node.finalbody
            and not node.orelse
            and len(node.handlers) == 1
            and isinstance(node.handlers[0].body[-1], ast.Raise)
        ):
            return node.body
        return node


STRATEGIES = ("pct", "random")


def _explore(
    bug: str, adapter: ManagerAdapter, budgets: dict[str, int]
) -> dict[str, tuple[str, int]]:
    """What each strategy finds ("" = nothing) within its budget, and in how many executions."""
    scenario = load().bug(bug).scenario
    found = {}
    for strategy, budget in budgets.items():
        outcome = explore_scenario(
            scenario, adapter, strategy=strategy, budget=budget, shrink=False
        )
        found[strategy] = (outcome.label, outcome.executions)
    return found


def _caught_and_control(
    monkeypatch: pytest.MonkeyPatch, bug: str, adapter: ManagerAdapter
) -> set[str]:
    """What PCT, else random search (the suite's variant budget, 360), catches the
    rewritten core with ("" = nothing); then, the rewrite undone, the very same
    exploration (same seed, as many executions as it needed) must find nothing:
    the rewrite is the cause."""
    found: dict[str, tuple[str, int]] = {}
    for strategy in STRATEGIES:
        found.update(_explore(bug, adapter, {strategy: 360}))
        if found[strategy][0]:
            break
    monkeypatch.undo()
    caught = {strategy: n for strategy, (label, n) in found.items() if label}
    control = _explore(bug, adapter, caught)
    assert all(not label for label, _ in control.values()), control
    return {label for label, _ in found.values()} - {""} or {""}


@pytest.mark.parametrize("adapter", [CoreAdapter(0), BareManagerAdapter()], ids=lambda a: a.name)
def test_notify_instead_of_notify_all_in_the_give_back_is_caught(
    monkeypatch: pytest.MonkeyPatch, adapter: ManagerAdapter
) -> None:
    """B18 put back by hand in the core: the lost wake-up is reported as I17."""
    broken = _rewritten(LeaseTable._wake_drainers, _NotifyOne().visit)
    monkeypatch.setattr(LeaseTable, "_wake_drainers", broken)
    assert _caught_and_control(monkeypatch, "B18", adapter) == {"I17"}


def test_give_back_after_yield_without_finally_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """B19 put back by hand in the core: the leaked lease is reported as I18."""
    broken = _rewritten(ModelManager._acquire_context, _DropCleanupOnError().visit)
    monkeypatch.setattr(ModelManager, "_acquire_context", broken)
    assert _caught_and_control(monkeypatch, "B19", BareManagerAdapter()) == {"I18"}

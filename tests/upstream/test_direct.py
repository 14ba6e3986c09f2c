"""Bugs the scenarios cannot express through this target, shown on the real code directly.

B11 and B12 need capabilities the target does not declare (leases, the
lifecycle table), so their scenario rows are SKIP; these sequential checks
show whether the imported version still has them, on 1.8.3, upstream main and
a fix branch alike (``ROBOFLOW_INFERENCE_TREE``): the per-model lock table is
``_models_state_locks`` (1.8.3, main) or ``_model_lock_entries`` (pull request
#2821's reservation-counted entries).  Each fails with "upstream changed: B<n>
may be fixed in version X" when the bug is gone (#2821 fixes B12; B11 is
still there on all three).
"""

from __future__ import annotations

from typing import Any

import pytest

from models_spec.fakes import ScriptedRegistry
from tests.upstream._upstream import require_upstream

upstream = require_upstream()

LOCK_TABLES = ("_models_state_locks", "_model_lock_entries")


def _manager() -> Any:
    from models_spec.targets.roboflow_inference import new_manager

    return new_manager(ScriptedRegistry())


def _lock_table(manager: Any) -> dict[str, Any]:
    for name in LOCK_TABLES:
        table = getattr(manager, name, None)
        if isinstance(table, dict):
            return table
    pytest.fail(
        f"inference {upstream.VERSION}'s ModelManager has none of the lock tables "
        f"{LOCK_TABLES}: update tests/upstream/test_direct.py"
    )


def test_b12_remove_of_a_never_loaded_id_leaves_a_lock_entry() -> None:
    """remove("Y") of an id never loaded creates Y's lock entry and never deletes it."""
    manager = _manager()
    manager.remove("Y")
    if "Y" not in _lock_table(manager):
        pytest.fail(f"upstream changed: B12 may be fixed in version {upstream.VERSION}")


def test_b11_describe_models_on_a_plain_decorator_raises() -> None:
    """ModelManagerDecorator inherits describe_models, which reads `_models`: it raises."""
    decorator = upstream.ModelManagerDecorator(_manager())
    try:
        decorator.describe_models()
    except ValueError as error:
        message = str(error)
    else:
        pytest.fail(f"upstream changed: B11 may be fixed in version {upstream.VERSION}")
    assert "model_manager._models" in message


def test_a_loaded_model_has_a_lock_entry_and_loses_it_on_remove() -> None:
    """Why `lifecycle` is not declared: a loaded id holds its lock entry until removed
    (by design, not a leak), which the suite's lifecycle invariants would judge a leak."""
    manager = _manager()
    manager.add_model("X", None)
    assert "X" in _lock_table(manager)
    manager.remove("X")
    assert "X" not in _lock_table(manager)

"""Bugs the scenarios cannot express through this target, shown on the real code directly.

B11 and B12 need capabilities the target does not declare (leases, the
lifecycle table), so their scenario rows are SKIP; these sequential checks
show that 1.8.3 still has them.  Each fails with "upstream changed" when
upstream fixes the bug.
"""

from __future__ import annotations

import pytest

from models_spec.fakes import ScriptedRegistry
from models_spec.targets.roboflow_inference._fakes import ARTIFACT_CACHE, UpstreamRegistry
from tests.upstream._upstream import require_upstream

upstream = require_upstream()


def _manager() -> object:
    return upstream.ModelManager(
        UpstreamRegistry(ScriptedRegistry()), content_addressed_artifact_cache=ARTIFACT_CACHE
    )


def test_b12_remove_of_a_never_loaded_id_leaves_a_lock_entry() -> None:
    """remove("Y") of an id never loaded creates Y's lock entry and never deletes it."""
    manager = _manager()
    manager.remove("Y")  # type: ignore[attr-defined]
    if "Y" not in manager._models_state_locks:  # type: ignore[attr-defined]
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


def test_loaded_models_keep_their_lock_entry_by_design() -> None:
    """Why `lifecycle` is not declared: a loaded id keeps its lock (not a leak upstream)."""
    manager = _manager()
    manager.add_model("X", None)  # type: ignore[attr-defined]
    assert "X" in manager._models_state_locks  # type: ignore[attr-defined]
    manager.remove("X")  # type: ignore[attr-defined]
    assert "X" not in manager._models_state_locks  # type: ignore[attr-defined]

"""Shared helpers: skip a module when roboflow `inference` is not installed."""

from __future__ import annotations

from types import ModuleType

import pytest

from models_spec.adapter import TargetUnavailable


def require_upstream() -> ModuleType:
    """The imported `upstream` module, or skip the calling test module, saying how to install."""
    try:
        from models_spec.targets.roboflow_inference import upstream
    except TargetUnavailable as error:
        pytest.skip(str(error), allow_module_level=True)
    return upstream

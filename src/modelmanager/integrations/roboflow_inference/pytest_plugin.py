"""A pytest plugin that runs a test session against the drop-in: ``-p`` this module.

``python3 -m pytest -p modelmanager.integrations.roboflow_inference.pytest_plugin
<inference checkout>/tests/inference/unit_tests/core/managers`` runs upstream's
manager tests unchanged, with ``inference.core.managers...`` resolving to the
drop-in classes (`install` runs when the session is configured, before any
test module is collected). Not registered as an entry point: it changes what
upstream's module paths yield, so only a session that asks for it gets it.
"""

from __future__ import annotations

import pytest

from modelmanager.integrations.roboflow_inference._install import install

__all__ = ["pytest_configure", "pytest_report_header"]


def pytest_configure(config: pytest.Config) -> None:
    """Install the drop-in before collection imports upstream's test modules."""
    del config
    install()


def pytest_report_header(config: pytest.Config) -> str:
    """Say which manager the session runs."""
    del config
    return "inference.core.managers: the modelmanager drop-in (install())"

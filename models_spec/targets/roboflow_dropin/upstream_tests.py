"""A pytest plugin (``-p models_spec.targets.roboflow_dropin.upstream_tests``) that runs
upstream's manager tests on the drop-in in an environment built from this project's
requirement files (docs/roboflow-dropin.md, "Upstream's own manager tests").

Imports ``inference`` as the suite's target does (settings, the torchvision
stand-in where no working one is installed: those files leave torchvision out), then
installs the drop-in; with ``ROBOFLOW_DROPIN_STOCK=1`` it does not, so the same session
shows what the stock classes do in this environment. In a full ``inference`` install
``-p modelmanager.integrations.roboflow_inference.pytest_plugin`` is enough.
"""

from __future__ import annotations

import os

import pytest

from models_spec.targets.roboflow_inference._environment import import_upstream

__all__ = ["pytest_configure"]


def pytest_configure(config: pytest.Config) -> None:
    """Import ``inference`` (with its stand-ins), then install the drop-in unless asked not to."""
    del config
    import_upstream()
    if os.environ.get("ROBOFLOW_DROPIN_STOCK") == "1":
        return
    # After import_upstream: the drop-in imports inference, which needs its stand-ins first.
    from modelmanager.integrations.roboflow_inference import install  # noqa: PLC0415

    install()

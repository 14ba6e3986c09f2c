"""For a pytest session running upstream's manager tests (test_upstream_tests.py).

Imports ``inference`` as the suite's target does (settings, the torchvision
stand-in where no working one is installed), then installs the drop-in;
with ``ROBOFLOW_DROPIN_STOCK=1`` it does not, so the same session shows what
the stock classes do in this environment.
"""

from __future__ import annotations

import os

import pytest

from models_spec.targets.roboflow_inference._environment import import_upstream


def pytest_configure(config: pytest.Config) -> None:
    del config
    import_upstream()
    if os.environ.get("ROBOFLOW_DROPIN_STOCK") == "1":
        return
    from modelmanager.integrations.roboflow_inference import install

    install()

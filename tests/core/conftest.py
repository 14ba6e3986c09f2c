"""Fixtures for the core's unit tests (fakes live in helpers.py)."""

from __future__ import annotations

import pytest

from modelmanager import ModelManager

from .helpers import FakeRegistry


@pytest.fixture
def registry() -> FakeRegistry:
    return FakeRegistry()


@pytest.fixture
def manager(registry: FakeRegistry) -> ModelManager:
    return ModelManager(registry)

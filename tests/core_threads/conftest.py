"""Fixtures for the real-thread regression tests (fakes live in ``helpers``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .helpers import FakeRegistry


@pytest.fixture
def registry() -> Iterator[FakeRegistry]:
    """A fresh scripted registry; every gate is opened at teardown so no thread hangs."""
    fakes = FakeRegistry()
    yield fakes
    fakes.open_all()

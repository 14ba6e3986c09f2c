"""The error hierarchy and its messages."""

from __future__ import annotations

import pytest

from modelmanager import (
    InvalidArgument,
    InvalidArgumentType,
    LockTimeout,
    ModelManagerError,
    ModelManagerLockAcquisitionError,
    ModelNotFound,
    UnsupportedOperation,
)
from modelmanager.errors import attach_secondary


@pytest.mark.parametrize(
    ("error", "bases"),
    [
        (ModelNotFound("x"), (ModelManagerError, KeyError)),
        (LockTimeout("a lock", 1.0), (ModelManagerLockAcquisitionError, TimeoutError)),
        (InvalidArgument("bad"), (ModelManagerError, ValueError)),
        (InvalidArgumentType("bad"), (InvalidArgument, TypeError, ValueError)),
        (UnsupportedOperation("no"), (ModelManagerError, AttributeError)),
        (ModelManagerLockAcquisitionError("no"), (ModelManagerError,)),
    ],
)
def test_hierarchy(error: Exception, bases: tuple[type, ...]) -> None:
    """Each error is an instance of the root and of its builtin mix-ins."""
    for base in bases:
        assert isinstance(error, base)
    assert isinstance(error, ModelManagerError)


def test_model_not_found_reads_like_a_sentence() -> None:
    """str() is a sentence, not KeyError's repr; the id is kept."""
    error = ModelNotFound("yolo/1")
    assert str(error) == "model 'yolo/1' is not loaded"
    assert error.model_id == "yolo/1"
    assert str(ModelNotFound("a", "custom detail")) == "custom detail"


def test_lock_timeout_names_resource_and_bound() -> None:
    """The message and attributes say what was waited for and how long."""
    error = LockTimeout("the LRU lock", 0.5)
    assert str(error) == "timed out after 0.5 s waiting for the LRU lock"
    assert (error.resource, error.timeout) == ("the LRU lock", 0.5)


def test_attach_secondary_keeps_primary() -> None:
    """A secondary error becomes a note on the primary (I16)."""
    primary = RuntimeError("first")
    attach_secondary(primary, ValueError("second"), "cleaning up")
    assert primary.__notes__ == [
        "while cleaning up, a secondary error occurred: ValueError('second')"
    ]

"""Every public timeout parameter x every bad value: refused at the call, nothing changed.

A timeout past ``threading.TIMEOUT_MAX`` used to be accepted and to raise a
bare ``OverflowError`` at the first lock wait. The matrix below covers every
parameter of the public API whose name ends in ``timeout`` (a test checks the
list is complete, so a new one cannot be forgotten).
"""

from __future__ import annotations

import inspect
import math
import threading
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest

import modelmanager
from modelmanager import (
    InvalidArgument,
    InvalidArgumentType,
    ModelManager,
    WithFixedSizeCache,
)

from .helpers import FakeRegistry, join, run_in_thread

TIMEOUT_MAX = threading.TIMEOUT_MAX

BAD_TIMEOUTS: list[tuple[str, object, type[Exception]]] = [
    ("twice TIMEOUT_MAX", TIMEOUT_MAX * 2, InvalidArgument),
    ("just past TIMEOUT_MAX", math.nextafter(TIMEOUT_MAX, math.inf), InvalidArgument),
    ("1e300", 1e300, InvalidArgument),
    ("huge int", 10**400, InvalidArgument),
    ("huge Fraction", Fraction(10**400, 3), InvalidArgument),
    ("inf", math.inf, InvalidArgument),
    ("-inf", -math.inf, InvalidArgument),
    ("nan", math.nan, InvalidArgument),
    ("negative", -1, InvalidArgument),
    ("negative float", -0.5, InvalidArgument),
    ("True", True, InvalidArgumentType),
    ("False", False, InvalidArgumentType),
    ("str", "1", InvalidArgumentType),
    ("None", None, InvalidArgumentType),
    ("bytes", b"1", InvalidArgumentType),
    ("list", [1], InvalidArgumentType),
    ("Decimal", Decimal("1"), InvalidArgumentType),
    ("complex", 1j, InvalidArgumentType),
]

GOOD_TIMEOUTS: list[object] = [0, 0.0, 0.25, 2, Fraction(1, 2), TIMEOUT_MAX, int(TIMEOUT_MAX)]


def loaded_manager() -> ModelManager:
    manager = ModelManager(FakeRegistry())
    manager.add_model("a")
    manager.add_model("b")
    return manager


def manager_state(manager: ModelManager) -> tuple[object, ...]:
    return (
        manager.keys(),
        manager.statistics(),
        manager.lifecycle_snapshot(),
        manager.lease_counts(),
    )


# Each entry: the parameter (as "Owner(name=)") and a call that passes the value.
TakesTimeout = Callable[[ModelManager, object], object]
TIMEOUT_PARAMETERS: dict[str, TakesTimeout] = {
    "ModelManager(lock_timeout=)": lambda inner, value: ModelManager(
        FakeRegistry(),
        lock_timeout=value,  # type: ignore[arg-type]
    ),
    "WithFixedSizeCache(queue_lock_timeout=)": lambda inner, value: WithFixedSizeCache(
        inner,
        max_size=4,
        queue_lock_timeout=value,  # type: ignore[arg-type]
    ),
}


def _public_timeout_parameters() -> set[str]:
    """Every ``*timeout`` parameter of a public callable of ``modelmanager``."""
    found: set[str] = set()
    for name in modelmanager.__all__:
        obj = getattr(modelmanager, name)
        callables: list[tuple[str, Any]] = []
        if inspect.isclass(obj) and issubclass(obj, BaseException):
            continue  # LockTimeout(resource, timeout) reports a bound, it takes none
        if inspect.isclass(obj):
            callables.append((name, obj.__init__))
            callables.extend(
                (f"{name}.{attr}", member)
                for attr, member in vars(obj).items()
                if callable(member) and not attr.startswith("_")
            )
        elif callable(obj):
            callables.append((name, obj))
        for owner, function in callables:
            try:
                parameters = inspect.signature(function).parameters
            except (TypeError, ValueError):
                continue
            for parameter in parameters:
                if parameter.endswith("timeout"):
                    found.add(f"{owner}({parameter}=)")
    return found


def test_matrix_covers_every_public_timeout_parameter() -> None:
    """The matrix lists exactly the public API's timeout parameters."""
    assert _public_timeout_parameters() == set(TIMEOUT_PARAMETERS)


@pytest.mark.parametrize(
    ("label", "value", "error"), BAD_TIMEOUTS, ids=[label for label, _, _ in BAD_TIMEOUTS]
)
@pytest.mark.parametrize("parameter", sorted(TIMEOUT_PARAMETERS))
def test_bad_timeout_is_refused_at_the_call(
    parameter: str, label: str, value: object, error: type[Exception]
) -> None:
    """The call that takes the timeout raises the precise error; nothing changes state."""
    inner = loaded_manager()
    before = manager_state(inner)
    name = parameter.split("(")[1].rstrip("=)")
    with pytest.raises(error) as caught:
        TIMEOUT_PARAMETERS[parameter](inner, value)
    message = str(caught.value)
    assert type(caught.value) is error
    assert not isinstance(caught.value, OverflowError)
    assert message.startswith(f"{name} must be a number of seconds in [0, threading.TIMEOUT_MAX")
    assert f"{TIMEOUT_MAX:.0f}]" in message  # the allowed range, spelled out
    assert len(message) < 300  # the value is abbreviated (10**400 has 401 digits)
    assert manager_state(inner) == before


@pytest.mark.parametrize("value", GOOD_TIMEOUTS, ids=repr)
@pytest.mark.parametrize("parameter", sorted(TIMEOUT_PARAMETERS))
def test_good_timeout_is_kept_as_float(parameter: str, value: object) -> None:
    """0 through TIMEOUT_MAX inclusive are accepted and stored as float."""
    made = TIMEOUT_PARAMETERS[parameter](loaded_manager(), value)
    name = parameter.split("(")[1].rstrip("=)")
    stored = getattr(made, name)
    assert type(stored) is float
    assert stored == float(value)  # type: ignore[arg-type]


def test_longest_lock_timeout_waits_without_overflow(registry: FakeRegistry) -> None:
    """A per-id wait bounded by TIMEOUT_MAX blocks and then succeeds (no OverflowError)."""
    manager = ModelManager(registry, lock_timeout=TIMEOUT_MAX)
    entered, release = registry.gate("a")
    loader, loaded = run_in_thread(manager.add_model, "a")
    assert entered.wait(30)
    waiter, waited = run_in_thread(manager.add_model, "a")  # waits on a's lifecycle
    release.set()
    join(loader)
    join(waiter)
    assert loaded == {"result": None}
    assert waited == {"result": None}
    assert manager.statistics().hits == 1


def test_longest_queue_lock_timeout_waits_without_overflow(registry: FakeRegistry) -> None:
    """An LRU-lock wait and an admission wait bounded by TIMEOUT_MAX end normally."""
    cache = WithFixedSizeCache(
        ModelManager(registry, lock_timeout=TIMEOUT_MAX),
        max_size=1,
        queue_lock_timeout=TIMEOUT_MAX,
    )
    entered, release = registry.gate("a")
    loader, loaded = run_in_thread(cache.add_model, "a")
    assert entered.wait(30)
    # b needs a's slot: it waits (bounded by TIMEOUT_MAX) for the in-flight load.
    waiter, waited = run_in_thread(cache.add_model, "b")
    release.set()
    join(loader)
    join(waiter)
    assert loaded == {"result": None}
    assert waited == {"result": None}
    assert cache.keys() == ["b"]
    cache.refresh("b")  # an LRU-lock wait with the longest bound
    assert cache.lru_order() == ["b"]

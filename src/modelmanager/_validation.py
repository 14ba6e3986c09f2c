"""Argument checks shared by every public entry point.

Each check raises :class:`InvalidArgumentType` (wrong type) or
:class:`InvalidArgument` (bad value) with a message naming the parameter, the
offending value and what is expected. Checks never change state, so callers
run them before touching anything.
"""

from __future__ import annotations

import inspect
import math
import reprlib
from _thread import TIMEOUT_MAX  # threading.TIMEOUT_MAX; not ``threading``: nothing here waits
from collections.abc import Mapping
from numbers import Real
from typing import Any

from modelmanager.errors import InvalidArgument, InvalidArgumentType

__all__ = [
    "TIMEOUT_RANGE",
    "abbreviate",
    "abbreviate_ids",
    "check_alias",
    "check_bool",
    "check_choice",
    "check_fraction",
    "check_memory_probe",
    "check_model",
    "check_model_id",
    "check_positive_int",
    "check_registry",
    "check_timeout",
    "check_weight",
]


_ABBREVIATE = reprlib.Repr()
_ABBREVIATE.maxlong = 24
_ABBREVIATE.maxstring = 40
_ABBREVIATE.maxother = 40
_ABBREVIATE.maxlist = _ABBREVIATE.maxtuple = _ABBREVIATE.maxset = 6


def abbreviate(value: object) -> str:
    """``repr(value)``, abbreviated with ``...`` when long (a 10,000-digit int stays readable)."""
    return _ABBREVIATE.repr(value)


def abbreviate_ids(ids: list[str], limit: int = 5) -> str:
    """Up to ``limit`` ids, abbreviated, then how many more: "'a', 'b', ... (98 more)"."""
    shown = ", ".join(abbreviate(model_id) for model_id in ids[:limit])
    if len(ids) > limit:
        shown += f", ... ({len(ids) - limit} more)"
    return shown


def _got(value: object) -> str:
    return f"got {abbreviate(value)} of type {type(value).__name__}"


TIMEOUT_RANGE = f"[0, threading.TIMEOUT_MAX = {TIMEOUT_MAX:.0f}]"
"""The accepted range of every timeout, in seconds, as error messages state it."""


def check_model_id(value: object, name: str = "model_id") -> str:
    """Return ``value`` if it is a non-empty str."""
    if not isinstance(value, str):
        raise InvalidArgumentType(f"{name} must be a non-empty str ({_got(value)})")
    if not value:
        raise InvalidArgument(f"{name} must be a non-empty str (got the empty string)")
    return value


def check_model(value: object, model_id: str) -> None:
    """``value`` (what the factory of ``model_id`` returned) must be a model.

    A model has ``clear_cache(delete_from_disk=...)`` (:class:`modelmanager.protocols.Model`);
    ``None`` or anything else would only fail later, at ``remove``, with the id stuck
    in the registry. Raises :class:`InvalidArgumentType` naming what came back.
    """
    clear = getattr(value, "clear_cache", None)
    problem: str | None = None
    if value is None:
        problem = "None"
    elif not callable(clear):
        problem = f"{abbreviate(value)} ({type(value).__name__}), which has no clear_cache method"
    else:
        try:
            inspect.signature(clear).bind(delete_from_disk=True)
        except TypeError:
            problem = (
                f"{abbreviate(value)} ({type(value).__name__}), whose clear_cache does not "
                "accept delete_from_disk="
            )
        except ValueError:  # no signature to inspect (a builtin): trust it
            pass
    if problem is not None:
        raise InvalidArgumentType(
            f"the factory of model {abbreviate(model_id)} returned {problem}: a factory must "
            "return a model, an object with clear_cache(delete_from_disk: bool) "
            "(modelmanager.protocols.Model); nothing was registered"
        )


def check_alias(value: object, name: str = "model_id_alias") -> str | None:
    """Return ``value`` if it is None or a non-empty str."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidArgumentType(f"{name} must be None or a non-empty str ({_got(value)})")
    if not value:
        raise InvalidArgument(f"{name} must be None or a non-empty str (got the empty string)")
    return value


def check_api_key(value: object, name: str = "api_key") -> str | None:
    """Return ``value`` if it is None or a str."""
    if value is not None and not isinstance(value, str):
        raise InvalidArgumentType(f"{name} must be None or a str ({_got(value)})")
    return value


def check_bool(value: object, name: str) -> bool:
    """Return ``value`` if it is a bool."""
    if not isinstance(value, bool):
        raise InvalidArgumentType(f"{name} must be a bool ({_got(value)})")
    return value


def check_positive_int(value: object, name: str) -> int:
    """Return ``value`` if it is an int >= 1 (bool is rejected)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentType(f"{name} must be a positive int ({_got(value)})")
    if value < 1:
        raise InvalidArgument(f"{name} must be a positive int (got {abbreviate(value)})")
    return value


def check_timeout(value: object, name: str) -> float:
    """Return ``value`` as float if it is a real number of seconds in [0, TIMEOUT_MAX].

    ``threading.TIMEOUT_MAX`` is the longest wait the platform's locks accept;
    a longer one would raise :class:`OverflowError` at the first wait, so it
    is refused here, at the call that takes it. Refused: bool, non-numbers
    (:class:`InvalidArgumentType`), negatives, NaN, infinities and values
    past ``TIMEOUT_MAX`` (:class:`InvalidArgument`).
    """
    if isinstance(value, bool) or not isinstance(value, Real):
        raise InvalidArgumentType(
            f"{name} must be a number of seconds in {TIMEOUT_RANGE} ({_got(value)})"
        )
    try:
        as_float = float(value)
    except OverflowError:  # an int too large for a float
        as_float = math.inf
    if not 0.0 <= as_float <= TIMEOUT_MAX:  # also rejects NaN and infinities
        raise InvalidArgument(
            f"{name} must be a number of seconds in {TIMEOUT_RANGE} (got {abbreviate(value)}); "
            "pass a finite bound such as 60"
        )
    return as_float


def check_choice(value: object, name: str, choices: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of the str ``choices``."""
    allowed = ", ".join(repr(choice) for choice in choices)
    if not isinstance(value, str):
        raise InvalidArgumentType(f"{name} must be one of {allowed} ({_got(value)})")
    if value not in choices:
        raise InvalidArgument(f"{name} must be one of {allowed} (got {abbreviate(value)})")
    return value


def check_weight(value: object, name: str) -> int:
    """Return ``value`` if it is an int >= 0 (bool is rejected): a model's weight."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentType(f"{name} must be an int >= 0, e.g. bytes ({_got(value)})")
    if value < 0:
        raise InvalidArgument(f"{name} must be an int >= 0, e.g. bytes (got {abbreviate(value)})")
    return value


def check_fraction(value: object, name: str) -> float:
    """Return ``value`` as float if it is a real number in [0, 1] (bool is rejected)."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise InvalidArgumentType(f"{name} must be a number in [0, 1] ({_got(value)})")
    try:
        as_float = float(value)
    except OverflowError:  # an int too large for a float
        as_float = math.inf
    if not 0.0 <= as_float <= 1.0:  # also rejects NaN
        raise InvalidArgument(f"{name} must be a number in [0, 1] (got {abbreviate(value)})")
    return as_float


def check_registry(value: object) -> Any:
    """Return ``value`` if it has a callable ``get_model`` or is a Mapping."""
    if isinstance(value, Mapping) or callable(getattr(value, "get_model", None)):
        return value
    raise InvalidArgumentType(
        "registry must have a get_model(model_id) method or be a Mapping of "
        f"model id to factory ({_got(value)})"
    )


def check_memory_probe(value: object) -> Any:
    """Return ``value`` if it has callable ``free_fraction`` and ``release_cache``."""
    if isinstance(value, type):
        raise InvalidArgumentType(
            f"memory_probe must provide free_fraction() and release_cache() on an instance "
            f"(got the class {value.__name__}; pass {value.__name__}(...))"
        )
    missing = [
        method
        for method in ("free_fraction", "release_cache")
        if not callable(getattr(value, method, None))
    ]
    if missing:
        raise InvalidArgumentType(
            "memory_probe must provide free_fraction() and release_cache() "
            f"(missing {', '.join(missing)}; {_got(value)})"
        )
    return value

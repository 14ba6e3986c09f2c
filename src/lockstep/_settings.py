"""Settings: how an exploration runs, in one typed, immutable, validated value.

Modelled on Hypothesis' ``settings`` and loom's ``Builder``: every knob of *how* lockstep
searches (budgets, limits, shrinking, stall detection, the backend, race reporting) is
a field with a type, a default and a one-line doc (``Settings.doc(name)``); a bad value
is refused when the object is built, naming the field, the value and what is allowed,
so nothing deep inside a run meets a value it cannot use. A Settings is built once (by
a test, by ``lockstep explore``'s flags, by the pytest plugin from a marker) and passed
whole through every layer; ``replace`` gives a changed copy, validated the same way.

What describes the *code under test* is not a setting and stays an argument of
``explore()`` / ``replay()``: the scenario, its ``invariant``, the modules to ``patch``,
to trace line by line (``line_modules``) or to record as import roots
(``import_modules``), and the ``scenario_id``. Those name objects of one program (a
function, module objects) rather than how hard to look at it, a Settings that held them
could not be shared between scenarios, and a saved schedule records them itself. The
``strategy`` is an argument too: it is a stateful search (it remembers what it
explored), so one instance must not be shared by two explorations the way a Settings
value can.
"""

from __future__ import annotations

import math
from typing import Any, Final, Literal, TypedDict

import attrs

from lockstep._backend import BACKEND_NAMES
from lockstep._names import check_names
from lockstep._runtime import DEFAULT_STALL_TIMEOUT
from lockstep._stall import DEFAULT_STALL_DIAGNOSIS
from lockstep.errors import InvalidArgument, InvalidArgumentType

__all__ = [
    "FIELD_NAMES",
    "REPLAY_FIELDS",
    "ReplayChanges",
    "Settings",
    "SettingsChanges",
    "settings_with",
]

Granularity = Literal["op", "line"]


def _positive_int(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidArgumentType(f"{attribute.name} must be a positive int, got {value!r}")
    if value < 1:
        raise InvalidArgument(f"{attribute.name} must be >= 1, got {value!r}")


def _flag(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, bool):
        raise InvalidArgumentType(f"{attribute.name} must be True or False, got {value!r}")


def _optional_flag(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and not isinstance(value, bool):
        raise InvalidArgumentType(f"{attribute.name} must be True, False or None, got {value!r}")


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _positive_seconds(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not _is_number(value) or not value > 0:  # type: ignore[operator]
        raise InvalidArgument(
            f"{attribute.name} must be a positive number of seconds, got {value!r}"
        )


def _optional_finite_seconds(
    instance: object, attribute: attrs.Attribute[Any], value: object
) -> None:
    if value is None:
        return
    if not _is_number(value) or not 0 < value < math.inf:  # type: ignore[operator]
        off = " (off)" if attribute.name == "stall_diagnosis" else " (no limit)"
        raise InvalidArgument(
            f"{attribute.name} must be a positive number of seconds or None{off}, got {value!r}"
        )


def _granularity(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value not in ("op", "line"):
        raise InvalidArgument(f"granularity must be 'op' or 'line', got {value!r}")


def _backend(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    expected = ", ".join(map(repr, BACKEND_NAMES))
    if not isinstance(value, str):
        raise InvalidArgumentType(f"backend must be one of {expected} or None, got {value!r}")
    if value not in BACKEND_NAMES:
        raise InvalidArgument(f"unknown backend {value!r}; expected one of {expected}")


def _doc(text: str) -> dict[str, str]:
    """A field's one-line documentation, kept where ``Settings.doc`` finds it."""
    return {"doc": text}


@attrs.frozen
class Settings:
    """How lockstep runs a scenario: ``explore(scenario, settings)``, ``replay(...)``.

    Immutable and validated: ``Settings(budget=0)`` raises InvalidArgument naming the
    field, the value and what is allowed (InvalidArgumentType, also an InvalidArgument,
    for a value of the wrong type); an unknown field name raises InvalidArgument with
    the nearest known name and the list of them. ``replace(**changes)`` returns a
    validated copy. Equal settings compare and hash equal, and pickle (a suite sends them
    to its worker processes).

    ``replay()`` uses ``max_steps`` (raised to cover the schedule), ``stall_timeout``,
    ``stall_diagnosis`` and ``backend``; the schedule decides the rest. What describes the
    code under test (scenario, invariant, patch / line / import modules, scenario id)
    and the stateful ``strategy`` stay arguments of ``explore()`` (see the module doc).
    """

    budget: int = attrs.field(
        default=1000, validator=_positive_int, metadata=_doc("executions at most")
    )
    max_steps: int = attrs.field(
        default=10_000,
        validator=_positive_int,
        metadata=_doc("steps per execution at most (a step-limit failure beyond)"),
    )
    granularity: Granularity = attrs.field(
        default="op",
        validator=_granularity,
        metadata=_doc(
            '"op": a switch point at every synchronisation operation; "line": also at every '
            "line of the line_modules (needs them)"
        ),
    )
    shrink: bool = attrs.field(
        default=True,
        validator=_flag,
        metadata=_doc("minimise a failure (fewest preemptions, then steps)"),
    )
    shrink_budget: int = attrs.field(
        default=300, validator=_positive_int, metadata=_doc("extra executions shrinking may spend")
    )
    stall_timeout: float = attrs.field(
        default=DEFAULT_STALL_TIMEOUT,
        validator=_positive_seconds,
        metadata=_doc(
            "wall seconds without reaching a switch point before an execution is a stall"
        ),
    )
    stall_diagnosis: float | None = attrs.field(
        default=DEFAULT_STALL_DIAGNOSIS,
        validator=_optional_finite_seconds,
        metadata=_doc(
            "seconds of evidence before a thread blocked in an uncontrolled primitive is "
            "reported (None: off)"
        ),
    )
    progress: bool | None = attrs.field(
        default=None,
        validator=_optional_flag,
        metadata=_doc("a progress line on stderr (None: only on a terminal, not in pytest)"),
    )
    backend: str | None = attrs.field(
        default=None,
        validator=_backend,
        metadata=_doc(
            'where logical threads run: "greenlet" or "thread" (None: the default, '
            "LOCKSTEP_BACKEND or the fastest that runs here); changes no schedule"
        ),
    )
    races: bool = attrs.field(
        default=True,
        validator=_flag,
        metadata=_doc(
            "report a data race on watched state as a failure (False: search for what it leads "
            "to); replay() follows the schedule's"
        ),
    )
    time_budget: float | None = attrs.field(
        default=None,
        validator=_optional_finite_seconds,
        metadata=_doc(
            "wall seconds after which the search stops between two executions (None: no limit)"
        ),
    )
    keep_going: bool = attrs.field(
        default=False,
        validator=_flag,
        metadata=_doc(
            "search on after a failure and report the first of every distinct kind and label"
        ),
    )

    def __new__(cls, *args: object, **kwargs: object) -> Settings:
        # Before the generated __init__, whose TypeError would not say what was meant.
        if args:
            raise InvalidArgumentType(
                f"Settings takes keyword arguments only (Settings(budget=...)), got {args!r}"
            )
        check_names("Settings", kwargs, FIELD_NAMES)
        instance: Settings = super().__new__(cls)
        return instance

    def replace(self, **changes: Any) -> Settings:
        """A copy with ``changes`` applied, validated like a new Settings (unknown names
        included)."""
        if not changes:
            return self
        check_names("Settings", changes, FIELD_NAMES)
        return attrs.evolve(self, **changes)

    @staticmethod
    def doc(name: str) -> str:
        """The one-line documentation of field ``name`` (InvalidArgument if there is none)."""
        check_names("Settings", (name,), FIELD_NAMES)
        doc: str = attrs.fields_dict(Settings)[name].metadata["doc"]
        return doc

    def changed(self) -> dict[str, object]:
        """The fields that differ from the defaults, by name (what to print or record)."""
        default = attrs.asdict(_DEFAULT)
        return {k: v for k, v in attrs.asdict(self).items() if v != default[k]}


FIELD_NAMES: Final = tuple(a.name for a in attrs.fields(Settings))
_DEFAULT: Final = Settings()


class SettingsChanges(TypedDict, total=False):
    """The fields of :class:`Settings` as keyword arguments (``explore(..., budget=5)``)."""

    budget: int
    max_steps: int
    granularity: Granularity
    shrink: bool
    shrink_budget: int
    stall_timeout: float
    stall_diagnosis: float | None
    progress: bool | None
    backend: str | None
    races: bool
    time_budget: float | None
    keep_going: bool


class ReplayChanges(TypedDict, total=False):
    """The keyword arguments ``replay()`` takes besides its own (what a replay uses)."""

    max_steps: int
    stall_timeout: float
    stall_diagnosis: float | None
    backend: str | None
    races: bool | None


#: What replay() takes as keywords: the rest of a Settings does not apply to one run.
REPLAY_FIELDS: Final = tuple(ReplayChanges.__annotations__)


def settings_with(settings: Settings | None, changes: SettingsChanges) -> Settings:
    """``settings`` (None: the defaults) with keyword ``changes`` applied: what
    ``explore(scenario, settings, budget=5)`` runs with. InvalidArgumentType when
    ``settings`` is not a Settings; unknown or bad changes as :meth:`Settings.replace`."""
    if settings is None:
        settings = _DEFAULT
    elif not isinstance(settings, Settings):
        raise InvalidArgumentType(f"settings must be a lockstep.Settings, got {settings!r}")
    return settings.replace(**changes)

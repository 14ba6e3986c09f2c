"""Schedules: the complete list of scheduling choices of one execution, plus provenance.

An execution under lockstep is a pure function of its choices, so a :class:`Schedule`
is all it takes to reproduce a failure. At the default granularity ("op") a choice
names a logical thread (by its creation index: 0 is the scenario's "main") and whether
it runs its pending operation or fires its pending timeout; nothing refers to bytecode,
so a schedule replays on every supported CPython version.

Two encodings:

* a JSON file (:meth:`Schedule.save` / :meth:`Schedule.load`), created exclusively so
  two tests never overwrite each other's failure, validated field by field on load;
* a compact copy-pasteable string ``ls1:<urlsafe base64 of zlib(JSON)>``
  (:meth:`Schedule.to_string` / :meth:`Schedule.from_string`).

Both record, besides the choices, the modules lockstep must patch to replay the
execution (``patch``: dotted names, in order) and, at line granularity, the modules
traced line by line (``line_modules``), so ``lockstep replay FILE`` needs no flags.
``import_paths`` lists the directories the scenario's modules were imported from when
the environment alone does not provide them (a project run from its own directory;
see ``lockstep._imports``), so the replay works from any directory. Files written
before these fields existed load with them empty; ``import_paths`` is written only
when not empty. A schedule saved from a failing execution records what failed
(``failure``: its kind and label, :class:`RecordedFailure`), so a replay can tell the
recorded failure from another one (``lockstep._outcome``); files without it load
with ``failure`` None.

Inside both, the choices use a readable run-length form: tokens separated by ``.``,
each ``<thread>`` (run) or ``<thread>t`` (timeout), optionally ``*<count>``; e.g.
``0*3.1.2t.1`` is 0, 0, 0, 1, timeout of 2, 1.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import platform
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

import attrs

from lockstep._version import LOCKSTEP_VERSION
from lockstep.errors import (
    InvalidArgument,
    ScheduleExistsError,
    ScheduleFormatError,
    UnsupportedScheduleVersion,
)

__all__ = [
    "FORMAT_VERSION",
    "Choice",
    "ChoiceKind",
    "Granularity",
    "RecordedFailure",
    "Schedule",
    "choices_from_string",
    "choices_to_string",
]

FORMAT_VERSION = 1
_STRING_PREFIX = "ls1:"

ChoiceKind = Literal["run", "timeout"]
Granularity = Literal["op", "line"]
_KINDS: frozenset[str] = frozenset({"run", "timeout"})
_GRANULARITIES: frozenset[str] = frozenset({"op", "line"})


@attrs.frozen(slots=True, order=True)
class Choice:
    """One scheduling decision: ``thread`` (logical index) runs, or fires its timeout."""

    thread: int
    kind: ChoiceKind = "run"

    def __str__(self) -> str:
        return f"{self.thread}t" if self.kind == "timeout" else str(self.thread)

    @classmethod
    def of(cls, thread: int, kind: ChoiceKind = "run") -> Choice:
        """Return the (cached, shared) choice for ``thread`` and ``kind``."""
        key = (thread, kind)
        cached = _CHOICE_CACHE.get(key)
        if cached is None:
            cached = _CHOICE_CACHE[key] = cls(thread, kind)
        return cached


_CHOICE_CACHE: dict[tuple[int, str], Choice] = {}


def choices_to_string(choices: Iterable[Choice]) -> str:
    """Encode choices in the readable run-length form (``0*3.1.2t.1``)."""
    tokens: list[str] = []
    previous: Choice | None = None
    count = 0
    for choice in choices:
        if choice == previous:
            count += 1
            continue
        if previous is not None:
            tokens.append(_token(previous, count))
        previous, count = choice, 1
    if previous is not None:
        tokens.append(_token(previous, count))
    return ".".join(tokens)


def _token(choice: Choice, count: int) -> str:
    return str(choice) if count == 1 else f"{choice}*{count}"


def choices_from_string(text: str) -> tuple[Choice, ...]:
    """Decode :func:`choices_to_string`'s form; raises ScheduleFormatError on any bad token."""
    if not isinstance(text, str):
        raise ScheduleFormatError(f"choices must be a string, got {type(text).__name__}")
    if text == "":
        return ()
    result: list[Choice] = []
    for token in text.split("."):
        body, star, count_text = token.partition("*")
        count = 1
        if star:
            if not count_text.isdigit() or int(count_text) < 1:
                raise ScheduleFormatError(
                    f"bad repeat count in choice token {token!r}: "
                    "expected '<choice>*<n>' with n >= 1"
                )
            count = int(count_text)
        kind: ChoiceKind = "run"
        if body.endswith("t"):
            kind, body = "timeout", body[:-1]
        if not body.isdigit():
            raise ScheduleFormatError(
                f"bad choice token {token!r}: expected a thread index like '2' or '2t'"
            )
        result.extend([Choice.of(int(body), kind)] * count)
    return tuple(result)


def _current_python() -> str:
    return platform.python_version()


def _is_module_name(name: object) -> bool:
    return isinstance(name, str) and all(part.isidentifier() for part in name.split("."))


def _validate_module_names(
    instance: object, attribute: attrs.Attribute[Any], value: object
) -> None:
    if not isinstance(value, tuple) or not all(_is_module_name(n) for n in value):
        raise InvalidArgument(
            f"{attribute.name} must be a tuple of dotted module names like 'pkg.mod', got {value!r}"
        )


def _validate_import_paths(instance: object, attribute: object, value: object) -> None:
    if not isinstance(value, tuple) or not all(
        isinstance(p, str) and p and os.path.isabs(p) for p in value
    ):
        raise InvalidArgument(f"import_paths must be a tuple of absolute paths, got {value!r}")


def _validate_choices(instance: object, attribute: object, value: object) -> None:
    if not isinstance(value, tuple) or not all(isinstance(c, Choice) for c in value):
        raise InvalidArgument(f"choices must be a tuple of Choice, got {value!r}")
    for choice in value:
        if not isinstance(choice.thread, int) or choice.thread < 0 or choice.kind not in _KINDS:
            raise InvalidArgument(f"invalid choice {choice!r}: thread >= 0, kind run|timeout")


@attrs.frozen(slots=True)
class RecordedFailure:
    """What failed in the execution a schedule was saved from: the failure's ``kind``
    ("invariant", "exception", "deadlock", ...) and its ``label`` (the invariant's name,
    the exception's type name; "" for the other kinds). Raises InvalidArgument for a
    kind or label that is not a string, or an empty kind."""

    kind: str
    label: str = ""

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.kind, str) or not self.kind:
            raise InvalidArgument(
                f"a recorded failure's kind must be a non-empty str, got {self.kind!r}"
            )
        if not isinstance(self.label, str):
            raise InvalidArgument(f"a recorded failure's label must be a str, got {self.label!r}")

    def describe(self) -> str:
        """ "invariant I4", "exception KeyError", "deadlock"."""
        return f"{self.kind} {self.label}" if self.label else self.kind


def _validate_failure(instance: object, attribute: object, value: Any) -> None:
    if value is not None and not isinstance(value, RecordedFailure):
        raise InvalidArgument(f"failure must be a RecordedFailure or None, got {value!r}")


@attrs.frozen(slots=True)
class Schedule:
    """The choices of one execution and where they came from (a frozen value).

    ``seed``/``strategy`` say what produced it, ``scenario_id`` ("module:qualname") lets
    ``lockstep replay FILE`` find the scenario, ``granularity`` must match on replay.
    ``patch`` names (dotted, in order) the modules whose threading/time/queue/heapq/datetime
    names were swapped when it was recorded, ``line_modules`` the modules traced at line
    granularity; replay() and ``lockstep replay`` use them unless told otherwise.
    ``races`` says whether data races on watched state were reported when it was
    recorded (replay does the same, so it stops where the recording stopped).
    ``import_paths``: absolute directories ``lockstep replay`` puts first on
    ``sys.path`` to import them (empty when the environment provides them).
    ``failure``: what failed in the execution it was saved from (None: it passed, or
    it was written before lockstep recorded this).
    Raises InvalidArgument for a field of the wrong shape.
    """

    choices: tuple[Choice, ...] = attrs.field(validator=_validate_choices)
    seed: int | None = None
    strategy: str = "unknown"
    scenario_id: str | None = None
    granularity: Granularity = "op"
    python_version: str = attrs.field(factory=_current_python)
    lockstep_version: str = LOCKSTEP_VERSION
    format_version: int = FORMAT_VERSION
    patch: tuple[str, ...] = attrs.field(default=(), validator=_validate_module_names)
    line_modules: tuple[str, ...] = attrs.field(default=(), validator=_validate_module_names)
    races: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))
    import_paths: tuple[str, ...] = attrs.field(default=(), validator=_validate_import_paths)
    failure: RecordedFailure | None = attrs.field(default=None, validator=_validate_failure)

    # -- dict / JSON -------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (choices in the run-length string form; ``races`` only
        when False, ``import_paths`` only when not empty and ``failure`` only when
        recorded, so files look as before)."""
        data: dict[str, Any] = {
            "format_version": self.format_version,
            "lockstep_version": self.lockstep_version,
            "python_version": self.python_version,
            "strategy": self.strategy,
            "seed": self.seed,
            "scenario_id": self.scenario_id,
            "granularity": self.granularity,
            "patch": list(self.patch),
            "line_modules": list(self.line_modules),
            "choices": choices_to_string(self.choices),
        }
        if not self.races:
            data["races"] = False
        if self.import_paths:
            data["import_paths"] = list(self.import_paths)
        if self.failure is not None:
            data["failure"] = {"kind": self.failure.kind, "label": self.failure.label}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Schedule:
        """Validate ``data`` field by field; raise ScheduleFormatError naming the bad field.

        ``patch``, ``line_modules`` and ``import_paths`` are optional (absent: empty),
        ``races`` (absent: true) and ``failure`` (absent: None), so files written before
        they existed still load.
        """
        if not isinstance(data, Mapping):
            raise ScheduleFormatError(
                f"a schedule must be a JSON object, got {type(data).__name__}"
            )
        version = data.get("format_version")
        if type(version) is not int:
            raise ScheduleFormatError(f"format_version must be an integer, got {version!r}")
        if version != FORMAT_VERSION:
            raise UnsupportedScheduleVersion(
                f"schedule format_version {version} is not supported by lockstep "
                f"{LOCKSTEP_VERSION} (it reads format_version {FORMAT_VERSION}); "
                "re-record the schedule with this lockstep or use the lockstep that wrote it"
            )
        expected = {
            "format_version",
            "lockstep_version",
            "python_version",
            "strategy",
            "seed",
            "scenario_id",
            "granularity",
            "choices",
        }
        optional = {"patch", "line_modules", "races", "import_paths", "failure"}
        unknown = sorted(set(data) - expected - optional)
        if unknown:
            raise ScheduleFormatError(
                f"unknown schedule field(s) {unknown}; expected {sorted(expected | optional)}"
            )
        missing = sorted(expected - set(data))
        if missing:
            raise ScheduleFormatError(f"schedule is missing field(s) {missing}")
        for name in ("lockstep_version", "python_version", "strategy"):
            if not isinstance(data[name], str):
                raise ScheduleFormatError(f"{name} must be a string, got {data[name]!r}")
        seed = data["seed"]
        if seed is not None and type(seed) is not int:
            raise ScheduleFormatError(f"seed must be an integer or null, got {seed!r}")
        scenario_id = data["scenario_id"]
        if scenario_id is not None and not isinstance(scenario_id, str):
            raise ScheduleFormatError(f"scenario_id must be a string or null, got {scenario_id!r}")
        granularity = data["granularity"]
        if granularity not in _GRANULARITIES:
            raise ScheduleFormatError(f"granularity must be 'op' or 'line', got {granularity!r}")
        patch = _module_list(data, "patch")
        line_modules = _module_list(data, "line_modules")
        races = data.get("races", True)
        if type(races) is not bool:
            raise ScheduleFormatError(f"races must be true or false, got {races!r}")
        import_paths = data.get("import_paths", [])
        if not isinstance(import_paths, list) or not all(
            isinstance(p, str) and p and os.path.isabs(p) for p in import_paths
        ):
            raise ScheduleFormatError(
                f"import_paths must be a list of absolute directory paths, got {import_paths!r}"
            )
        failure = _recorded_failure(data.get("failure"))
        return cls(
            choices=choices_from_string(data["choices"]),
            seed=seed,
            strategy=data["strategy"],
            scenario_id=scenario_id,
            granularity=granularity,
            python_version=data["python_version"],
            lockstep_version=data["lockstep_version"],
            format_version=version,
            patch=patch,
            line_modules=line_modules,
            races=races,
            import_paths=tuple(import_paths),
            failure=failure,
        )

    def to_json(self) -> str:
        """Pretty JSON text (what :meth:`save` writes)."""
        return json.dumps(self.to_dict(), indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Schedule:
        """Parse and validate JSON text; raises ScheduleFormatError."""
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ScheduleFormatError(f"schedule is not valid JSON: {exc}") from exc
        return cls.from_dict(data)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write to ``path`` with exclusive creation; raise ScheduleExistsError if it exists.

        Parent directories are created. Returns the path written.
        """
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            with target.open("x", encoding="utf-8") as handle:
                handle.write(self.to_json())
        except FileExistsError as exc:
            raise ScheduleExistsError(
                f"refusing to overwrite existing schedule file {str(target)!r}; "
                "choose another name or delete it first"
            ) from exc
        return target

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Schedule:
        """Read and validate a schedule file; raises ScheduleFormatError (or OSError)."""
        text = Path(path).read_text(encoding="utf-8")
        return cls.from_json(text)

    # -- compact string -----------------------------------------------------------

    def to_string(self) -> str:
        """The compact copy-pasteable form ``ls1:...`` (round-trips through from_string)."""
        raw = json.dumps(self.to_dict(), separators=(",", ":")).encode("utf-8")
        return _STRING_PREFIX + base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode("ascii")

    @classmethod
    def from_string(cls, text: str) -> Schedule:
        """Decode :meth:`to_string`'s form; raises ScheduleFormatError on anything else."""
        if not isinstance(text, str) or not text.startswith(_STRING_PREFIX):
            raise ScheduleFormatError(
                f"a schedule string starts with {_STRING_PREFIX!r}, got {str(text)[:40]!r}"
            )
        try:
            raw = zlib.decompress(base64.urlsafe_b64decode(text[len(_STRING_PREFIX) :].strip()))
        except (binascii.Error, zlib.error, ValueError) as exc:
            raise ScheduleFormatError(f"schedule string is corrupt: {exc}") from exc
        return cls.from_json(raw.decode("utf-8", errors="replace"))

    def with_modules(
        self, *, patch: Iterable[str] | None = None, line_modules: Iterable[str] | None = None
    ) -> Schedule:
        """A copy recording other patch / line modules (None: keep this schedule's)."""
        return attrs.evolve(
            self,
            patch=self.patch if patch is None else tuple(patch),
            line_modules=self.line_modules if line_modules is None else tuple(line_modules),
        )

    def with_import_paths(self, paths: Iterable[str]) -> Schedule:
        """A copy recording other import paths (absolute directories)."""
        return attrs.evolve(self, import_paths=tuple(paths))

    def with_choices(self, choices: Iterable[Choice]) -> Schedule:
        """A copy with other choices (same provenance)."""
        return attrs.evolve(self, choices=tuple(choices))

    def with_failure(self, failure: RecordedFailure | None) -> Schedule:
        """A copy recording another failure (None: none)."""
        return attrs.evolve(self, failure=failure)


def _recorded_failure(value: object) -> RecordedFailure | None:
    """The optional ``failure`` field: null or {"kind": str, "label": str}."""
    if value is None:
        return None
    if (
        not isinstance(value, Mapping)
        or set(value) != {"kind", "label"}
        or not isinstance(value["kind"], str)
        or not value["kind"]
        or not isinstance(value["label"], str)
    ):
        raise ScheduleFormatError(
            f'failure must be null or {{"kind": str, "label": str}}, got {value!r}'
        )
    return RecordedFailure(value["kind"], value["label"])


def _module_list(data: Mapping[str, Any], name: str) -> tuple[str, ...]:
    """The optional list-of-module-names field ``name`` (absent: ())."""
    value = data.get(name, [])
    if not isinstance(value, list) or not all(_is_module_name(n) for n in value):
        raise ScheduleFormatError(
            f'{name} must be a list of dotted module names like "pkg.mod", got {value!r}'
        )
    return tuple(value)

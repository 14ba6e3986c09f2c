"""``lockstep.watch``: mark shared state for the current execution.

Everything is validated before anything is changed, so a refused object is left
exactly as it was (nothing half-watched). See :func:`watch` for the contract and
``docs/races.md`` for how watched state, the race detector and the verdicts fit
together.
"""

from __future__ import annotations

import difflib
import enum
import functools
import queue as _real_queue
import threading as _real_threading
import types
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from lockstep._barrier import Barrier
from lockstep._memory._classes import set_class
from lockstep._memory._containers import (
    adopt_container,
    container_family,
    is_tracked_container,
    needs_copy,
    tracked_class,
)
from lockstep._memory._instances import (
    base_class,
    is_tracked_instance,
    track_attributes,
    tracked_instance_class,
)
from lockstep._memory._state import MemoryState, Shadow, describe_object, memory_of
from lockstep._primitives import Thread, _Bound
from lockstep._queues import Queue
from lockstep._runtime import current_logical_thread
from lockstep.errors import InvalidArgument, InvalidArgumentType

__all__ = ["BENIGN_RACES_ATTRIBUTE", "declared_benign", "watch"]

_T = TypeVar("_T")

BENIGN_RACES_ATTRIBUTE = "__benign_races__"
"""The class attribute by which code under test declares intentionally racy attributes."""

_SUPPORTS = (
    "watch() tracks instances of Python classes that have a __dict__ (their attributes), "
    "and dict, OrderedDict, defaultdict, list, set and deque containers (and subclasses)"
)
_IMMUTABLE: tuple[type, ...] = (
    int,
    float,
    complex,
    str,
    bytes,
    tuple,
    frozenset,
    range,
    type(None),
    type(Ellipsis),
    enum.Enum,
)
_HEAPTYPE = 1 << 9


def _refuse(x: object, reason: str) -> InvalidArgument:
    return InvalidArgument(f"watch() cannot track {describe_object(x)}: {reason}. {_SUPPORTS}.")


@functools.cache
def _sync_types() -> tuple[type, ...]:
    return (
        _Bound,
        Thread,
        Queue,
        Barrier,
        _real_threading.Thread,
        _real_threading.Condition,
        _real_threading.Event,
        _real_threading.Semaphore,
        _real_threading.Barrier,
        _real_queue.Queue,
    )


def _is_frozen(cls: type) -> bool:
    params = getattr(cls, "__dataclass_params__", None)
    if params is not None and getattr(params, "frozen", False):
        return True
    setattr_qualname = getattr(getattr(cls, "__setattr__", None), "__qualname__", "")
    return setattr_qualname == "_frozen_setattrs"  # attrs' frozen classes


_TRACKABLE: set[type] = set()  # classes whose instances passed _check_instance


def _check_instance(x: object) -> None:
    """Raise InvalidArgument when ``x`` is not an instance watch can track (what is
    checked depends on its class only: a class that passed is remembered)."""
    cls = type(x)
    if cls in _TRACKABLE:
        return
    if isinstance(x, type):
        raise _refuse(x, "it is a class; watch its instances (class attributes are not tracked)")
    if isinstance(x, types.ModuleType):
        raise _refuse(
            x,
            "module globals are read by the interpreter directly (LOAD_GLOBAL), "
            "which cannot be tracked; keep the shared state in an object or a container "
            "and watch that",
        )
    if isinstance(x, _IMMUTABLE):
        raise _refuse(
            x, "it is immutable, so it cannot race; watch the object or container that holds it"
        )
    if isinstance(x, _sync_types()):
        raise _refuse(
            x,
            "it is a thread or a synchronisation primitive, which lockstep controls already; "
            "watch the data it protects",
        )
    if isinstance(x, _real_threading.local):
        raise _refuse(x, "thread-local storage is not shared between threads")
    if not cls.__flags__ & _HEAPTYPE:
        raise _refuse(
            x,
            f"{cls.__qualname__} is implemented in C, so its attribute accesses cannot be "
            "intercepted; watch the Python object or container that uses it",
        )
    if _is_frozen(cls):
        raise _refuse(
            x,
            "it is frozen, so its attributes cannot be written and cannot race; watch the "
            "mutable containers it holds where they are created",
        )
    if not cls.__dictoffset__:
        raise _refuse(
            x,
            f"{cls.__qualname__} defines __slots__ without __dict__; watch() swaps the "
            "instance's class to a tracking subclass, which needs a __dict__ (add '__dict__' "
            "to __slots__, or watch the containers it holds where they are created)",
        )
    _TRACKABLE.add(cls)


def declared_benign(cls: type) -> dict[str, str]:
    """The attributes ``cls`` (and its bases) declare intentionally racy: name -> reason.

    Reads ``__benign_races__`` of every class of the MRO (subclasses extend their
    bases). Raises InvalidArgument when a declaration is not a mapping of attribute
    names to non-empty reasons.
    """
    found: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        declared = vars(klass).get(BENIGN_RACES_ATTRIBUTE)
        if declared is None:
            continue
        if not isinstance(declared, Mapping):
            raise InvalidArgument(
                f"{klass.__module__}.{klass.__qualname__}.{BENIGN_RACES_ATTRIBUTE} must be a "
                f"mapping of attribute names to reasons, got {declared!r}"
            )
        for name, reason in declared.items():
            if not isinstance(name, str) or not name:
                raise InvalidArgument(
                    f"{klass.__qualname__}.{BENIGN_RACES_ATTRIBUTE}: attribute names must be "
                    f"non-empty strings, got {name!r}"
                )
            if not isinstance(reason, str) or not reason.strip():
                raise InvalidArgument(
                    f"{klass.__qualname__}.{BENIGN_RACES_ATTRIBUTE}[{name!r}] must be a "
                    f"non-empty string saying why the race is intended, got {reason!r}"
                )
            found[name] = reason
    return found


def _check_racy_mapping(racy: object) -> dict[str, str]:
    if racy is None:
        return {}
    if isinstance(racy, str) or not isinstance(racy, Mapping):
        raise InvalidArgumentType(
            "watch(obj, racy=...) takes a mapping {attribute name: reason} for an instance, "
            f"got {racy!r}"
        )
    checked: dict[str, str] = {}
    for name, reason in racy.items():
        if not isinstance(name, str) or not name:
            raise InvalidArgumentType(f"watch racy= attribute names must be strings, got {name!r}")
        if not isinstance(reason, str) or not reason.strip():
            raise InvalidArgument(
                f"watch racy={{{name!r}: ...}}: the reason must be a non-empty string "
                f"saying why the race is intended, got {reason!r}"
            )
        checked[name] = reason
    return checked


def _check_racy_names(x: object, cls: type, racy: Mapping[str, str]) -> None:
    """Refuse a ``racy=`` name that is surely misspelt, since it would declare nothing:
    a private name written as in the class body (``__size``, which the class's code
    reaches as ``_Cache__size``), or a name the object lacks that is nearly one it
    has (``difflib`` ratio >= 0.8). A name far from every attribute is accepted (the object may
    create it later)."""
    if not racy:
        return
    present = set(object.__getattribute__(x, "__dict__")) | set(dir(cls))
    for name in racy:
        if name in present:
            continue
        if name.startswith("__") and not name.endswith("__"):
            mangled = [
                f"_{klass.__name__.lstrip('_')}{name}"
                for klass in cls.__mro__
                if f"_{klass.__name__.lstrip('_')}{name}" in present
            ]
            if mangled:
                raise InvalidArgument(
                    f"watch(racy={{{name!r}: ...}}): {cls.__qualname__} has no attribute "
                    f"{name!r}; its code reaches that private name as {mangled[0]!r} "
                    f"(Python mangles names that start with two underscores): declare "
                    f"{mangled[0]!r}"
                )
        close = difflib.get_close_matches(name, sorted(present), n=1, cutoff=0.8)
        if close:
            raise InvalidArgument(
                f"watch(racy={{{name!r}: ...}}): {cls.__qualname__} has no attribute "
                f"{name!r}; did you mean {close[0]!r}? (An attribute the object creates "
                "later can be declared once it exists: watch it after that, or name it in "
                f"the class's {BENIGN_RACES_ATTRIBUTE}.)"
            )


def _check_racy_reason(racy: object) -> str | None:
    if racy is None:
        return None
    if not isinstance(racy, str):
        raise InvalidArgumentType(
            f"watch(container, racy=...) takes a reason string for a container, got {racy!r}"
        )
    if not racy.strip():
        raise InvalidArgument("watch(container, racy=...): the reason must not be empty")
    return racy


def _check_name(name: object) -> str | None:
    if name is None:
        return None
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgumentType(f"watch name= must be a non-empty string, got {name!r}")
    return name


def _container_plan(x: Any, racy: object, name: str | None) -> Callable[[MemoryState], Any]:
    reason = _check_racy_reason(racy)
    if not needs_copy(x) and not is_tracked_container(x):
        try:
            tracked_class(type(x))
        except TypeError as exc:
            raise _refuse(x, str(exc)) from exc

    def apply(memory: MemoryState) -> Any:
        return adopt_container(memory, x, name, reason)

    return apply


def _container_attributes(x: object) -> list[tuple[str, Any, Any]]:
    """(name, value, setter) for each attribute of ``x`` holding a container."""
    found: list[tuple[str, Any, Any]] = []
    try:
        namespace = object.__getattribute__(x, "__dict__")
    except AttributeError:
        namespace = {}
    for name, value in list(namespace.items()):
        if isinstance(name, str) and container_family(type(value)) is not None:
            found.append((name, value, None))
    seen: set[str] = set(namespace)
    for klass in type(x).__mro__:
        slots = vars(klass).get("__slots__", ())
        if isinstance(slots, str):
            slots = (slots,)
        for slot in slots:
            if slot in seen or slot in ("__dict__", "__weakref__"):
                continue
            member: Any = vars(klass).get(slot)
            if type(member).__name__ != "member_descriptor":
                continue
            seen.add(slot)
            try:
                value = member.__get__(x, type(x))
            except AttributeError:
                continue
            if container_family(type(value)) is not None:
                found.append((slot, value, member))
    return found


def _instance_plan(x: Any, racy: object, name: str | None) -> Callable[[MemoryState], Any]:
    cls = base_class(type(x))
    if not is_tracked_instance(x):
        _check_instance(x)
    benign = declared_benign(cls)
    declared = _check_racy_mapping(racy)
    _check_racy_names(x, cls, declared)
    benign.update(declared)
    try:
        tracked = tracked_instance_class(cls)
    except TypeError as exc:
        raise _refuse(x, str(exc)) from exc
    attributes = _container_attributes(x)
    for _, value, _ in attributes:
        if not needs_copy(value) and not is_tracked_container(value):
            try:
                tracked_class(type(value))
            except TypeError as exc:
                raise _refuse(value, str(exc)) from exc

    def apply(memory: MemoryState) -> Any:
        shadow = memory.shadows.get(id(x))
        fresh = shadow is None
        shadow = memory.register(
            x,
            kind=cls.__name__,
            shape="attr",
            name=name,
            benign=dict(benign),
            restore=cls,
            tracked_class=tracked,
        )
        if fresh and type(x) is tracked:
            shadow.restore = None  # already tracked before this execution: leave it so
        previous: list[tuple[str, Any, Any]] = []
        try:
            for attribute, value, member in attributes:
                adopted = adopt_container(
                    memory, value, f"{shadow.name}.{attribute}", shadow.benign_reason(attribute)
                )
                if adopted is not value:
                    _store(x, attribute, adopted, member)
                    previous.append((attribute, value, member))
            if type(x) is not tracked:
                set_class(x, tracked)
            declared = shadow.benign if isinstance(shadow.benign, dict) else {}
            track_attributes(x, every=memory.detector is None, also=declared)
        except TypeError as exc:
            for attribute, value, member in reversed(previous):
                _store(x, attribute, value, member)
            if fresh:
                memory.shadows.pop(id(x), None)
            reason = f"its class cannot be switched to a tracking subclass ({exc})"
            raise _refuse(x, reason) from exc
        return x

    return apply


def _store(x: object, name: str, value: Any, member: Any) -> None:
    if member is not None:
        member.__set__(x, value)
    else:
        object.__getattribute__(x, "__dict__")[name] = value


def _plan(x: object, racy: object, name: object) -> Callable[[MemoryState], Any]:
    checked = _check_name(name)
    if container_family(type(x)) is not None:
        return _container_plan(x, racy, checked)
    return _instance_plan(x, racy, checked)


def watch(x: _T, *, racy: Mapping[str, str] | str | None = None, name: str | None = None) -> _T:
    """Mark ``x`` as shared state for the current execution and return what to use.

    * An instance of a Python class: the *same object*, its attribute reads and
      writes tracked from now on, and the dicts, OrderedDicts, defaultdicts, lists,
      sets and deques held in its attributes replaced by tracked equivalents
      (subclasses of the same types). Containers assigned to its attributes later
      in the execution are replaced too.
    * A container: a tracked equivalent to use in its place (a copy for a builtin
      class; for a Python subclass, the same object).

    With ``explore(races=False)`` every tracked access is a switch point (Random,
    PCT, DFS, Hypothesis switch there; DPOR treats two accesses to one location, at
    least one a write, as dependent). With ``races=True`` (the default) accesses are
    checked by the happens-before race detector instead, and only the writes and
    lock-free reads of locations declared ``racy`` are switch points (an attribute's
    reads are recorded from its first write in the execution on, and an execution
    that writes one read before runs again recording them: ``docs/races.md``, "What
    checking costs"). Two unordered changes of one container's key order that do not
    commute (two inserts, two ``move_to_end``, a set's insert and removal) are a
    race too once something reads the order after both: each is atomic, but what
    the read sees depends on which ran first (``DataRace.order``). Outside an
    execution ``watch`` returns ``x`` unchanged.
    Watching lasts for the current execution: at its end instances get their class
    back (see ``docs/races.md``).

    ``racy`` declares locations read without a lock on purpose: a read racing with
    a write is then not reported (two unordered writes still are), and their writes
    and lock-free reads stay switch points: for an instance, a mapping ``{attribute:
    reason}`` (added to the class's own ``__benign_races__`` declarations); for a
    container, a reason string covering all of it. ``name``
    is how reports call it (default: its class and a number, ``dict#2``,
    ``Manager#1``; the containers of an instance are named after its attributes).

    Raises InvalidArgument, with nothing changed, for what cannot be tracked: an
    immutable value, a class, a module, an instance of a C type or of a class with
    ``__slots__`` and no ``__dict__``, a frozen dataclass/attrs instance, a thread or
    synchronisation primitive, thread-local storage; and for a malformed
    ``__benign_races__``; and for a ``racy`` attribute name that is surely misspelt
    (a private ``__name`` the class's code reaches mangled, or nearly the name of an
    attribute the object has). Raises InvalidArgumentType for a ``racy`` or
    ``name`` of the wrong type.
    """
    plan = _plan(x, racy, name)
    lt = current_logical_thread()
    if lt is None or lt.run.in_invariant:
        return x
    memory = memory_of(lt.run)
    result: _T = plan(memory)
    return result


def shadow_of(x: object) -> Shadow | None:
    """The shadow of ``x`` in the current execution (None if it is not watched)."""
    lt = current_logical_thread()
    if lt is None or lt.run.memory is None:
        return None
    shadow: Shadow | None = lt.run.memory.shadows.get(id(x))
    return shadow

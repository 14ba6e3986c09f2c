"""Which state of a stack under test is watched, so `lockstep check` checks data races too.

Every scenario execution builds a fresh stack, then watches its shared state with
`lockstep.watch` before any thread starts: its accesses become switch points and
DPOR dependencies, and the happens-before race detector reports two accesses to
one location, at least one a write, that no synchronisation orders
(``docs/races.md``). An adapter says what to watch with an optional method:

    def watched(self, stack) -> Iterable[object]: ...

returning the objects whose attributes are shared state (instances of Python
classes; `watch` replaces the dicts, lists, sets, deques and OrderedDicts they
hold by tracked ones). Return ``()`` to watch nothing (the verdict then says the
search covered synchronisation only). Without the method, :func:`default_watched`
walks the stack: the stack object and every object reachable from it through
attributes whose class is defined in the same top-level package as one of the
stack's layers, never entering container contents (the models) nor what the
suite gave to ``build`` (the registry and its bookkeeping, which use locks of
their own). An object `watch` cannot track in place (a class with
``__slots__`` and no ``__dict__``) has the containers in its slots replaced by
watched ones instead, so their contents are still checked.

Intended lock-free reads are declared by the implementation itself, with the
reason, in a class attribute that needs no lockstep import::

    class Cache:
        __benign_races__ = {"_entries": "membership test on the hit path; rechecked under the lock"}
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from types import MemberDescriptorType
from typing import Any

import lockstep

__all__ = ["default_watched", "watch_stack", "watched_objects"]

_CONTAINERS = (dict, list, set, deque)
_MAX_OBJECTS = 256


def _package(obj: object) -> str:
    return type(obj).__module__.partition(".")[0]


def _layers(stack: Any) -> list[Any]:
    layers: list[Any] = []
    layer = stack
    for _ in range(64):
        if layer is None or any(layer is seen for seen in layers):
            break
        layers.append(layer)
        layer = getattr(layer, "manager", None)
    return layers


def _attributes(obj: object) -> list[tuple[str, Any, Any]]:
    """(name, value, slot descriptor or None) of ``obj``'s instance attributes."""
    found: list[tuple[str, Any, Any]] = []
    namespace = getattr(obj, "__dict__", None)
    if isinstance(namespace, dict):
        found.extend((name, value, None) for name, value in list(namespace.items()))
    for klass in type(obj).__mro__:
        slots = vars(klass).get("__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            member = vars(klass).get(slot)
            if not isinstance(member, MemberDescriptorType):
                continue
            try:
                found.append((slot, member.__get__(obj, type(obj)), member))
            except AttributeError:
                continue
    return found


def default_watched(stack: Any, exclude: Iterable[object] = ()) -> list[object]:
    """The stack and the objects of its implementation reachable through attributes,
    not entering the objects in ``exclude`` (the inputs the suite built it from)."""
    packages = {_package(layer) for layer in _layers(stack)}
    packages.discard("builtins")
    found: list[object] = []
    seen: set[int] = {id(obj) for obj in exclude}
    queue: deque[object] = deque([stack])
    while queue and len(found) < _MAX_OBJECTS:
        obj = queue.popleft()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if _package(obj) not in packages or isinstance(obj, type):
            continue
        found.append(obj)
        for _, value, _ in _attributes(obj):
            if not isinstance(value, _CONTAINERS) and id(value) not in seen:
                queue.append(value)
    return found


def watched_objects(adapter: Any, stack: Any, exclude: Iterable[object] = ()) -> list[object]:
    """What ``adapter`` says to watch in ``stack`` (its ``watched(stack)``, else the default)."""
    chooser = getattr(adapter, "watched", None)
    if chooser is None:
        return default_watched(stack, exclude)
    return list(chooser(stack))


def watch_stack(adapter: Any, stack: Any, exclude: Iterable[object] = ()) -> None:
    """Watch ``stack``'s shared state for the current execution (see the module doc).

    Raises `lockstep.InvalidArgument` for an object the adapter named that cannot be
    watched (a default walk skips those it cannot track and watches their containers).
    """
    named = getattr(adapter, "watched", None) is not None
    for obj in watched_objects(adapter, stack, exclude):
        if named or type(obj).__dictoffset__:
            try:
                lockstep.watch(obj)
                continue
            except lockstep.InvalidArgument:
                if named:
                    raise
        _watch_slots(obj)


def _watch_slots(obj: object) -> None:
    """Replace the containers held in ``obj``'s ``__slots__`` by watched ones (named
    after the attribute, with the class's ``__benign_races__`` reason for it)."""
    declared: dict[str, str] = {}
    for klass in reversed(type(obj).__mro__):
        declared.update(vars(klass).get("__benign_races__", None) or {})
    owner = type(obj).__qualname__
    for attribute, value, member in _attributes(obj):
        if member is not None and isinstance(value, _CONTAINERS):
            try:
                watched = lockstep.watch(
                    value, racy=declared.get(attribute), name=f"{owner}.{attribute}"
                )
                member.__set__(obj, watched)
            except (lockstep.InvalidArgument, AttributeError, TypeError):
                continue


def describe(objects: Iterable[object]) -> str:
    """The classes watched, for reports (``ModelManager, LifecycleTable, ...``)."""
    return ", ".join(sorted({type(obj).__qualname__ for obj in objects}))

"""Tracked instances: the same object, its class swapped to a generated subclass.

``watch(obj)`` on an instance of a Python class ``C`` (with a ``__dict__``) sets
``obj.__class__`` to ``C``'s tracked subclass (generated once per class, adding no
storage), which overrides ``__getattribute__``, ``__setattr__`` and
``__delattr__``. The code under test is not edited; ``isinstance(obj, C)`` holds
and ``obj.__class__`` still answers ``C`` (only ``type(obj)`` shows the subclass).

Which attribute accesses are tracked (a read or write of the slot named like the
attribute):

* instance attributes (in the instance ``__dict__`` or a ``__slots__`` member),
  reads of class-level plain values (a default later shadowed by an instance
  attribute) and of missing attributes (``getattr(obj, "x", None)``,
  ``hasattr``): tracked;
* methods, properties and other descriptors of the class: not tracked
  themselves (a property's getter and setter run and their own accesses to
  instance attributes are tracked); an instance attribute shadowing a method
  is tracked; a ``functools.cached_property`` is a write when it computes and a
  read once cached;
* dunder names (``__dict__``, ``__class__``, ...): never tracked; code that
  reads or writes ``obj.__dict__`` directly bypasses tracking.

A container assigned to an attribute of a watched instance during the execution
(``self._models = {}``) is replaced by a tracked one, like the containers found
by ``watch``. Pickling or copying a watched instance gives a plain instance of
``C``. At the end of the execution the instance gets its class back.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from lockstep._memory._containers import CONTAINER_TYPES, replace_class
from lockstep._memory._state import MemoryState, active_run
from lockstep._runtime import LogicalThread, _tls

__all__ = ["base_class", "is_tracked_instance", "tracked_instance_class"]

# How an attribute name resolves on the class (cached per tracked class).
_PLAIN = 0  # a value, a __slots__ member, or nothing: tracked
_CACHED = 1  # functools.cached_property: a write when it computes, then a read
_METHOD = 2  # a non-data descriptor (function, classmethod...): tracked only if shadowed
_DESCRIPTOR = 3  # a data descriptor (property...): its code is tracked, not the name
_DUNDER = 4  # __dict__, __class__...: never tracked

_TRACKED: dict[type, type] = {}
_BASE_OF: dict[type, type] = {}


def is_tracked_instance(obj: object) -> bool:
    """True when ``obj``'s class is a generated tracked instance class."""
    return type(obj) in _BASE_OF


def base_class(cls: type) -> type:
    """The user class a tracked instance class was generated from (else ``cls``)."""
    return _BASE_OF.get(cls, cls)


def _attribute_kind(cls: type, name: str) -> int:
    if name[:2] == "__":
        return _DUNDER
    for klass in cls.__mro__:
        if name in klass.__dict__:
            attr = klass.__dict__[name]
            break
    else:
        return _PLAIN
    if isinstance(attr, functools.cached_property):
        return _CACHED
    kind = type(attr)
    if kind.__name__ == "member_descriptor":  # a __slots__ entry: instance storage
        return _PLAIN
    if hasattr(kind, "__set__") or hasattr(kind, "__delete__"):
        return _DESCRIPTOR
    if hasattr(kind, "__get__"):
        return _METHOD
    return _PLAIN


def _in_dict(obj: object, name: str) -> bool:
    try:
        return name in object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return False


def tracked_instance_class(cls: Any) -> type:
    """``cls``'s tracked subclass (generated once). Raises TypeError when it cannot be made."""
    cls = base_class(cls)
    cached = _TRACKED.get(cls)
    if cached is not None:
        return cached
    kinds: dict[str, int] = {}
    base_getattribute: Callable[[Any, str], Any] = cls.__getattribute__
    base_setattr: Callable[[Any, str, Any], None] = cls.__setattr__
    base_delattr: Callable[[Any, str], None] = cls.__delattr__
    base_reduce: Callable[[Any, Any], Any] = cls.__reduce_ex__

    def kind_of(name: str) -> int:
        kind = kinds.get(name)
        if kind is None:
            kind = kinds[name] = _attribute_kind(cls, name)
        return kind

    def __getattribute__(self: Any, name: str) -> Any:
        # The class-level answer first (cached): dunders, method and property lookups,
        # most of the attribute reads of typical code, are not accesses and skip the
        # run lookup.
        kind = kinds.get(name)
        if kind is None:
            kind = kind_of(name)
        if kind != _PLAIN and (
            kind >= _DESCRIPTOR or (kind == _METHOD and not _in_dict(self, name))
        ):
            return base_getattribute(self, name)
        lt: LogicalThread | None = getattr(_tls, "thread", None)  # active_run, inlined
        if lt is not None:
            run = lt.run
            memory: MemoryState | None = run.memory
            if memory is not None and not memory.busy and not run.in_invariant:
                shadow = memory.shadows.get(id(self))
                if shadow is not None:
                    if kind == _CACHED:
                        cached_now = _in_dict(self, name)
                        op = "read" if cached_now else "compute"
                        memory.access(lt, shadow, not cached_now, name, op)
                    elif memory.detector is not None and not shadow.benign:
                        # What MemoryState.access does for it (the hottest path: inlined).
                        memory.detector.read_attr(lt, shadow, name)
                    else:
                        memory.access(lt, shadow, False, name, "read")
        return base_getattribute(self, name)

    def __setattr__(self: Any, name: str, value: Any) -> None:
        lt: LogicalThread | None = getattr(_tls, "thread", None)  # active_run, inlined
        if lt is not None:
            kind = kinds.get(name)
            if kind is None:
                kind = kind_of(name)
            run = lt.run
            memory: MemoryState | None = run.memory
            if kind != _DUNDER and memory is not None and not memory.busy and not run.in_invariant:
                shadow = memory.shadows.get(id(self))
                if shadow is not None:
                    if kind == _DESCRIPTOR:
                        pass  # a property's setter: its own accesses are tracked
                    elif memory.detector is not None and not shadow.benign:
                        memory.detector.write_attr(lt, shadow, name)
                    else:
                        memory.access(lt, shadow, True, name, "write")
                    if isinstance(value, CONTAINER_TYPES):
                        value = adopt_value(
                            memory, shadow.name, name, shadow.benign_reason(name), value
                        )
        base_setattr(self, name, value)

    def __delattr__(self: Any, name: str) -> None:
        if kind_of(name) < _DESCRIPTOR:
            found = active_run(self)
            if found is not None:
                memory, lt, shadow = found
                memory.access(lt, shadow, True, name, "del")
        base_delattr(self, name)

    from lockstep._memory._classes import make_subclass  # noqa: PLC0415

    namespace: dict[str, Any] = {
        "__getattribute__": __getattribute__,
        "__setattr__": __setattr__,
        "__delattr__": __delattr__,
    }
    tracked = make_subclass(cls, namespace, module=cls.__module__)

    def __reduce_ex__(self: Any, protocol: Any) -> Any:
        return replace_class(base_reduce(self, protocol), tracked, cls)

    type.__setattr__(tracked, "__reduce_ex__", __reduce_ex__)
    _TRACKED[cls] = tracked
    _BASE_OF[tracked] = cls
    return tracked


def adopt_value(
    memory: MemoryState, owner: str, attribute: str, benign: str | None, value: Any
) -> Any:
    """``value`` as it should be stored in a watched object's attribute: a builtin
    container becomes a tracked one (the same one for the same original)."""
    from lockstep._memory._watch import adopt_container  # noqa: PLC0415

    return adopt_container(memory, value, f"{owner}.{attribute}", benign)

"""Tracked instances: the same object, its class swapped to a generated subclass.

``watch(obj)`` on an instance of a Python class ``C`` (with a ``__dict__``) sets
``obj.__class__`` to ``C``'s tracked subclass (generated once per class, adding no
storage). The code under test is not edited; ``isinstance(obj, C)`` holds and
``obj.__class__`` still answers ``C`` (only ``type(obj)`` shows the subclass).

How reads are seen: the tracked subclass holds a data descriptor (:class:`_Attr`)
for each attribute name that a watched instance of ``C`` has stored (found when
it is watched, added when a new one is assigned) and for each plain class-level
value of ``C``. A data descriptor of the class takes precedence over the
instance ``__dict__``, so ``obj.x`` calls the descriptor, which records the read
and returns the stored value. Every other lookup (methods, properties, dunders)
finds ``C``'s own attribute and costs nothing more than on ``C``: nothing
intercepts ``__getattribute__``. Reads of a missing attribute
(``getattr(obj, "x", None)``, ``hasattr``) reach the subclass's ``__getattr__``,
which records them. Writes and deletions go through the subclass's
``__setattr__`` and ``__delattr__``.

Reads recorded from the first write on: with races reported, an attribute gets
its descriptor when it is first written (``__setattr__``, ``__delattr__``), not
when its object is watched, so reading an attribute nothing writes (a lock, a
table, a limit) costs nothing more than on ``C``. A write that gives one its
descriptor while reads of it may have gone unrecorded (it held a value already)
calls ``MemoryState.reads_missed``: the execution runs again from the start with
the same choices, now recording them (``lockstep._execution.run_execution``).
Descriptors stay on the tracked class, so this happens once per attribute of a
class in a process. Declared racy attributes (their reads are switch points),
and every attribute with races off, get their descriptor when the object is
watched (:func:`track_attributes`).

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
``C``. At the end of the execution the instance gets its class back. The
descriptors stay on the tracked subclass (only watched instances have it as
their class); on an instance that is not watched in the current execution they
record nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

from lockstep._memory._classes import QUIET, make_subclass
from lockstep._memory._containers import CONTAINER_TYPES, adopt_container, replace_class
from lockstep._memory._state import MemoryState, active_run
from lockstep._runtime import LogicalThread, _tls

__all__ = ["base_class", "is_tracked_instance", "track_attributes", "tracked_instance_class"]

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


def _class_value(cls: type, name: str) -> Any:
    """The attribute ``name`` of class ``cls`` as found in its MRO (``_MISSING`` if none)."""
    for klass in cls.__mro__:
        attr = klass.__dict__.get(name, _MISSING)
        if attr is not _MISSING:
            return attr
    return _MISSING


_MISSING: Any = object()

# How an _Attr descriptor finds the value (what the name is on the base class).
_IN_DICT = 0  # a plain value or nothing on the class: the instance __dict__, else the class
_SHADOWS = 1  # a method (non-data descriptor): tracked when the instance __dict__ has it
_CACHES = 2  # a functools.cached_property
_SLOT = 3  # a __slots__ member


class _Attr:
    """The data descriptor standing for one attribute name on a tracked class.

    ``__get__`` records the read (when the instance is watched in the current run)
    and returns what ``C`` would; ``__set__``/``__delete__`` only store (the tracked
    ``__setattr__``/``__delattr__`` record writes, before they store).
    """

    __slots__ = ("base", "member", "mode", "name")

    def __init__(self, base: type, name: str, mode: int, member: Any) -> None:
        self.base = base
        self.name = name
        self.mode = mode
        self.member = member  # the slot's member descriptor, or the cached_property

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return getattr(self.base, self.name)
        name = self.name
        lt: LogicalThread | None = getattr(_tls, "thread", None)  # active_run, inlined
        if lt is not None:
            run = lt.run
            memory: MemoryState | None = run.memory
            if memory is not None and run.in_invariant:
                memory.quiet_now(obj)
            elif memory is not None and not memory.busy:
                shadow = memory.shadows.get(id(obj))
                if shadow is not None:
                    mode = self.mode
                    if mode == _CACHES:
                        cached_now = name in obj.__dict__
                        op = "read" if cached_now else "compute"
                        memory.access(lt, shadow, not cached_now, name, op)
                    elif mode != _SHADOWS or name in obj.__dict__:
                        detector = memory.detector
                        benign = shadow.benign
                        if detector is not None and (
                            not benign or (type(benign) is dict and name not in benign)
                        ):
                            # What MemoryState.access does for an attribute not declared
                            # racy (the hottest path).
                            detector.read_attr(lt, shadow, name)
                        else:
                            memory.access(lt, shadow, False, name, "read")
        if self.mode <= _SHADOWS:  # in the instance __dict__, else on the class
            found = obj.__dict__.get(name, _MISSING)
            if found is not _MISSING:
                return found
            return self._from_class(obj)
        return self.member.__get__(obj, owner)  # a slot, or a cached_property (may compute)

    def _ls_static(self, obj: Any) -> Any:
        """What ``inspect.getattr_static(obj, name)`` gives on an instance of ``C``
        (runs no code, records nothing; raises AttributeError when there is none): the
        stall diagnosis reads attributes this way."""
        if isinstance(obj, type) or self.mode == _SLOT:
            return self.member if self.mode == _SLOT else _class_value(self.base, self.name)
        found = vars(obj).get(self.name, _MISSING)
        if found is _MISSING:
            found = _class_value(self.base, self.name)
        if found is _MISSING:
            raise AttributeError(self.name)
        return found

    def _from_class(self, obj: Any) -> Any:
        """What ``C`` answers for a name the instance does not store."""
        attr = _class_value(self.base, self.name)
        if attr is _MISSING:
            raise AttributeError(
                f"{self.base.__name__!r} object has no attribute {self.name!r}",
                name=self.name,
                obj=obj,
            )
        get = getattr(type(attr), "__get__", None)
        return attr if get is None else get(attr, obj, type(obj))

    def __set__(self, obj: Any, value: Any) -> None:
        if self.mode == _SLOT:
            self.member.__set__(obj, value)
        else:
            obj.__dict__[self.name] = value

    def __delete__(self, obj: Any) -> None:
        if self.mode == _SLOT:
            self.member.__delete__(obj)
            return
        try:
            del obj.__dict__[self.name]
        except KeyError:
            raise AttributeError(
                f"{self.base.__name__!r} object has no attribute {self.name!r}",
                name=self.name,
                obj=obj,
            ) from None


def tracked_instance_class(cls: Any) -> type:
    """``cls``'s tracked subclass (generated once). Raises TypeError when it cannot be made."""
    cls = base_class(cls)
    cached = _TRACKED.get(cls)
    if cached is not None:
        return cached
    kinds: dict[str, int] = {}
    attrs_: dict[str, _Attr] = {}
    base_setattr: Callable[[Any, str, Any], None] = cls.__setattr__
    base_delattr: Callable[[Any, str], None] = cls.__delattr__
    base_getattr: Callable[[Any, str], Any] | None = getattr(cls, "__getattr__", None)
    base_reduce: Callable[[Any, Any], Any] = cls.__reduce_ex__
    plain_setattr = base_setattr is object.__setattr__

    def kind_of(name: str) -> int:
        kind = kinds.get(name)
        if kind is None:
            kind = kinds[name] = _attribute_kind(cls, name)
        return kind

    def install(name: str) -> bool:
        """Give ``name`` its descriptor (when reads of it can be tracked); True when it
        got one now."""
        if name in attrs_ or not isinstance(name, str) or name in vars(tracked):
            return False  # done, or the tracked class's own (``_abc_impl`` of an ABC...)
        kind = kind_of(name)
        if kind == _PLAIN:
            member = _class_value(cls, name)
            if type(member).__name__ == "member_descriptor":
                attr = _Attr(cls, name, _SLOT, member)
            else:
                attr = _Attr(cls, name, _IN_DICT, None)
        elif kind == _METHOD:
            attr = _Attr(cls, name, _SHADOWS, None)
        elif kind == _CACHED:
            attr = _Attr(cls, name, _CACHES, _class_value(cls, name))
        else:
            return False
        attrs_[name] = attr
        type.__setattr__(tracked, name, attr)
        return True

    def __getattr__(self: Any, name: str) -> Any:
        # Only reached when the normal lookup failed: a missing attribute (a name
        # with a descriptor recorded its read already).
        if name not in attrs_ and kind_of(name) == _PLAIN:
            found = active_run(self)
            if found is not None:
                memory, lt, shadow = found
                memory.access(lt, shadow, False, name, "read")
        if base_getattr is not None:
            return base_getattr(self, name)
        raise AttributeError(
            f"{cls.__name__!r} object has no attribute {name!r}", name=name, obj=self
        )

    def __setattr__(self: Any, name: str, value: Any) -> None:
        kind = kinds.get(name)
        if kind is None:
            kind = kind_of(name)
        lt: LogicalThread | None = getattr(_tls, "thread", None)  # active_run, inlined
        if lt is not None:
            run = lt.run
            memory: MemoryState | None = run.memory
            if kind != _DUNDER and memory is not None and not memory.busy and not run.in_invariant:
                shadow = memory.shadows.get(id(self))
                if shadow is not None:
                    if kind == _DESCRIPTOR:
                        pass  # a property's setter: its own accesses are tracked
                    elif memory.detector is not None and (
                        not shadow.benign
                        or (type(shadow.benign) is dict and name not in shadow.benign)
                    ):
                        if name not in attrs_ and _stored(self, name, kind) and install(name):
                            memory.reads_missed()  # read untracked until now: run again
                        memory.writes += 1
                        memory.detector.write_attr(lt, shadow, name)
                    else:
                        memory.access(lt, shadow, True, name, "write")
                    if isinstance(value, CONTAINER_TYPES):
                        value = adopt_value(
                            memory, shadow.name, name, shadow.benign_reason(name), value
                        )
        attr = attrs_.get(name)
        if attr is None:
            base_setattr(self, name, value)
            if kind < _DESCRIPTOR:
                install(name)
        elif plain_setattr and attr.mode != _SLOT:
            self.__dict__[name] = value  # what object.__setattr__ would do, minus __set__
        else:
            base_setattr(self, name, value)

    def __delattr__(self: Any, name: str) -> None:
        kind = kind_of(name)
        if kind < _DESCRIPTOR:
            found = active_run(self)
            if found is not None:
                memory, lt, shadow = found
                if (
                    memory.detector is not None
                    and name not in attrs_
                    and _stored(self, name, kind)
                    and install(name)
                ):
                    memory.reads_missed()  # read untracked until now: run again
                memory.access(lt, shadow, True, name, "del")
        base_delattr(self, name)

    namespace: dict[str, Any] = {
        "__getattr__": __getattr__,
        "__setattr__": __setattr__,
        "__delattr__": __delattr__,
    }
    tracked = make_subclass(cls, namespace, module=cls.__module__)

    def __reduce_ex__(self: Any, protocol: Any) -> Any:
        return replace_class(base_reduce(self, protocol), tracked, cls)

    type.__setattr__(tracked, "__reduce_ex__", __reduce_ex__)
    _TRACKED[cls] = tracked
    _BASE_OF[tracked] = cls
    QUIET[tracked] = cls
    _INSTALL[tracked] = install
    # Class-level plain values (defaults an instance may shadow): installed with the
    # instance's attributes (track_attributes); cached properties now.
    plain: list[str] = []
    for klass in reversed(cls.__mro__):
        if klass is object:
            continue
        for name in list(vars(klass)):
            if not isinstance(name, str):
                continue
            kind = kind_of(name)
            if kind == _CACHED:
                install(name)
            elif kind == _PLAIN:
                plain.append(name)
    _CLASS_VALUES[tracked] = tuple(dict.fromkeys(plain))
    return tracked


_INSTALL: dict[type, Callable[[str], bool]] = {}
_CLASS_VALUES: dict[type, tuple[str, ...]] = {}


def _stored(obj: Any, name: str, kind: int) -> bool:
    """Whether reading ``obj.name`` finds a value now (in the instance, or a plain value
    of its class): reads of it may have been made without a descriptor to record them."""
    try:
        if name in object.__getattribute__(obj, "__dict__"):
            return True
    except AttributeError:
        pass
    return kind == _PLAIN and _class_value(base_class(type(obj)), name) is not _MISSING


def track_attributes(obj: object, *, every: bool, also: Iterable[str] = ()) -> None:
    """Give ``obj``'s tracked class a descriptor for the attributes whose reads are
    recorded from now on (``obj`` already has its tracked class).

    ``every``: each attribute ``obj`` stores now and each plain value of its class
    (needed where every read is a switch point: races not reported). Otherwise only
    the names in ``also`` (declared racy: their reads are switch points); the reads
    of the others are recorded from their first write on (see "Reads recorded from
    the first write on" in the module doc).
    """
    install = _INSTALL[type(obj)]
    for name in also:
        install(name)
    if not every:
        return
    try:
        names = list(object.__getattribute__(obj, "__dict__"))
    except AttributeError:
        names = []
    for name in (*names, *_CLASS_VALUES[type(obj)]):
        install(name)


def adopt_value(
    memory: MemoryState, owner: str, attribute: str, benign: str | None, value: Any
) -> Any:
    """``value`` as it should be stored in a watched object's attribute: a builtin
    container becomes a tracked one (the same one for the same original)."""
    return adopt_container(memory, value, f"{owner}.{attribute}", benign)

"""``threading.local`` per logical thread.

Inside a lockstep execution each logical thread sees its own attributes, as each OS
thread does with the real ``threading.local``: on the greenlet backend every logical
thread shares one OS thread, so the real one would be shared by all of them. Outside a
run it is per OS thread, like the real one.

Semantics follow the standard library's (``_threading_local``): a subclass's
``__init__`` runs again, with the arguments the object was created with, the first
time each thread touches the object; passing arguments without overriding
``__init__`` is a TypeError; ``__dict__`` is the calling thread's. Every execution
starts fresh: a module-level local has no attribute in a new execution's threads.

Unlike ``_threading_local`` no lock is held and no ``__dict__`` is swapped during an
attribute access: each access looks up the calling thread's storage, so a property of
a subclass may reach a switch point safely.
"""

from __future__ import annotations

import itertools
import threading as _real_threading
from typing import Any

from lockstep._runtime import current_logical_thread

__all__ = ["local"]

_MISSING = object()
_keys = itertools.count(1)
_INTERNAL = frozenset({"_ls_key", "_ls_args", "_ls_kwargs", "_ls_os"})


def _class_attribute(cls: type, name: str) -> Any:
    for klass in cls.__mro__:
        found = vars(klass).get(name, _MISSING)
        if found is not _MISSING:
            return found
    return _MISSING


def _is_data_descriptor(attr: Any) -> bool:
    kind = type(attr)
    return hasattr(kind, "__set__") or hasattr(kind, "__delete__")


class local:  # lowercase: the standard library's name
    """Thread-local data: attributes per logical thread inside a run, per OS thread outside."""

    __slots__ = ("__weakref__", "_ls_args", "_ls_key", "_ls_kwargs", "_ls_os")

    def __new__(cls, *args: Any, **kwargs: Any) -> local:
        if (args or kwargs) and cls.__init__ is object.__init__:
            raise TypeError("Initialization arguments are not supported")
        self = object.__new__(cls)
        object.__setattr__(self, "_ls_key", next(_keys))
        object.__setattr__(self, "_ls_args", args)
        object.__setattr__(self, "_ls_kwargs", kwargs)
        object.__setattr__(self, "_ls_os", _real_threading.local())
        # Python calls __init__ right after __new__ in this thread: its storage exists.
        _storage(self, initialise=False)
        return self

    def __getattribute__(self, name: str) -> Any:
        if name in _INTERNAL:
            return object.__getattribute__(self, name)
        namespace = _storage(self)
        if name == "__dict__":
            return namespace
        cls = type(self)
        attr = _class_attribute(cls, name)
        if attr is not _MISSING and _is_data_descriptor(attr):
            return type(attr).__get__(attr, self, cls)
        if name in namespace:
            return namespace[name]
        if attr is not _MISSING:
            getter = getattr(type(attr), "__get__", None)
            return attr if getter is None else getter(attr, self, cls)
        hook = _class_attribute(cls, "__getattr__")
        if hook is not _MISSING:
            return hook(self, name)
        raise AttributeError(f"{cls.__name__!r} object has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "__dict__":
            raise AttributeError(
                f"{type(self).__name__!r} object attribute '__dict__' is read-only"
            )
        attr = _class_attribute(type(self), name)
        if attr is not _MISSING and hasattr(type(attr), "__set__"):
            type(attr).__set__(attr, self, value)
            return
        _storage(self)[name] = value

    def __delattr__(self, name: str) -> None:
        if name == "__dict__":
            raise AttributeError(
                f"{type(self).__name__!r} object attribute '__dict__' is read-only"
            )
        attr = _class_attribute(type(self), name)
        if attr is not _MISSING and hasattr(type(attr), "__delete__"):
            type(attr).__delete__(attr, self)
            return
        try:
            del _storage(self)[name]
        except KeyError:
            raise AttributeError(name) from None


def _storage(obj: local, *, initialise: bool = True) -> dict[str, Any]:
    """The calling thread's attributes of ``obj`` (created, and __init__ run, if new)."""
    lt = current_logical_thread()
    if lt is None:
        os_local = object.__getattribute__(obj, "_ls_os")
        namespace: dict[str, Any] | None = getattr(os_local, "namespace", None)
        if namespace is None:
            namespace = os_local.namespace = {}
            if initialise:
                _initialise(obj)
        return namespace
    stores = lt.locals
    if stores is None:
        stores = lt.locals = {}
    key = object.__getattribute__(obj, "_ls_key")
    namespace = stores.get(key)
    if namespace is None:
        namespace = stores[key] = {}
        if initialise:
            _initialise(obj)
    return namespace


def _initialise(obj: local) -> None:
    init = type(obj).__init__
    if init is not object.__init__:
        init(
            obj,
            *object.__getattribute__(obj, "_ls_args"),
            **object.__getattribute__(obj, "_ls_kwargs"),
        )

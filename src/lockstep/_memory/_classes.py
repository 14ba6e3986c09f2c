"""Creating the tracked subclass of a user's class without side effects on it.

A tracked class is a subclass with no storage of its own (``__slots__ = ()``), so
an existing instance can switch to it (:func:`set_class`) and back. Its instances
report the base as ``__class__``.
Creating a subclass normally runs the base's ``__init_subclass__``, which plugin
registries use to record every subclass; the tracked subclass must not show up
there, so that hook is silenced while the class is created. (A metaclass with
side effects in ``__new__``/``__init__`` still sees it; such classes are rare
among the objects people watch, and an error there is reported as
InvalidArgument by ``watch``.)
"""

from __future__ import annotations

from typing import Any

__all__ = ["QUIET", "make_subclass", "set_class"]

_MISSING = object()
_OBJECT_CLASS: Any = vars(object)["__class__"]

QUIET: dict[type, type] = {}
"""Tracked class -> a class with the same layout that tracks nothing (the base class
itself, or for a builtin container an empty subclass of it): what watched objects
are switched to while invariants run (``MemoryState.quiet``). Filled as tracked
classes are made."""


def set_class(obj: object, cls: type) -> None:
    """``obj.__class__ = cls`` through ``object``'s own descriptor (a tracked class
    reports its base as ``__class__``, so the attribute cannot be assigned normally).

    Raises TypeError when the layouts differ."""
    _OBJECT_CLASS.__set__(obj, cls)


def _silent(cls: type, /, **kwargs: Any) -> None:
    """An ``__init_subclass__`` that does nothing (used while creating a tracked class)."""


def make_subclass(base: type, namespace: dict[str, Any], *, module: str) -> type:
    """``base``'s tracked subclass with ``namespace``, named like ``base``.

    Raises TypeError (with the reason) when the class cannot be created.
    """
    ns = dict(namespace)
    ns.setdefault("__slots__", ())
    # obj.__class__ answers the base: pickle and copy then build plain objects, and code
    # comparing its own class (self.__class__ is C) is not affected.
    ns["__class__"] = property(lambda self: base, doc="the watched object's own class")
    ns["__module__"] = module
    ns["__qualname__"] = base.__qualname__
    hook = _custom_init_subclass(base)
    own = base.__dict__.get("__init_subclass__", _MISSING) if hook else _MISSING
    if hook:
        try:
            type.__setattr__(base, "__init_subclass__", classmethod(_silent))
        except (TypeError, AttributeError):
            hook = False
    try:
        metaclass: Any = type(base)
        tracked: type = metaclass(base.__name__, (base,), ns)
    except Exception as exc:
        raise TypeError(
            f"cannot create a tracked subclass of {base.__qualname__}: {type(exc).__name__}: {exc}"
        ) from exc
    finally:
        if hook:
            if own is _MISSING:
                type.__delattr__(base, "__init_subclass__")
            else:
                type.__setattr__(base, "__init_subclass__", own)
    return tracked


def _custom_init_subclass(base: type) -> bool:
    """True when some class of ``base``'s MRO defines its own ``__init_subclass__``."""
    return any("__init_subclass__" in vars(klass) for klass in base.__mro__ if klass is not object)

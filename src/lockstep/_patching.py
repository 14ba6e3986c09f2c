"""Swap the ``threading``, ``time``, ``queue``, ``heapq`` and ``datetime`` names in modules.

``patched(*modules)`` replaces, in each given module's namespace, every reference to
the real modules (``import threading``) by lockstep's stand-ins
(:mod:`lockstep.threading`, :mod:`lockstep.time`, :mod:`lockstep.queue`, and
:mod:`lockstep._memory._heapq`, which reports heap operations on a watched list, and
:mod:`lockstep._datetime`, whose "now" is the virtual clock) and every name
imported from them (``from threading import Lock``, ``from time import monotonic``) by
the stand-in's object of the same name, and restores the originals on exit, also when
the body raises. The stand-ins fall back to the real objects outside a run, so patched
code keeps working between executions.

What the module bound at import time is swapped too, in the functions and classes the
module defines (not in those it imports): default argument values (``def
__init__(self, lock_factory=threading.Lock, clock=time.monotonic)``), class attributes
(``clock = time.monotonic``) and real bases (``class Worker(threading.Thread)`` runs as
a logical thread). A base whose stand-in has another instance layout
(``threading.local``, ``queue.SimpleQueue``: C types) cannot be swapped and stays real,
and so do objects created before patching (a lock created at import time). Not
thread-safe: patch from one thread.
"""

from __future__ import annotations

import datetime as _real_datetime
import heapq as _real_heapq
import importlib
import queue as _real_queue
import sys
import threading as _real_threading
import time as _real_time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FunctionType, ModuleType
from typing import Any

from lockstep import _datetime as ls_datetime
from lockstep import queue as ls_queue
from lockstep import threading as ls_threading
from lockstep import time as ls_time
from lockstep._imports import main_module_name
from lockstep._memory import _heapq as ls_heapq
from lockstep._runtime import ExitHook, Run
from lockstep.errors import InvalidArgument, InvalidArgumentType

__all__ = ["exit_hooks_for", "patched", "resolve_module", "stand_in_for"]

_REFUSED = frozenset(
    {"threading", "time", "queue", "heapq", "datetime", "_thread", "sys", "builtins"}
)


def resolve_module(module: ModuleType | str) -> ModuleType:
    """A module object from a module or a dotted name (imported if needed).

    Raises InvalidArgumentType for other types and InvalidArgument when the name cannot
    be imported.
    """
    if isinstance(module, ModuleType):
        return module
    if not isinstance(module, str):
        raise InvalidArgumentType(f"expected a module or a dotted module name, got {module!r}")
    if module not in sys.modules and module == main_module_name():
        # The running script, recorded by the name a replay imports it as: here it is
        # __main__ (importing it again would make a second copy, unpatched).
        return sys.modules["__main__"]
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise InvalidArgument(f"cannot import module {module!r} to patch: {exc}") from exc


def _facades() -> dict[int, object]:
    mapping: dict[int, object] = {
        id(_real_threading): ls_threading,
        id(_real_time): ls_time,
        id(_real_queue): ls_queue,
        id(_real_heapq): ls_heapq,
        id(_real_datetime): ls_datetime,
    }
    for real, fake in (
        (_real_threading, ls_threading),
        (_real_time, ls_time),
        (_real_queue, ls_queue),
        (_real_heapq, ls_heapq),
        (_real_datetime, ls_datetime),
    ):
        for name in fake.__all__:
            original = getattr(real, name, None)
            replacement = getattr(fake, name)
            if original is not None and original is not replacement:
                mapping[id(original)] = replacement
    # threading.currentThread & co. are deprecated aliases; map the common old names too.
    return mapping


_MAPPING: dict[int, object] | None = None


def stand_in_for(obj: object) -> object | None:
    """The controlled stand-in for a real threading/time/queue/heapq/datetime object, or None."""
    global _MAPPING
    if _MAPPING is None:
        _MAPPING = _facades()
    return _MAPPING.get(id(obj))


_ACTIVE: list[ModuleType] = []
"""The modules patched now (a module patched twice, nested, is listed twice)."""


def exit_hooks() -> list[Callable[[], object]]:
    """The interpreter-exit hooks the patched modules registered, in the order the
    interpreter runs them: what ``threading._register_atexit`` recorded for a function
    of a patched module (``concurrent.futures.thread`` registers the one that stops
    idle pool workers), last registered first, as ``threading._shutdown`` does."""
    registered = getattr(_real_threading, "_threading_atexits", None) or []
    namespaces = {id(vars(module)) for module in _ACTIVE}
    return [hook for hook in reversed(registered) if id(hook_globals(hook)) in namespaces]


def exit_hooks_for(run: Run) -> list[ExitHook]:
    """The exit hooks ``run`` calls when its main thread is done (``Run``'s
    ``exit_hooks``): :func:`exit_hooks`, each with its module's globals.

    First drops the threads of earlier executions from those modules' thread registries
    (a dict or WeakKeyDictionary keyed by thread, as ``concurrent.futures.thread``'s
    ``_threads_queues``): they ended with their execution, and a hook would otherwise
    join them (and feed their queues) from this one."""
    hooks = [ExitHook(hook, hook_globals(hook)) for hook in exit_hooks()]
    for hook in hooks:
        if hook.namespace is not None:
            _forget_earlier_threads(hook.namespace, run)
    return hooks


def _forget_earlier_threads(namespace: dict[str, Any], run: Run) -> None:
    for value in list(namespace.values()):
        if not isinstance(value, dict | weakref.WeakKeyDictionary):
            continue
        stale = [
            key
            for key in list(value.keys())
            if isinstance(key, ls_threading.Thread)
            and key._ls_thread is not None
            and key._ls_thread.run is not run
        ]
        for key in stale:
            value.pop(key, None)


def hook_globals(hook: object) -> dict[str, Any] | None:
    """The module globals of the function an exit hook calls: ``_register_atexit``
    stores a ``functools.partial`` of it up to Python 3.12, and from 3.13 a
    ``lambda: func(*arg, **kwargs)`` (the function is its closure's ``func``)."""
    function: object = getattr(hook, "func", None)
    if function is None:
        code = getattr(hook, "__code__", None)
        closure = getattr(hook, "__closure__", None)
        if code is not None and closure and "func" in code.co_freevars:
            function = closure[code.co_freevars.index("func")].cell_contents
        else:
            function = hook
    found: dict[str, Any] | None = getattr(function, "__globals__", None)
    return found


@contextmanager
def patched(*modules: ModuleType | str) -> Iterator[tuple[ModuleType, ...]]:
    """Swap threading/time/queue/heapq/datetime names in ``modules`` for the duration of the block.

    Accepts module objects or dotted names; yields the module objects. Also swaps what
    the functions and classes the modules define bound at import time: default
    argument values, class attributes and real bases (see the module docstring).
    Refuses the standard modules themselves and lockstep's own modules
    (InvalidArgument). Restores everything it swapped on exit, in reverse order, even
    on exceptions.
    """
    resolved = tuple(resolve_module(m) for m in modules)
    for module in resolved:
        name = module.__name__
        if name in _REFUSED or name == "lockstep" or name.startswith("lockstep."):
            raise InvalidArgument(
                f"refusing to patch {name!r}: patch the modules that *use* "
                "threading/time/queue/heapq/datetime"
            )
    swapped: list[tuple[ModuleType, str, object]] = []
    bindings: list[tuple[object, str, Any]] = []  # (function or class, attribute, old value)
    try:
        for module in resolved:
            namespace = vars(module)
            for attr, value in list(namespace.items()):
                if attr.startswith("__"):
                    continue
                replacement = stand_in_for(value)
                if replacement is not None:
                    swapped.append((module, attr, value))
                    namespace[attr] = replacement
            for defined in _defined_in(module):
                if isinstance(defined, FunctionType):
                    _swap_defaults(defined, bindings)
                else:
                    _swap_class_attributes(defined, bindings)
        _ACTIVE.extend(resolved)
        yield resolved
    finally:
        for module in resolved:
            if module in _ACTIVE:
                _ACTIVE.remove(module)
        for owner, attr, old in reversed(bindings):
            setattr(owner, attr, old)
        for module, attr, value in reversed(swapped):
            vars(module)[attr] = value


def _defined_in(module: ModuleType) -> Iterator[FunctionType | type]:
    """Every function and class ``module`` defines: at top level and in the classes it
    defines (nested classes too), static and class methods and property accessors
    included."""
    name = module.__name__
    seen: set[int] = set()
    pending: list[object] = list(vars(module).values())
    while pending:
        obj = pending.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, (staticmethod, classmethod)):
            pending.append(obj.__func__)
        elif isinstance(obj, property):
            pending.extend(f for f in (obj.fget, obj.fset, obj.fdel) if f is not None)
        elif isinstance(obj, FunctionType):
            if obj.__module__ == name:
                yield obj
        elif isinstance(obj, type) and obj.__module__ == name:
            yield obj
            pending.extend(vars(obj).values())


def _swap_class_attributes(cls: type, swapped: list[tuple[object, str, Any]]) -> None:
    """Swap the real threading/time/queue/heapq/datetime objects held as class attributes
    (``_lock_factory = threading.Lock``) and the real classes among its bases (``class
    Worker(threading.Thread)``: its instances would be real OS threads, running outside
    lockstep's control); record the originals in ``swapped``.

    A base whose stand-in has another instance layout cannot be swapped (``__bases__``
    assignment refuses it: ``threading.local``, ``queue.SimpleQueue``); such a subclass stays
    real (``docs/races.md``).
    """
    bases = cls.__bases__
    replaced = tuple(_stand_in_class(base) or base for base in bases)
    if any(new is not old for new, old in zip(replaced, bases, strict=True)):
        try:
            cls.__bases__ = replaced
        except TypeError:
            pass  # another instance layout: the subclass stays real (documented)
        else:
            swapped.append((cls, "__bases__", bases))
    for attr, value in list(vars(cls).items()):
        if attr.startswith("__"):
            continue
        replacement = stand_in_for(value)
        if replacement is None:
            continue
        if isinstance(replacement, FunctionType) and not isinstance(value, FunctionType):
            # A builtin (time.monotonic) does not bind as a method; its Python stand-in
            # would, and self.clock() would pass self.
            replacement = staticmethod(replacement)
        swapped.append((cls, attr, value))
        setattr(cls, attr, replacement)


def _swap_defaults(function: FunctionType, swapped: list[tuple[object, str, Any]]) -> None:
    """Swap the real threading/time/queue/heapq/datetime objects among ``function``'s default
    values (``def __init__(self, lock_factory=threading.Lock, clock=time.monotonic)``:
    evaluated once, when the module was imported, so renaming the module's globals
    does not reach them); record the originals in ``swapped``."""
    positional = function.__defaults__
    if positional:
        replaced = tuple(_stand_in_or_same(value) for value in positional)
        if any(new is not old for new, old in zip(replaced, positional, strict=True)):
            swapped.append((function, "__defaults__", positional))
            function.__defaults__ = replaced
    keywords = function.__kwdefaults__
    if keywords:
        replaced_kw = {key: _stand_in_or_same(value) for key, value in keywords.items()}
        if any(replaced_kw[key] is not value for key, value in keywords.items()):
            swapped.append((function, "__kwdefaults__", keywords))
            function.__kwdefaults__ = replaced_kw


def _stand_in_class(base: type) -> type | None:
    replacement = stand_in_for(base)
    return replacement if isinstance(replacement, type) else None


def _stand_in_or_same(value: object) -> object:
    replacement = stand_in_for(value)
    return value if replacement is None else replacement

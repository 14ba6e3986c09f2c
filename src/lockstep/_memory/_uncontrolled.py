"""Synchronisation that lockstep does not control, in reach of a reported race.

A race report says that nothing lockstep controls orders two accesses. Code that
synchronises through a *real* primitive (a ``threading.Lock`` of a module that was
not patched, a lock created at import time, before patching) is ordered by it all
the same, and lockstep cannot see that: the report would claim a race that is not
there. So before a race is reported, :func:`uncontrolled_near` looks at what the
thread making the second access can reach, and names every real primitive it finds
(``threading.Lock``, ``RLock``, ``Condition``, ``Semaphore``, ``BoundedSemaphore``,
``Event``, ``Barrier``, ``queue.Queue``, ``queue.SimpleQueue``, and subclasses, and
the primitives of ``multiprocessing``):

* in each frame of that thread's stack that belongs to the code under test (not to
  lockstep or the standard library, nor to a module that declares itself test
  harness with ``__lockstep_harness__ = True``, as the ``lockstep check`` driver
  and fake models do; installed packages count as code under test):
  its local variables and closure cells, the globals its code names, and two levels
  of their instance attributes (``self._lock``, ``self._pool._lock``; not of
  lockstep's own objects, such as a ``HistoryRecorder``, nor of a harness module's,
  which use real locks on purpose, nor of the standard library's: a
  ``logging.Handler``'s lock orders nothing of the program's);
* whether a Lock or RLock found is held now (the usual case: the second access runs
  inside ``with lock:``).

A report with such a finding says the race is unproven and which module to patch.
It is still a failure: lockstep can prove neither the race nor its absence. What
this gives up: a real primitive the thread reaches only deeper, inside a container,
or only through the *first* access's thread is not found, and that race is
reported as usual. Nothing here runs code of the program: values are read from
frames and instance dictionaries only.
"""

from __future__ import annotations

import queue as _real_queue
import sys
import threading as _real_threading
from types import FrameType
from typing import Any, Final

from lockstep._memory._where import is_skipped_code, is_skipped_file

__all__ = ["uncontrolled_near"]

_LOCK_TYPES: Final[tuple[type, ...]] = (
    type(_real_threading.Lock()),
    type(_real_threading.RLock()),
    _real_threading._PyRLock,  # type: ignore[attr-defined]
)
_REAL: Final[tuple[type, ...]] = (
    *_LOCK_TYPES,
    _real_threading.Condition,
    _real_threading.Semaphore,
    _real_threading.Event,
    _real_threading.Barrier,
    _real_queue.Queue,
    _real_queue.SimpleQueue,
)
_NAMES: Final[dict[type, str]] = {
    type(_real_threading.Lock()): "threading.Lock",
    type(_real_threading.RLock()): "threading.RLock",
    _real_threading._PyRLock: "threading.RLock",  # type: ignore[attr-defined]
}
_MAX_FRAMES: Final = 64  # a thread's stack is walked this deep at most
_LEVELS: Final = 2  # attributes of attributes of what a frame names (self._pool._lock)
_MAX_VALUES: Final = 2000  # values looked at per frame at most
_MAX_FOUND: Final = 3  # the report names this many at most


def uncontrolled_near(frame: FrameType | None) -> tuple[str, ...]:
    """The real primitives the thread whose innermost frame is ``frame`` can reach (see
    the module docstring), held ones first, each as one phrase: ``a real threading.Lock
    `self._lock` (held), reached from Manager.add at mgr.py:40 (module mgr)``."""
    held: list[str] = []
    other: list[str] = []
    seen: set[int] = set()
    depth = 0
    while frame is not None and depth < _MAX_FRAMES:
        code = frame.f_code
        if not is_skipped_code(code) and not _harness(frame.f_globals):
            for name, value, owner in _reachable(frame):
                if id(value) in seen:
                    continue
                seen.add(id(value))
                found = _describe(value, name, frame, owner)
                if found is not None:
                    (held if found[1] else other).append(found[0])
        frame = frame.f_back
        depth += 1
    return tuple((held + other)[:_MAX_FOUND])


def _reachable(frame: FrameType) -> list[tuple[str, Any, Any]]:
    """(how the code names it, value, the object whose attribute it is or None) for
    what the frame reaches (module docstring)."""
    try:
        local_vars = dict(frame.f_locals)
    except Exception:  # a frame whose locals cannot be read: nothing from it
        local_vars = {}
    level: list[tuple[str, Any, Any]] = [(name, value, None) for name, value in local_vars.items()]
    globals_ = frame.f_globals
    level.extend(
        (name, globals_[name], None)
        for name in frame.f_code.co_names
        if name not in local_vars and name in globals_
    )
    pairs = list(level)
    for _ in range(_LEVELS):
        deeper: list[tuple[str, Any, Any]] = []
        for name, value, _owner in level:
            if len(pairs) + len(deeper) >= _MAX_VALUES:
                break
            attributes = _attributes(value)
            deeper.extend((f"{name}.{attr}", inner, value) for attr, inner in attributes)
        pairs.extend(deeper)
        level = deeper
    return pairs[:_MAX_VALUES]


def _attributes(value: Any) -> list[tuple[str, Any]]:
    """The instance attributes of ``value`` worth looking into: not of a real primitive,
    of lockstep's or a harness module's objects (which use real locks on purpose), or of
    the standard library's (a ``logging.Handler``'s lock is its own business)."""
    if isinstance(value, _REAL) or _is_lockstep_object(value) or _is_stdlib_object(value):
        return []
    try:
        attributes = object.__getattribute__(value, "__dict__")
    except (AttributeError, TypeError):
        return []
    if not isinstance(attributes, dict):
        return []
    return [(attr, inner) for attr, inner in list(attributes.items()) if isinstance(attr, str)]


def _is_stdlib_object(value: Any) -> bool:
    module = getattr(type(value), "__module__", None)
    if not isinstance(module, str) or module == "builtins":
        return True
    found = sys.modules.get(module)
    filename = getattr(found, "__file__", None)
    return not isinstance(filename, str) or is_skipped_file(filename)


def _harness(globals_: dict[str, Any] | None) -> bool:
    """Whether a module declares itself test harness (``__lockstep_harness__ = True``)."""
    return bool(globals_ is not None and globals_.get("__lockstep_harness__"))


def _is_lockstep_object(value: Any) -> bool:
    """An object of lockstep's, or of a module that declares itself test harness."""
    module = getattr(type(value), "__module__", "")
    if not isinstance(module, str):
        return False
    if module == "lockstep" or module.startswith("lockstep."):
        return True
    found = sys.modules.get(module)
    return found is not None and _harness(getattr(found, "__dict__", None))


def _describe(value: Any, name: str, frame: FrameType, owner: Any) -> tuple[str, bool] | None:
    """The phrase naming ``value`` when it is a real primitive, and whether it is held.

    ``owner``: the object whose attribute it is (None for a variable). When that
    object's class comes from another module than the frame's, the phrase names it:
    that module usually created the primitive, and it is the one to patch.
    """
    kind = type(value)
    if not isinstance(value, _REAL):
        if getattr(kind, "__module__", None) != "multiprocessing.synchronize":
            return None
        label = f"multiprocessing.{kind.__qualname__}"  # a process-shared primitive
    else:
        label = _NAMES.get(kind) or f"{kind.__module__}.{kind.__qualname__}"
    held = _held(value)
    code = frame.f_code
    module = frame.f_globals.get("__name__", "?")
    phrase = (
        f"a real {label} `{name}`{' (held)' if held else ''}, reached from "
        f"{getattr(code, 'co_qualname', code.co_name)} at {code.co_filename}:{frame.f_lineno} "
        f"(module {module})"
    )
    owner_class = type(owner) if owner is not None else None
    owner_module = getattr(owner_class, "__module__", None)
    if isinstance(owner_module, str) and owner_module != module:
        qualname = getattr(owner_class, "__qualname__", "?")
        phrase += (
            f"; it is an attribute of a {owner_module}.{qualname}, so module "
            f"{owner_module} likely creates it"
        )
    return phrase, held


def _held(value: object) -> bool:
    """Whether a real Lock or RLock is held now (False for the other primitives)."""
    if not isinstance(value, _LOCK_TYPES):
        return False
    try:
        owned = getattr(value, "_is_owned", None) or getattr(value, "locked", None)
        return owned is not None and bool(owned())
    except Exception:  # an exotic lock: say nothing about it
        return False

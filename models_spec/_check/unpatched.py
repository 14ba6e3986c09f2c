"""Why a cell reached no switch point: the real locks a fresh stack holds, and their modules.

A cell whose executions never reach a controlled primitive inside the code under
test proves nothing ("0 switch points").  The usual cause is a lock lockstep does
not control: the manager's module is not among the adapter's ``patch_modules()``
(a user's adapter in its own file that patches itself, not the manager), or the
lock was created at import time.  `zero_switch_message` says which modules were
patched and, from a stack built with exactly those modules patched, which of its
attributes is a real primitive and which class (so which module) holds it: the
module to add to ``patch_modules()``.

Reporting only: nothing here decides a verdict.  The stack is built once, outside
any run, from the adapter's own `build` (no scenario runs on it), and only instance
dictionaries are read (two levels: ``stack._lock``, ``stack._inner._lock``).
"""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Iterator
from types import ModuleType
from typing import Any, Final

import lockstep
from models_spec.adapter import ManagerAdapter
from models_spec.fakes import ScriptedRegistry

__all__ = ["patched_names", "uncontrolled_cause", "unpatched_primitives", "zero_switch_head"]

_REAL: Final[tuple[type, ...]] = (
    type(threading.Lock()),
    type(threading.RLock()),
    threading.Condition,
    threading.Semaphore,
    threading.Event,
    threading.Barrier,
    queue.Queue,
)
_NAMES: Final = {
    type(threading.Lock()): "threading.Lock",
    type(threading.RLock()): "threading.RLock",
}
_LEVELS: Final = 2
_MAX_FOUND: Final = 3


def patched_names(adapter: ManagerAdapter) -> tuple[str, ...]:
    """The names of the modules the adapter's ``patch_modules()`` returns ("" never)."""
    names: list[str] = []
    for module in adapter.patch_modules():
        name = module.__name__ if isinstance(module, ModuleType) else str(module)
        if name not in names:
            names.append(name)
    return tuple(names)


def unpatched_primitives(adapter: ManagerAdapter) -> tuple[tuple[str, str], ...]:
    """(phrase, module) for each real primitive a fresh stack holds, built with the
    adapter's modules patched: ``("stack._lock, a real threading.Lock that
    mymgr.MyManager holds", "mymgr")``; the module is the holder's class's.  Empty when the
    stack cannot be built here (the search reported that already)."""
    try:
        with lockstep.patched(*adapter.patch_modules()):
            stack = adapter.build(
                ScriptedRegistry(), max_size=4, lock_timeout=5.0, queue_lock_timeout=5.0
            )
    except Exception:  # the validation and the cell itself say why
        return ()
    found: list[tuple[str, str]] = []
    for path, value, owner in _reachable(stack):
        if isinstance(value, _REAL):
            label = _NAMES.get(type(value)) or f"{type(value).__module__}.{type(value).__name__}"
            holder = type(owner)
            module = str(getattr(holder, "__module__", "?"))
            phrase = f"{path}, a real {label} that {module}.{holder.__qualname__} holds"
            found.append((phrase, module))
            if len(found) == _MAX_FOUND:
                break
    return tuple(found)


def _reachable(stack: object) -> Iterator[tuple[str, Any, Any]]:
    """(path, value, the object whose attribute it is), breadth first, `_LEVELS` deep."""
    level: list[tuple[str, Any]] = [("stack", stack)]
    seen = {id(stack)}
    for _ in range(_LEVELS):
        deeper: list[tuple[str, Any]] = []
        for path, owner in level:
            for attr, value in _attributes(owner):
                if id(value) in seen:
                    continue
                seen.add(id(value))
                yield f"{path}.{attr}", value, owner
                deeper.append((f"{path}.{attr}", value))
        level = deeper


def _attributes(value: object) -> list[tuple[str, Any]]:
    """The instance attributes of a program object (not a primitive, not lockstep's, not
    a harness module's: the fake registry's locks are real on purpose)."""
    if isinstance(value, _REAL):
        return []
    module = sys.modules.get(str(getattr(type(value), "__module__", "")))
    if module is None or getattr(module, "__lockstep_harness__", False):
        return []
    if module.__name__ == "lockstep" or module.__name__.startswith("lockstep."):
        return []
    try:
        attributes = object.__getattribute__(value, "__dict__")
    except (AttributeError, TypeError):
        return []
    return [(k, v) for k, v in list(attributes.items()) if isinstance(k, str)]


def _finding(adapter: ManagerAdapter, patched: tuple[str, ...]) -> str:
    """The first real primitive a fresh stack holds and what to do about it ("": none)."""
    found = unpatched_primitives(adapter)
    if not found:
        return ""
    phrase, module = found[0]
    if module not in patched:
        return f"{phrase}, is not controlled by lockstep: add module {module} to patch_modules()"
    return (
        f"{phrase}, is not controlled by lockstep (module {module} is patched: was the lock "
        "created at import time, before patching? create it in __init__)"
    )


def zero_switch_head(adapter: ManagerAdapter) -> str:
    """The start of a "0 switch points" message: what ``patch_modules()`` patches and, when
    a fresh stack holds a real primitive, which attribute, and the module to add."""
    patched = patched_names(adapter)
    shown = ", ".join(patched) if patched else "nothing (it returns no module)"
    finding = _finding(adapter, patched)
    tail = f"; {finding}" if finding else ": is the code under test in one of them?"
    return f"0 switch points: patch_modules() patches {shown}{tail}"


def uncontrolled_cause(adapter: ManagerAdapter) -> str:
    """The first real primitive a fresh stack holds and the fix ("" when none): the cause
    shared by every cell that lockstep could not run because of it."""
    return _finding(adapter, patched_names(adapter))

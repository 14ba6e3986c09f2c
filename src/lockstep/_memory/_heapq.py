"""A stand-in for the ``heapq`` module that reports its writes to a watched list.

``heapq``'s functions are C code that change a list in place without calling its
methods, so a watched list (:mod:`lockstep._memory._containers`) cannot see
``heappush(heap, item)``. In a patched module (``explore(patch=...)``,
:func:`lockstep.patched`) the ``heapq`` name, and every function imported from it, is
swapped for this module's: each function that takes the heap first (``heappush``,
``heappop``, ``heapify``, ``heapreplace``, ``heappushpop``, and the ``*_max`` forms
where the running Python has them) records a write of the whole list, at the caller's
line, and then calls the real function. The write is a switch point, a DPOR dependency
and a race-detector access like any other watched list write. On a list that is not
watched, and outside a run, the stand-ins only call the real function.

``merge``, ``nsmallest`` and ``nlargest`` iterate their arguments through the
container's own methods (seen already) and are the real functions.
"""

from __future__ import annotations

import functools
import heapq as _heapq
from collections.abc import Callable
from typing import Any

from lockstep._memory._state import hook_whole

_WRITERS = tuple(
    name for name in dir(_heapq) if name.startswith("heap") and callable(getattr(_heapq, name))
)


def _stand_in(real: Callable[..., Any], name: str) -> Callable[..., Any]:
    def stand_in(heap: Any, *args: Any) -> Any:
        hook_whole(heap, True, name)
        return real(heap, *args)

    return functools.wraps(real)(stand_in)


for _name in _WRITERS:
    globals()[_name] = _stand_in(getattr(_heapq, _name), _name)
del _name

__all__ = sorted(_WRITERS)  # noqa: PLE0605 - computed from the running Python's heapq


def __getattr__(name: str) -> Any:
    return getattr(_heapq, name)

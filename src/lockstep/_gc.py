"""Fewer garbage collections while an exploration runs its executions.

Every step of an execution allocates a few small container objects (the step's
row, its choice list, the strategy's context), and every execution builds
threads, greenlets and a run that die with it. At CPython's default youngest-
generation threshold (700 allocations) a collection comes about once per
execution, and each one promotes the live execution's objects to the older
generations, which then need collecting too: about 5% of a random search's time
on a small lock scenario (``benchmarks/README.md``, stop 29).

:func:`fewer_collections` raises that threshold for the duration of an
exploration and puts it back afterwards. Collection still happens (the older
generations' thresholds are untouched, and nothing is frozen or disabled), only
less often, so the garbage left between collections stays bounded.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["EXPLORE_THRESHOLD", "fewer_collections"]

#: The youngest generation's threshold during an exploration (measured: 2,000 to
#: 5,000 do best on the lock benchmark; far larger ones lose cache locality).
EXPLORE_THRESHOLD = 5000


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """Raise the youngest generation's collection threshold to at least
    :data:`EXPLORE_THRESHOLD` while the block runs; restore it after.

    Leaves everything alone when automatic collection is off (``gc.disable()`` or a
    threshold of 0). If the code inside changed the thresholds itself, its setting is
    kept: only the value set here is undone.
    """
    before = gc.get_threshold()
    if not gc.isenabled() or before[0] == 0 or before[0] >= EXPLORE_THRESHOLD:
        yield
        return
    raised = (EXPLORE_THRESHOLD, *before[1:])
    gc.set_threshold(*raised)
    try:
        yield
    finally:
        if gc.get_threshold() == raised:
            gc.set_threshold(*before)

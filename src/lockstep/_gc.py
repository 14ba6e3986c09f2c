"""Fewer and cheaper garbage collections while an exploration runs its executions.

Every step of an execution allocates a few small container objects (the step's
row, its choice list, the strategy's context), and every execution builds
threads, greenlets and a run that die with it. At CPython's default youngest-
generation threshold (700 allocations) a collection comes about once per
execution, and each one promotes the live execution's objects to the older
generations, which then need collecting too; and every full collection walks
every object the process had before the exploration began (its modules, the
code under test's long-lived state), none of which the exploration makes
garbage of.

:func:`fewer_collections` raises the youngest generation's threshold for the
duration of an exploration and *freezes* what exists when it starts
(``gc.freeze``: those objects are left out of collections until
``gc.unfreeze`` puts them back, in the oldest generation, when it ends).
Collection itself stays on for everything the exploration creates. Measured in
``benchmarks/README.md`` (stop 29): about 5% of a random search on a small lock
scenario for the threshold, about 10% of ``lockstep check``'s CPU for the
freeze.
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
    """For the duration of the block: raise the youngest generation's collection
    threshold to at least :data:`EXPLORE_THRESHOLD`, and freeze the objects that
    exist now; afterwards restore the threshold and unfreeze them.

    Leaves everything alone when automatic collection is off (``gc.disable()`` or a
    threshold of 0). Freezes only when nothing is frozen yet (so it never unfreezes
    what someone else froze: a nested exploration, a pre-forking server; what the
    code inside freezes is unfrozen with the rest). If the code inside changed the
    thresholds itself, its setting is kept: only the value set here is undone.
    """
    before = gc.get_threshold()
    if not gc.isenabled() or before[0] == 0:
        yield
        return
    raised = (EXPLORE_THRESHOLD, *before[1:]) if before[0] < EXPLORE_THRESHOLD else None
    freeze = gc.get_freeze_count() == 0
    if raised is not None:
        gc.set_threshold(*raised)
    if freeze:
        gc.freeze()
    try:
        yield
    finally:
        if freeze:
            gc.unfreeze()
        if raised is not None and gc.get_threshold() == raised:
            gc.set_threshold(*before)

"""The soak's own bookkeeping is exact when threads really run in parallel.

``benchmarks.soak`` counts every outcome of every worker thread and asserts on the
total (``tests/core_threads/test_soak.py``). A shared ``Counter`` updated with
``+= 1`` loses updates once threads run in parallel (a free-threaded CPython such
as 3.13t: two threads read n, both write n + 1), so the soak counts through
``Tallies``: a counter per thread, added up at the end. Here eight threads count
as fast as they can, all released at once, through ``Tallies``; every count must
be exact, on every schedule.

How this test can fail: with ``Tallies.mine`` returning one shared ``Counter``
the same run loses updates on 3.13t (the free-threaded CI step runs this test;
CONTRIBUTING.md, "Free-threaded Python", has the numbers). On a GIL build it passes
even then: CPython switches threads only at a call or a backward jump, never
between the read and the write of ``counter[key] += 1``, so there the test checks
only that the per-thread counts are all merged.
"""

from __future__ import annotations

import collections
import threading

import pytest

from benchmarks.soak import Tallies

pytestmark = pytest.mark.stress

THREADS = 8
PER_THREAD = 30_000
KEYS = ("acquire: ok", "add: CacheFull", "remove: ok")


def test_tallies_count_every_update_of_every_thread() -> None:
    tallies = Tallies()
    start = threading.Barrier(THREADS)

    def count() -> None:
        mine = tallies.mine()
        start.wait()  # all at once: the counting overlaps
        for index in range(PER_THREAD):
            mine[KEYS[index % len(KEYS)]] += 1

    threads = [threading.Thread(target=count) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    expected = collections.Counter({key: THREADS * PER_THREAD // len(KEYS) for key in KEYS})
    assert tallies.merged() == expected


def test_a_thread_gets_its_own_counter_every_time() -> None:
    """``mine`` is the calling thread's counter: the same one on each call, another one
    in another thread, and every one of them is in ``merged``."""
    tallies = Tallies()
    mine = tallies.mine()
    assert tallies.mine() is mine
    other: list[collections.Counter[str]] = []
    thread = threading.Thread(target=lambda: other.append(tallies.mine()))
    thread.start()
    thread.join()
    assert other[0] is not mine
    mine["a"] += 2
    other[0]["a"] += 3
    other[0]["b"] += 1
    assert tallies.merged() == collections.Counter({"a": 5, "b": 1})

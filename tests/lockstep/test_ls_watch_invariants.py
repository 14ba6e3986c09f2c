"""Watched state while invariants run: read at C speed, recorded nowhere, tracked again after.

While ``Run`` checks invariants, a watched object an invariant reads wears a class
that tracks nothing from that read until the round ends (``MemoryState.quiet_now``):
a tracked dict copied with ``dict(x)`` would otherwise call a Python method per
key. These tests pin what that must not change.
"""

from __future__ import annotations

from collections import OrderedDict, defaultdict, deque
from typing import Any

import lockstep
from lockstep import watch
from lockstep._memory._classes import QUIET


class Book:
    def __init__(self) -> None:
        self.count = 0
        self.items: dict[str, int] = {"a": 1}
        self.order: list[str] = ["a"]
        self.seen: set[str] = {"a"}
        self.queue: deque[str] = deque(["a"])
        self.lru: OrderedDict[str, int] = OrderedDict(a=1)
        self.groups: defaultdict[str, list[int]] = defaultdict(list)


def _explore(body: Any, **options: Any) -> lockstep.ExploreResult:
    return lockstep.explore(
        body,
        strategy=lockstep.RandomStrategy(0),
        budget=20,
        shrink=False,
        progress=False,
        **options,
    )


def test_invariants_read_watched_state_correctly_and_record_nothing() -> None:
    """Copies and reads in an invariant see the current values (of every container kind)
    and add no step: the same steps with and without the invariant."""
    seen: list[tuple[Any, ...]] = []

    def program(check: bool) -> Any:
        def body() -> None:
            book = watch(Book())
            lock = lockstep.threading.Lock()
            if check:

                def invariant() -> None:
                    state = (
                        book.count,
                        dict(book.items),
                        list(book.order),
                        set(book.seen),
                        list(book.queue),
                        list(book.lru.items()),
                        dict(book.groups),
                    )
                    assert state[0] == len(state[2]) - 1, state
                    seen.append(state)

                lockstep.add_invariant(invariant)

            def worker(name: str) -> None:
                with lock:
                    book.count += 1
                    book.items[name] = book.count
                    book.order.append(name)
                    book.seen.add(name)
                    book.queue.append(name)
                    book.lru[name] = book.count
                    book.groups[name].append(book.count)

            threads = [lockstep.spawn(worker, n) for n in ("x", "y")]
            for t in threads:
                t.join()

        return body

    with_checks = _explore(program(True))
    without = _explore(program(False))
    assert with_checks.failure is None, with_checks.failure
    assert with_checks.steps == without.steps
    assert seen, "the invariant ran"
    last = seen[-1]
    assert last[0] == 2
    assert last[1] == {"a": 1, "x": 1, "y": 2} or last[1] == {"a": 1, "y": 1, "x": 2}
    assert last[6]
    assert all(isinstance(v, list) for v in last[6].values())


def test_watched_state_is_tracked_again_after_each_invariant() -> None:
    """A race between two threads after many invariant checks is still reported; a
    watched container is of its tracked class in the threads, of a class that tracks
    nothing once an invariant read it (until the round of invariants ends), and the
    instance has its own class back after the execution."""
    quiet: dict[str, set[bool]] = {"thread": set(), "invariant": set()}
    book = Book()

    def body() -> None:
        watch(book)

        def invariant() -> None:
            items = book.items
            _ = len(items)  # a watched read: from here on `items` tracks nothing
            quiet["invariant"].add(type(items) in QUIET.values())

        lockstep.add_invariant(invariant)

        def unlocked() -> None:
            quiet["thread"].add(type(book.items) in QUIET.values())
            book.count += 1

        threads = [lockstep.spawn(unlocked) for _ in range(2)]
        for t in threads:
            t.join()

    result = _explore(body)
    assert result.failure is not None
    assert result.failure.kind == "data-race", result.failure.message
    assert "Book#1.count" in result.failure.message
    assert type(book) is Book, "the execution's end gives the object its class back"
    assert type(book.items) is dict or type(book.items).__name__ == "dict"
    assert quiet == {"thread": {False}, "invariant": {True}}


def test_an_invariant_that_fails_leaves_the_objects_restored() -> None:
    """The invariant's failure ends the execution; the watched instance gets its own
    class back and its containers keep their contents."""
    book = Book()

    def body() -> None:
        watch(book)

        def invariant() -> None:
            if book.count:
                raise AssertionError("count moved")

        lockstep.add_invariant(invariant)
        lock = lockstep.threading.Lock()

        def bump() -> None:
            with lock:
                book.count += 1
                book.items["z"] = 9

        lockstep.spawn(bump).join()

    result = _explore(body)
    assert result.failure is not None
    assert result.failure.kind == "invariant"
    assert type(book) is Book
    assert book.items == {"a": 1, "z": 9}


def test_an_invariant_that_reads_no_watched_state_switches_nothing() -> None:
    """Objects go quiet at an invariant's first watched read: an invariant that makes
    none (a counter of its own) leaves them as they are, at no cost."""
    seen: set[bool] = set()
    book = Book()

    def body() -> None:
        watch(book)
        lockstep.add_invariant(lambda: seen.add(type(book) is Book))
        threads = [lockstep.spawn(lambda: book.items.get("a")) for _ in range(2)]
        for t in threads:
            t.join()

    assert _explore(body).failure is None
    assert seen == {False}


def test_a_lost_wakeup_probe_outside_invariants_leaves_objects_tracked() -> None:
    """``thread_states()`` evaluates a waiter's predicate as an invariant would (its
    watched reads go quiet); called from a thread, it must switch them back."""
    lost: list[bool] = []
    tracked_after: set[bool] = set()

    def body() -> None:
        book = watch(Book())
        cond = lockstep.threading.Condition()

        def waiter() -> None:
            with cond:
                cond.wait_for(lambda: len(book.items) > 1)

        t = lockstep.spawn(waiter)
        with cond:
            book.items["b"] = 2  # no notify: a lost wake-up while the waiter waits
        states = lockstep.lowlevel.thread_states()
        assert states is not None
        lost.extend(s.lost_wakeup for s in states)
        tracked_after.add(type(book) is not Book)
        with cond:
            cond.notify_all()
        t.join()

    assert _explore(body).failure is None
    assert True in lost  # some execution probed the waiter's predicate
    assert tracked_after == {True}

"""``lockstep.lowlevel.watched_writes()``: a counter of writes to watched state.

An invariant may reuse what it derived from watched state while the counter has
not moved, so every write must move it and no read may: checked here for each
kind of watched object and operation, with races reported and not.
"""

from __future__ import annotations

from collections import OrderedDict, defaultdict, deque
from typing import Any

import pytest

import lockstep
from lockstep.lowlevel import watched_writes


class Holder:
    def __init__(self) -> None:
        self.value = 0
        self.items: dict[str, int] = {"a": 1}
        self.order: OrderedDict[str, int] = OrderedDict(a=1, b=2)
        self.queue: deque[int] = deque([1, 2])
        self.seen: set[str] = {"a"}
        self.groups: defaultdict[str, list[int]] = defaultdict(list)
        self.names: list[str] = ["a"]


READS = [
    ("attribute", lambda h: h.value),
    ("key", lambda h: h.items.get("a")),
    ("membership", lambda h: "a" in h.items),
    ("len", lambda h: len(h.names)),
    ("iteration", lambda h: list(h.order)),
    ("set membership", lambda h: "a" in h.seen),
    ("deque index", lambda h: h.queue[0]),
]

WRITES = [
    ("attribute", lambda h: setattr(h, "value", 1)),
    ("new attribute", lambda h: setattr(h, "extra", 1)),
    ("key", lambda h: h.items.__setitem__("b", 2)),
    ("pop", lambda h: h.items.pop("a")),
    ("move_to_end", lambda h: h.order.move_to_end("a")),
    ("popleft", lambda h: h.queue.popleft()),
    ("set add", lambda h: h.seen.add("b")),
    ("defaultdict missing key", lambda h: h.groups["new"]),
    ("append", lambda h: h.names.append("b")),
    ("clear", lambda h: h.items.clear()),
]


def _measure(operation: Any, races: bool) -> tuple[Any, Any, Any]:
    seen: list[Any] = []

    def scenario() -> None:
        holder = Holder()
        seen.append(watched_writes())  # nothing watched yet
        lockstep.watch(holder)
        before = watched_writes()
        operation(holder)
        seen.extend([before, watched_writes()])

    result = lockstep.explore(scenario, budget=1, races=races, shrink=False)
    assert result.failure is None, result.failure
    return seen[0], seen[1], seen[2]


@pytest.mark.parametrize("races", [True, False], ids=["races", "no-races"])
@pytest.mark.parametrize(("name", "operation"), WRITES, ids=[n for n, _ in WRITES])
def test_every_write_moves_the_counter(name: str, operation: Any, races: bool) -> None:
    unwatched, before, after = _measure(operation, races)
    assert unwatched is None
    assert isinstance(before, int)
    assert after > before, name


@pytest.mark.parametrize("races", [True, False], ids=["races", "no-races"])
@pytest.mark.parametrize(("name", "operation"), READS, ids=[n for n, _ in READS])
def test_no_read_moves_it(name: str, operation: Any, races: bool) -> None:
    _, before, after = _measure(operation, races)
    assert after == before, name


def test_outside_a_run_it_is_none() -> None:
    assert watched_writes() is None

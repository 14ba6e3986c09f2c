"""Every pair of container operations that does not commute is reported as a race.

The race detector is what lets DPOR skip switching at watched accesses (CHESS's
argument): that is sound only if every pair of accesses whose order matters, and
that nothing orders, is reported. "Matters" is checked here against CPython
itself: for each pair of operations on a dict, OrderedDict, set, list and deque,
run them in both orders on fresh copies; where the results or the final contents
(in iteration order) differ, two threads doing them with nothing between them,
then the main thread reading the contents, must give a ``data-race`` in the
first execution. (The converse is not asked: a
pair that commutes for these values may not for others, a set's order depends on
hash collisions, and two identical writes are a race by definition.)
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Callable
from typing import Any

import pytest

import lockstep
from lockstep import DporStrategy, explore, watch

Op = Callable[[Any], object]


def _dict_ops() -> dict[str, Op]:
    return {
        "get(1)": lambda c: c.get(1),
        "1 in": lambda c: 1 in c,
        "[3]=3": lambda c: c.__setitem__(3, 3),
        "[4]=4": lambda c: c.__setitem__(4, 4),
        "[1]=11": lambda c: c.__setitem__(1, 11),
        "[2]=22": lambda c: c.__setitem__(2, 22),
        "pop(1)": lambda c: c.pop(1, None),
        "pop(2)": lambda c: c.pop(2, None),
        "del [1]": lambda c: c.__delitem__(1) if 1 in c else None,
        "setdefault(2)": lambda c: c.setdefault(2, 0),
        "setdefault(5)": lambda c: c.setdefault(5, 0),
        "len": len,
        "list": list,
        "items": lambda c: list(c.items()),
        "popitem": lambda c: c.popitem() if c else None,
        "clear": lambda c: c.clear(),
        "update": lambda c: c.update({6: 6}),
        "copy": lambda c: dict(c.copy()),
    }


def _ordered_dict_ops() -> dict[str, Op]:
    ops = _dict_ops()
    ops.update(
        {
            "move_to_end(1)": lambda c: 1 in c and c.move_to_end(1),
            "move_to_end(2)": lambda c: 2 in c and c.move_to_end(2),
            "move_to_end(1, last=False)": lambda c: 1 in c and c.move_to_end(1, last=False),
            "move_to_end(2, last=False)": lambda c: 2 in c and c.move_to_end(2, last=False),
            "popitem(last=False)": lambda c: c.popitem(last=False) if c else None,
        }
    )
    return ops


def _set_ops() -> dict[str, Op]:
    return {
        "1 in": lambda s: 1 in s,
        "add(1)": lambda s: s.add(1),
        "add(3)": lambda s: s.add(3),
        "add(11)": lambda s: s.add(11),
        "discard(1)": lambda s: s.discard(1),
        "discard(2)": lambda s: s.discard(2),
        "remove(10)": lambda s: s.remove(10) if 10 in s else None,
        "discard(9)": lambda s: s.discard(9),
        "len": len,
        "list": list,
        "pop": lambda s: s.pop() if s else None,
        "clear": lambda s: s.clear(),
        "|=": lambda s: s.__ior__({7}),
        "copy": lambda s: sorted(s.copy()),
    }


def _sequence_ops() -> dict[str, Op]:
    return {
        "append(3)": lambda q: q.append(3),
        "append(4)": lambda q: q.append(4),
        "pop()": lambda q: q.pop() if q else None,
        "[0]": lambda q: q[0] if q else None,
        "len": len,
        "list": list,
        "remove(1)": lambda q: q.remove(1) if 1 in q else None,
        "1 in": lambda q: 1 in q,
        "extend": lambda q: q.extend([5]),
        "clear": lambda q: q.clear(),
    }


def _deque_ops() -> dict[str, Op]:
    ops = _sequence_ops()
    ops.update(
        {
            "appendleft(0)": lambda q: q.appendleft(0),
            "popleft()": lambda q: q.popleft() if q else None,
            "rotate": lambda q: q.rotate(1),
        }
    )
    return ops


CONTAINERS: dict[str, tuple[Callable[[], Any], Callable[[], dict[str, Op]]]] = {
    "dict": (lambda: {1: 1, 2: 2}, _dict_ops),
    "OrderedDict": (lambda: collections.OrderedDict([(1, 1), (2, 2)]), _ordered_dict_ops),
    "defaultdict": (lambda: collections.defaultdict(int, {1: 1, 2: 2}), _dict_ops),
    "set": (lambda: {1, 2, 10}, _set_ops),
    "list": (lambda: [1, 2], _sequence_ops),
    "deque": (lambda: collections.deque([1, 2]), _deque_ops),
}


def _state(container: Any) -> list[Any]:
    return list(container.items()) if isinstance(container, dict) else list(container)


def _commutes(make: Callable[[], Any], first: Op, second: Op) -> bool:
    one, two = make(), make()
    one_first, one_second = first(one), second(one)
    two_second, two_first = second(two), first(two)
    return (
        repr(one_first) == repr(two_first)
        and repr(one_second) == repr(two_second)
        and _state(one) == _state(two)
    )


def _reported(make: Callable[[], Any], first: Op, second: Op) -> lockstep.ExploreResult:
    def scenario() -> None:
        container = watch(make())
        threads = [lockstep.spawn(first, container), lockstep.spawn(second, container)]
        for t in threads:
            t.join()
        _state(container)  # what tells the two orders apart: the contents, in order

    return explore(scenario, strategy=DporStrategy(), budget=20, shrink=False)


@pytest.mark.parametrize("kind", sorted(CONTAINERS))
def test_every_pair_that_does_not_commute_is_a_race(kind: str) -> None:
    make, ops_of = CONTAINERS[kind]
    ops = ops_of()
    pairs = list(itertools.combinations_with_replacement(sorted(ops), 2))
    missed = []
    checked = 0
    for a, b in pairs:
        if _commutes(make, ops[a], ops[b]):
            continue
        checked += 1
        result = _reported(make, ops[a], ops[b])
        failure = result.failure
        if failure is None or failure.kind != "data-race" or result.executions != 1:
            missed.append(f"{a} | {b}: {result.summary()}")
    assert checked >= len(pairs) // 4, (checked, len(pairs))  # the table is not all commuting
    assert not missed, "\n".join(missed)

"""Order races: two unordered changes of one container's key order through different keys.

Each single dict or set operation is atomic in CPython, so two threads inserting
*different* keys never corrupt the container; but the container's iteration
order (what a loop, ``list()``, an LRU eviction or ``popitem`` sees) depends on
which insert ran first. With races reported, keyed writes are not switch points
(CHESS's reduction), so unless such a pair is reported, DPOR never reorders it
and can certify a program whose outcome depends on that order: these tests pin
that the pair is a ``data-race`` (``DataRace.order``), that what commutes is not
(writes of present keys, a dict's deletions, a set's two removals), that
synchronisation orders it like any race, and that a container declared
intentionally racy is explored in both orders instead.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

import pytest

import lockstep
from lockstep import DFSStrategy, DporStrategy, PCTStrategy, RandomStrategy, explore, watch

threading = lockstep.threading

Op = Callable[[Any], object]


def _pair(
    make: Callable[[], Any],
    first: Op,
    second: Op,
    *,
    lock: bool = False,
    check: Callable[[Any], object] | None = list,
    racy: bool = False,
) -> Callable[[], None]:
    """Two threads, one operation each on one watched container; the main thread
    joins both, then runs ``check`` on the container (by default ``list``, which
    reads its order; None: nothing reads it)."""

    class Holder:
        def __init__(self) -> None:
            self.items = make()

    def scenario() -> None:
        holder = watch(Holder(), racy={"items": "the test explores both orders"} if racy else None)
        guard = threading.Lock()

        def run(op: Op) -> None:
            if lock:
                with guard:
                    op(holder.items)
            else:
                op(holder.items)

        threads = [lockstep.spawn(run, first), lockstep.spawn(run, second)]
        for t in threads:
            t.join()
        if check is not None:
            check(holder.items)

    return scenario


def _dpor(scenario: Callable[[], None]) -> lockstep.ExploreResult:
    return explore(scenario, strategy=DporStrategy(), budget=200)


def _order_race(result: lockstep.ExploreResult) -> lockstep.DataRace:
    failure = result.failure
    assert failure is not None, result.summary()
    assert failure.kind == "data-race", failure
    race = failure.race
    assert race is not None
    assert race.order, race
    return race


def _a_then_b(items: Any) -> None:
    assert list(items) == ["a", "b"], list(items)


# -- what is an order race ---------------------------------------------------------------


def _insert(key: Any) -> Op:
    return lambda d: d.__setitem__(key, 1)


ORDER_RACES: dict[str, tuple[Callable[[], Any], Op, Op]] = {
    "dict: two inserts": (dict, _insert("a"), _insert("b")),
    "dict: two setdefaults": (dict, lambda d: d.setdefault("a", 1), lambda d: d.setdefault("b", 2)),
    "defaultdict: two missing-key reads": (
        lambda: collections.defaultdict(int),
        lambda d: d["a"],
        lambda d: d["b"],
    ),
    "OrderedDict: two move_to_end": (
        lambda: collections.OrderedDict(a=1, b=2),
        lambda d: d.move_to_end("a"),
        lambda d: d.move_to_end("b"),
    ),
    "OrderedDict: an insert and a move_to_end": (
        lambda: collections.OrderedDict(a=1),
        lambda d: d.move_to_end("a"),
        _insert("b"),
    ),
    "set: two adds": (set, lambda s: s.add("a"), lambda s: s.add("b")),
    "set: an add and a removal": (lambda: {"a"}, lambda s: s.discard("a"), lambda s: s.add("b")),
    "dict: two object keys": (dict, _insert(("a", 1.5j)), _insert(frozenset({"b"}))),
}


@pytest.mark.parametrize("case", sorted(ORDER_RACES))
def test_two_unordered_order_changes_are_a_race(case: str) -> None:
    make, first, second = ORDER_RACES[case]
    result = _dpor(_pair(make, first, second))
    race = _order_race(result)
    assert race.location.startswith("the key order of Holder#1.items"), race.location
    assert result.failure is not None
    assert result.executions == 1  # found in the first execution, whatever the order
    assert {race.first.thread, race.second.thread} == {1, 2}


@pytest.mark.parametrize("case", sorted(ORDER_RACES))
def test_the_same_changes_under_one_lock_are_not(case: str) -> None:
    make, first, second = ORDER_RACES[case]
    result = _dpor(_pair(make, first, second, lock=True))
    assert result.failure is None, result.failure
    assert result.verdict.complete, result.summary()


COMMUTING: dict[str, tuple[Callable[[], Any], Op, Op]] = {
    "dict: writes of two present keys": (lambda: {"a": 0, "b": 0}, _insert("a"), _insert("b")),
    "dict: a deletion and an insert": (lambda: {"a": 0}, lambda d: d.pop("a"), _insert("b")),
    "dict: two deletions": (lambda: {"a": 0, "b": 0}, lambda d: d.pop("a"), lambda d: d.pop("b")),
    "OrderedDict: a move_to_end and a deletion": (
        lambda: collections.OrderedDict(a=1, b=2),
        lambda d: d.move_to_end("a"),
        lambda d: d.pop("b"),
    ),
    "set: two removals": (lambda: {"a", "b"}, lambda s: s.discard("a"), lambda s: s.remove("b")),
    "set: adds of present elements": (
        lambda: {"a", "b"},
        lambda s: s.add("a"),
        lambda s: s.add("b"),
    ),
}


@pytest.mark.parametrize("case", sorted(COMMUTING))
def test_changes_that_commute_are_not_a_race(case: str) -> None:
    """What leaves the order of the other keys as it is commutes with the other
    thread's change: reporting it would be a false alarm."""
    make, first, second = COMMUTING[case]
    result = _dpor(_pair(make, first, second))
    assert result.failure is None, result.failure
    assert result.verdict.complete, result.summary()


def test_the_report_says_which_keys_and_what_to_do() -> None:
    result = _dpor(_pair(dict, _insert("a"), _insert("b")))
    race = _order_race(result)
    assert result.failure is not None
    message = result.failure.message
    assert "data race on the key order of Holder#1.items" in message
    assert "inserts Holder#1.items['a'] ([]=)" in message
    assert "inserts Holder#1.items['b'] ([]=)" in message
    assert "thread 0:main reads the order (iter)" in message
    assert "depends on which of the two ran first" in message
    text = race.describe()
    assert "then thread 0:main reads Holder#1.items (iter)" in text
    assert "declare the container intentionally racy" in text
    assert "test_ls_order_races.py" in race.first.code
    assert race.observed is not None
    assert race.observed.step in race.marks()


def test_a_move_to_end_race_says_it_moves() -> None:
    make, first, second = ORDER_RACES["OrderedDict: two move_to_end"]
    result = _dpor(_pair(make, first, second))
    _order_race(result)
    assert result.failure is not None
    assert "moves Holder#1.items['a'] (move_to_end)" in result.failure.message


@pytest.mark.parametrize(
    "strategy",
    [lambda: RandomStrategy(seed=0), lambda: PCTStrategy(seed=0), DFSStrategy],
    ids=["random", "pct", "dfs"],
)
def test_every_strategy_reports_it_in_the_first_execution(strategy: Callable[[], Any]) -> None:
    result = explore(_pair(dict, _insert("a"), _insert("b")), strategy=strategy(), budget=50)
    _order_race(result)
    assert result.failure is not None
    assert result.executions == 1


# -- the gap it closes, and declared containers --------------------------------------------


def test_dpor_no_longer_certifies_an_order_it_never_reordered() -> None:
    """The program fails on one of the two orders. Before order races were reported,
    DPOR ran one execution and said "explored every interleaving ... no failure"."""
    result = _dpor(_pair(dict, _insert("a"), _insert("b"), check=_a_then_b))
    assert result.failure is not None
    assert not result.verdict.complete


def test_with_races_off_dpor_reorders_the_inserts_and_finds_the_failing_order() -> None:
    scenario = _pair(dict, _insert("a"), _insert("b"), check=_a_then_b)
    result = explore(scenario, strategy=DporStrategy(), budget=200, races=False)
    assert result.failure is not None
    assert result.failure.kind != "data-race"
    assert "['b', 'a']" in result.failure.message


def test_a_declared_container_is_explored_in_both_orders() -> None:
    """Declared intentionally racy, the inserts are switch points and DPOR
    dependencies: no race is reported, DPOR reaches the order the check rejects."""
    scenario = _pair(dict, _insert("a"), _insert("b"), check=_a_then_b, racy=True)
    result = _dpor(scenario)
    assert result.failure is not None
    assert result.failure.kind != "data-race", result.failure
    assert "['b', 'a']" in result.failure.message


def test_a_declared_container_whose_order_nothing_reads_is_certified() -> None:
    def same_keys(items: Any) -> None:
        assert sorted(items) == ["a", "b"]

    scenario = _pair(dict, _insert("a"), _insert("b"), check=same_keys, racy=True)
    result = _dpor(scenario)
    assert result.failure is None, result.failure
    assert result.verdict.complete
    assert result.executions == 2  # one per order of the two inserts


def test_synchronisation_orders_the_inserts() -> None:
    """An insert handed off through an Event happens before the other: no race."""

    def scenario() -> None:
        items = watch({})
        done = threading.Event()

        def first() -> None:
            items["a"] = 1
            done.set()

        def second() -> None:
            done.wait()
            items["b"] = 2

        threads = [lockstep.spawn(first), lockstep.spawn(second)]
        for t in threads:
            t.join()
        assert list(items) == ["a", "b"]

    result = _dpor(scenario)
    assert result.failure is None, result.failure
    assert result.verdict.complete


def test_an_insert_inside_an_overriding_method_is_ordered_by_its_own_lock() -> None:
    """A subclass whose ``__setitem__`` takes its own lock orders its inserts (the
    check runs when the method returns); without the lock they race."""

    def scenario_for(locked: bool) -> Callable[[], None]:
        class Locked(dict[str, int]):
            def __init__(self) -> None:
                super().__init__()
                self.lock = threading.Lock()

            def __setitem__(self, key: str, value: int) -> None:
                if locked:
                    with self.lock:
                        dict.__setitem__(self, key, value)
                else:
                    dict.__setitem__(self, key, value)

        def scenario() -> None:
            items = watch(Locked())
            threads = [lockstep.spawn(items.__setitem__, k, 1) for k in "ab"]
            for t in threads:
                t.join()
            list(items)

        return scenario

    assert _dpor(scenario_for(True)).failure is None
    _order_race(_dpor(scenario_for(False)))


def test_an_earlier_change_of_another_key_still_races() -> None:
    """The detector keeps each thread's latest order change and its latest of another
    key: the first thread's insert of "a" (then a lock, then a move of "k") still
    races with the second thread's move of "k", which commutes with the first's
    latest change but not with its insert."""

    def scenario() -> None:
        items = watch(collections.OrderedDict(k=0))
        lock = threading.Lock()

        def first() -> None:
            items["a"] = 1
            with lock:
                pass
            items.move_to_end("k")

        def second() -> None:
            items.move_to_end("k")

        threads = [lockstep.spawn(first), lockstep.spawn(second)]
        for t in threads:
            t.join()
        list(items)

    result = _dpor(scenario)
    race = _order_race(result)
    assert {race.first.operation, race.second.operation} == {"[]=", "move_to_end"}, race


def test_moves_of_one_key_race_only_in_opposite_directions() -> None:
    def moves(first_last: bool, second_last: bool) -> Callable[[], None]:
        return _pair(
            lambda: collections.OrderedDict(a=1, b=2, c=3),
            lambda d: d.move_to_end("b", last=first_last),
            lambda d: d.move_to_end("b", last=second_last),
        )

    assert _dpor(moves(True, True)).failure is None
    assert _dpor(moves(False, False)).failure is None
    race = _order_race(_dpor(moves(True, False)))
    assert {race.first.operation, race.second.operation} == {
        "move_to_end",
        "move_to_end(last=False)",
    }


# -- reported when something reads the order ---------------------------------------------


def test_an_order_nothing_reads_is_no_race() -> None:
    """Workers filling a results dict that is only looked up by key: the inserts'
    order is never seen, so every order is equivalent and DPOR certifies it."""

    def lookups(items: Any) -> None:
        assert items["a"] == 1
        assert items["b"] == 1
        assert len(items) == 2  # len does not read the order

    result = _dpor(_pair(dict, _insert("a"), _insert("b"), check=lookups))
    assert result.failure is None, result.failure
    assert result.verdict.complete


def test_clear_forgets_the_order_before_anything_read_it() -> None:
    result = _dpor(_pair(dict, _insert("a"), _insert("b"), check=lambda d: (d.clear(), list(d))))
    assert result.failure is None, result.failure


@pytest.mark.parametrize(
    ("make", "reads_order"),
    [(dict, False), (set, False), (collections.OrderedDict, True)],
    ids=["dict", "set", "OrderedDict"],
)
def test_equality_reads_the_order_only_of_an_ordered_dict(make: Any, reads_order: bool) -> None:
    def add(key: str) -> Op:
        return (lambda s: s.add(key)) if make is set else _insert(key)

    result = _dpor(_pair(make, add("a"), add("b"), check=lambda c: c == make()))
    assert (result.failure is not None) == reads_order, result.summary()


@pytest.mark.parametrize(
    "read",
    [
        list,
        lambda d: next(iter(d)),
        lambda d: d.popitem(),
        repr,
        lambda d: d.copy(),
        lambda d: list(d.items()),
        lambda d: list(reversed(d)),
    ],
    ids=["list", "next-iter", "popitem", "repr", "copy", "items", "reversed"],
)
def test_every_read_of_the_order_reports_it(read: Op) -> None:
    _order_race(_dpor(_pair(dict, _insert("a"), _insert("b"), check=read)))


def test_a_read_of_the_order_that_races_with_an_insert_is_a_plain_race() -> None:
    """A reader that does not wait for the second insert races with it directly."""

    def scenario() -> None:
        items = watch({})
        first = lockstep.spawn(items.__setitem__, "a", 1)
        first.join()
        second = lockstep.spawn(items.__setitem__, "b", 2)
        list(items)
        second.join()

    result = _dpor(scenario)
    assert result.failure is not None
    assert result.failure.kind == "data-race"
    assert result.failure.race is not None
    assert not result.failure.race.order

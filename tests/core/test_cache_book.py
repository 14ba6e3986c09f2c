"""The cache's bookkeeping alone: a Hypothesis state machine against a plain model.

:class:`CacheBook` is lock-free and thread-unaware, so it is tested
sequentially: every transition, legal or not, is applied to the book and to
a deliberately boring model (a dict of per-id records and a list for the LRU
order). A legal transition must change both the same way; an illegal one
must raise :class:`BookError` and change nothing. After every step the
book's state, LRU order, slots, choices and derived counts equal the model's.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import attrs
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from modelmanager.decorators._cache_book import BookError, CacheBook, IdState

IDS = st.sampled_from(["a", "b", "c", "d"])
REQUESTERS = st.one_of(st.none(), IDS)
WEIGHTS = st.integers(min_value=0, max_value=5)


@attrs.define
class _Id:
    """The model of one id: what the book must report for it."""

    state: IdState = IdState.ABSENT
    slots: int = 0
    chosen: bool = False
    requester: str | None = None
    payload: Any = None
    weight: int = 0


class BookModel:
    """The sequential model: plain records, a list for the LRU order, a set of pins."""

    def __init__(self) -> None:
        self.ids: dict[str, _Id] = {}
        self.order: list[str] = []
        self.pins: set[str] = set()

    def of(self, resolved_id: str) -> _Id:
        return self.ids.setdefault(resolved_id, _Id())

    def listed(self, resolved_id: str) -> bool:
        return resolved_id in self.order

    def settle(self, resolved_id: str) -> None:
        """An unlisted id is RESERVED while it holds slots, else ABSENT."""
        record = self.of(resolved_id)
        if not self.listed(resolved_id):
            record.state = IdState.RESERVED if record.slots else IdState.ABSENT


def _snapshot(book: CacheBook) -> tuple[Any, ...]:
    return (
        list(book.lru.items()),
        {rid: repr(mark) for rid, mark in book.marks.items()},
        dict(book.slots),
        set(book.pins),
        dict(book.weights),
        book.committed_weight,
    )


class BookMachine(RuleBasedStateMachine):
    """Drives a CacheBook and BookModel through the same transitions."""

    def __init__(self) -> None:
        super().__init__()
        self.book = CacheBook()
        self.model = BookModel()

    def refused(self, call: Any) -> None:
        """``call`` must raise BookError and leave the book as it was."""
        before = _snapshot(self.book)
        with pytest.raises(BookError):
            call()
        assert _snapshot(self.book) == before

    # ------------------------------------------------------------- rules

    @rule(rid=IDS)
    def reserve(self, rid: str) -> None:
        self.book.reserve(rid)
        self.model.of(rid).slots += 1
        self.model.settle(rid)

    @rule(rid=IDS)
    def release(self, rid: str) -> None:
        record = self.model.of(rid)
        if not record.slots:
            self.refused(lambda: self.book.release(rid))
            return
        self.book.release(rid)
        record.slots -= 1
        self.model.settle(rid)

    @rule(rid=IDS, payload=st.integers(), weight=WEIGHTS)
    def commit(self, rid: str, payload: int, weight: int) -> None:
        record = self.model.of(rid)
        if self.model.listed(rid) or not record.slots:
            self.refused(lambda: self.book.commit(rid, payload, weight))
            return
        self.book.commit(rid, payload, weight)
        record.slots -= 1
        record.state = IdState.COMMITTED
        record.payload = payload
        record.weight = weight
        self.model.order.append(rid)

    @rule(rid=IDS)
    def use(self, rid: str) -> None:
        record = self.model.of(rid)
        expected = self.model.listed(rid) and record.state is not IdState.UNLOADING
        assert self.book.use(rid) is expected
        if expected:
            self.model.order.remove(rid)
            self.model.order.append(rid)
            self._unchoose(record)

    @rule(rid=IDS, requester=REQUESTERS)
    def choose(self, rid: str, requester: str | None) -> None:
        record = self.model.of(rid)
        legal = self.model.listed(rid) and (
            record.state is IdState.COMMITTED
            or (record.state is IdState.REMOVING and not record.chosen)
        )
        if not legal:
            self.refused(lambda: self.book.choose(rid, requester))
            return
        self.book.choose(rid, requester)
        record.chosen, record.requester = True, requester
        if record.state is IdState.COMMITTED:
            record.state = IdState.EVICTING

    @rule(rid=IDS)
    def unchoose(self, rid: str) -> None:
        record = self.model.of(rid)
        if not record.chosen:
            self.refused(lambda: self.book.unchoose(rid))
            return
        self.book.unchoose(rid)
        self._unchoose(record)

    @rule(rid=IDS)
    def start_unload(self, rid: str) -> None:
        record = self.model.of(rid)
        if record.state is not IdState.EVICTING:
            self.refused(lambda: self.book.start_unload(rid))
            return
        assert self.book.start_unload(rid) == record.requester
        record.state, record.chosen, record.requester = IdState.UNLOADING, False, None

    @rule(rid=IDS)
    def fail_unload(self, rid: str) -> None:
        record = self.model.of(rid)
        if record.state is not IdState.UNLOADING:
            self.refused(lambda: self.book.fail_unload(rid))
            return
        self.book.fail_unload(rid)
        record.state = IdState.COMMITTED

    @rule(rid=IDS)
    def start_remove(self, rid: str) -> None:
        record = self.model.of(rid)
        if not self.model.listed(rid):
            before = _snapshot(self.book)
            assert self.book.start_remove(rid) is False
            assert _snapshot(self.book) == before
            return
        if record.state in (IdState.UNLOADING, IdState.REMOVING):
            self.refused(lambda: self.book.start_remove(rid))
            return
        assert self.book.start_remove(rid) is True
        record.state = IdState.REMOVING

    @rule(rid=IDS)
    def fail_remove(self, rid: str) -> None:
        record = self.model.of(rid)
        if record.state is not IdState.REMOVING:
            self.refused(lambda: self.book.fail_remove(rid))
            return
        self.book.fail_remove(rid)
        record.state = IdState.EVICTING if record.chosen else IdState.COMMITTED

    @rule(rid=IDS)
    def forget(self, rid: str) -> None:
        record = self.model.of(rid)
        listed = self.model.listed(rid)
        assert self.book.forget(rid) is listed
        if listed:
            self.model.order.remove(rid)
            record.chosen, record.requester, record.payload, record.weight = False, None, None, 0
            self.model.settle(rid)

    @rule(rid=IDS, payload=st.integers())
    def set_payload(self, rid: str, payload: int) -> None:
        if not self.model.listed(rid):
            self.refused(lambda: self.book.set_payload(rid, payload))
            return
        self.book.set_payload(rid, payload)
        self.model.of(rid).payload = payload

    @rule(rid=IDS, weight=WEIGHTS)
    def set_weight(self, rid: str, weight: int) -> None:
        if not self.model.listed(rid):
            self.refused(lambda: self.book.set_weight(rid, weight))
            return
        self.book.set_weight(rid, weight)
        self.model.of(rid).weight = weight

    @rule(rid=IDS)
    def pin(self, rid: str) -> None:
        self.book.pin(rid)
        self.model.pins.add(rid)

    @rule(rid=IDS)
    def unpin(self, rid: str) -> None:
        assert self.book.unpin(rid) is (rid in self.model.pins)
        self.model.pins.discard(rid)

    # -------------------------------------------------------- invariants

    @invariant()
    def states_agree(self) -> None:
        for rid, record in self.model.ids.items():
            assert self.book.state(rid) is record.state, rid
            assert self.book.slots_of(rid) == record.slots, rid
            assert self.book.chosen(rid) is record.chosen, rid
            assert self.book.requester(rid) == (record.requester if record.chosen else None)
            assert self.book.listed(rid) is self.model.listed(rid)

    @invariant()
    def order_payloads_and_weights_agree(self) -> None:
        model = self.model
        assert self.book.order() == model.order
        assert len(self.book) == len(model.order)
        assert list(self.book.lru.values()) == [model.ids[rid].payload for rid in model.order]
        weights = {rid: model.ids[rid].weight for rid in model.order if model.ids[rid].weight}
        assert self.book.weights == weights
        assert self.book.committed_weight == sum(weights.values())
        assert self.book.pins == model.pins

    @invariant()
    def derived_counts_agree(self) -> None:
        model = self.model
        unlisted = [r for r, rec in model.ids.items() if rec.slots and not model.listed(r)]
        assert self.book.unlisted_slots() == len(unlisted)
        undecided = any(rec.chosen or rec.state is IdState.UNLOADING for rec in model.ids.values())
        assert self.book.evictions_undecided() is undecided
        leaving = {
            r for r, rec in model.ids.items() if rec.state in (IdState.UNLOADING, IdState.REMOVING)
        }
        assert set(self.book.leaving()) == leaving
        # marks exist exactly for listed ids in transition
        assert set(self.book.marks) == {
            r
            for r, rec in model.ids.items()
            if rec.state in (IdState.EVICTING, IdState.UNLOADING, IdState.REMOVING)
        }

    @staticmethod
    def _unchoose(record: _Id) -> None:
        record.chosen, record.requester = False, None
        if record.state is IdState.EVICTING:
            record.state = IdState.COMMITTED


BookMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=30, deadline=None)
TestBookMachine = BookMachine.TestCase


# ------------------------------------------------------ single transitions


def committed(*ids: str) -> CacheBook:
    book = CacheBook()
    for rid in ids:
        book.reserve(rid)
        book.commit(rid, f"payload-{rid}")
    return book


def test_each_transition_of_the_state_machine() -> None:
    """absent -> reserved -> committed -> evicting -> unloading -> committed -> removing -> gone."""
    book = CacheBook()
    assert book.state("a") is IdState.ABSENT
    book.reserve("a")
    assert book.state("a") is IdState.RESERVED
    assert book.unlisted_slots() == 1
    book.commit("a", "record", 3)
    assert book.state("a") is IdState.COMMITTED
    assert (book.unlisted_slots(), book.committed_weight) == (0, 3)
    book.choose("a", "z")
    assert book.state("a") is IdState.EVICTING
    assert (book.requester("a"), book.evictions_undecided()) == ("z", True)
    assert book.evictions_undecided_except("y") is True
    assert book.evictions_undecided_except("z") is False  # only z's own
    assert book.start_unload("a") == "z"
    assert book.state("a") is IdState.UNLOADING
    assert (book.chosen("a"), book.evictions_undecided()) == (False, True)
    assert book.evictions_undecided_except("z") is False  # still z's while it unloads
    assert book.evictions_undecided_except("y") is True
    assert list(book.leaving()) == ["a"]
    book.fail_unload("a")
    assert book.state("a") is IdState.COMMITTED
    assert book.evictions_undecided() is False
    assert book.start_remove("a") is True
    assert book.state("a") is IdState.REMOVING
    book.fail_remove("a")
    assert book.state("a") is IdState.COMMITTED
    assert book.start_remove("a") is True
    assert book.forget("a") is True
    assert book.state("a") is IdState.ABSENT
    assert (book.order(), book.marks, book.committed_weight) == ([], {}, 0)


def test_use_moves_to_the_end_and_rescues() -> None:
    """A use moves a listed id to the most-recent end and drops an eviction's choice."""
    book = committed("a", "b", "c")
    book.choose("a", None)
    assert book.use("a") is True
    assert book.order() == ["b", "c", "a"]
    assert book.state("a") is IdState.COMMITTED
    assert book.use("zz") is False
    book.choose("b", "q")
    book.start_unload("b")
    assert book.use("b") is False  # a committed victim is not used
    assert book.order() == ["b", "c", "a"]


def test_a_removal_keeps_an_evictions_choice() -> None:
    """REMOVING keeps the choice; a failed removal returns to EVICTING, position kept."""
    book = committed("a", "b")
    book.choose("a", "x")
    book.start_remove("a")
    assert (book.state("a"), book.chosen("a")) == (IdState.REMOVING, True)
    book.fail_remove("a")
    assert book.state("a") is IdState.EVICTING
    assert book.order() == ["a", "b"]
    book.start_remove("b")
    book.choose("b", "y")  # an eviction may choose a model whose removal still runs
    assert book.requester("b") == "y"
    book.unchoose("b")
    assert (book.state("b"), book.chosen("b")) == (IdState.REMOVING, False)


def test_slots_outlive_a_commit_and_a_forget() -> None:
    """Adds of one id share slots: a listed id may hold some; forgetting it makes it RESERVED."""
    book = CacheBook()
    book.reserve("a")
    book.reserve("a")
    book.commit("a")
    assert (book.state("a"), book.slots_of("a"), book.unlisted_slots()) == (
        IdState.COMMITTED,
        1,
        0,
    )
    book.forget("a")
    assert (book.state("a"), book.unlisted_slots()) == (IdState.RESERVED, 1)
    book.release("a")
    assert book.state("a") is IdState.ABSENT
    assert book.slots == {}


def test_adopt_lists_in_order_once() -> None:
    """adopt() lists ids least recent first; only on an empty book, distinct ids."""
    book = CacheBook()
    book.adopt(["b", "a"], [1, 2])
    assert list(book.lru.items()) == [("b", 1), ("a", 2)]
    with pytest.raises(BookError):
        book.adopt(["c"])
    with pytest.raises(BookError):
        CacheBook().adopt(["c", "c"])


def test_weights_follow_commit_set_and_forget() -> None:
    """committed_weight is the sum of the listed ids' weights."""
    book = CacheBook()
    book.reserve("a")
    book.commit("a", None, 5)
    book.reserve("b")
    book.commit("b", None, 2)
    book.set_weight("a", 1)
    assert (book.weights, book.committed_weight) == ({"a": 1, "b": 2}, 3)
    book.forget("b")
    assert (book.weights, book.committed_weight) == ({"a": 1}, 1)
    book.set_weight("a", 0)
    assert (book.weights, book.committed_weight) == ({}, 0)


def test_book_is_lock_free_and_thread_unaware() -> None:
    """The bookkeeping module imports no threading or time (cachetools' split)."""
    import pathlib

    from modelmanager.decorators import _cache_book

    source = pathlib.Path(_cache_book.__file__).read_text()
    assert "import threading" not in source
    assert "import time" not in source
    assert not hasattr(_cache_book, "threading")
    assert isinstance(CacheBook().lru, OrderedDict)


def test_repr_shows_the_book() -> None:
    """repr lists order, marks, slots, pins and weight."""
    book = committed("a")
    book.choose("a", "b")
    book.reserve("c")
    book.pin("a")
    text = repr(book)
    assert "lru=['a']" in text
    assert "chosen by 'b'" in text
    assert "slots={'c': 1}" in text
    assert "pins=['a']" in text


class _Record:
    """A shared record as the warm path sees it (``modelmanager.link.WarmRecord``)."""

    def __init__(self, unloading: bool = False) -> None:
        self.unloading, self.hits = unloading, 0


def test_warm_use_is_a_use_that_the_inner_layer_answers_or_nothing() -> None:
    book = CacheBook()
    a, b, c = _Record(), _Record(), _Record(unloading=True)
    book.adopt(["a", "b", "c"], [a, b, c])
    assert book.warm_use("a", False, None)  # shared mode: a live record counts the hit
    assert (book.order(), a.hits) == (["b", "c", "a"], 1)
    assert not book.warm_use("c", False, None)  # the record is being torn down
    assert not book.warm_use("x", False, None)  # not listed
    book.choose("b", "x")
    assert book.warm_use("b", True, None)  # a chosen victim is rescued, and pinned
    assert (book.state("b"), book.order()[-1], "b" in book.pins) == (
        IdState.COMMITTED,
        "b",
        True,
    )
    book.choose("a", "x")
    book.start_unload("a")
    assert not book.warm_use("a", False, None)  # a committed victim: never a warm hit
    assert (book.state("a"), a.hits) == (IdState.UNLOADING, 1)
    asked: list[str] = []

    def inner_hit(resolved_id: str) -> bool:
        asked.append(resolved_id)
        return resolved_id != "c"

    assert not book.warm_use("c", False, inner_hit)  # the inner layer says no: unchanged
    assert book.order() == ["c", "a", "b"]
    assert book.warm_use("b", False, inner_hit)
    assert asked == ["c", "b"]
    assert "c" not in book.pins


def test_listed_among_and_order_and_leaving() -> None:
    book = CacheBook()
    book.adopt(["a", "b", "c"])
    assert book.listed_among(["c", "x", "a"]) == ["c", "a"]
    book.choose("a", None)
    book.start_remove("b")
    assert book.order_and_leaving() == (["a", "b", "c"], frozenset({"b"}))


class _Lock:
    """A lock that records its calls; ``free`` False: every try fails (a timeout)."""

    def __init__(self, free: bool = True) -> None:
        self.free, self.held, self.calls = free, False, list[tuple[object, ...]]()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        self.calls.append(("acquire", blocking, timeout))
        self.held = self.free
        return self.free

    def release(self) -> None:
        self.calls.append(("release",))
        self.held = False


class _TimedOut(Exception):
    pass


def _warm_add(
    book: CacheBook, lock: _Lock, inner_hit: Any = None
) -> tuple[Any, list[tuple[object, ...]]]:
    """``book.warm_add`` over ``lock``, and the cold adds it makes (with the lock's state)."""
    cold: list[tuple[object, ...]] = []

    def cold_add(*args: object) -> None:
        cold.append((*args, lock.held))

    def timed_out() -> None:
        raise _TimedOut

    return book.warm_add(lock, 2.5, timed_out, inner_hit, cold_add), cold


def test_warm_add_is_warm_use_in_one_call_under_the_lock() -> None:
    book = CacheBook()
    a, b, c = _Record(), _Record(), _Record(unloading=True)
    book.adopt(["a", "b", "c"], [a, b, c])
    lock = _Lock()
    add_model, cold = _warm_add(book, lock)
    add_model("a")  # the common case: a live shared record
    assert (book.order(), a.hits, cold) == (["b", "c", "a"], 1, [])
    assert lock.calls == [("acquire", False, -1), ("release",)]
    add_model("x", pin=True, extra=1)  # the alias resolves; a miss is a cold add
    add_model("c")  # a record being torn down: cold, unchanged
    add_model("q", None, "b", pin=True)  # the alias is what is used, and pinned
    assert cold == [
        ("x", None, None, True, {"extra": 1}, False),  # the lock released first
        ("c", None, None, False, {}, False),
    ]
    assert (book.order(), b.hits, book.pins) == (["c", "a", "b"], 1, {"b"})
    book.choose("a", "x")  # an id in transition: warm_use's general steps
    add_model("a", "key")
    assert (book.state("a"), book.order()[-1], a.hits) == (IdState.COMMITTED, "a", 2)
    book.choose("b", "x")
    book.start_unload("b")
    add_model("b")  # a committed victim: never a warm hit
    assert cold[-1] == ("b", None, None, False, {}, False)
    assert (book.state("b"), b.hits) == (IdState.UNLOADING, 1)
    assert lock.calls.count(("release",)) == lock.calls.count(("acquire", False, -1)) == 6


def test_warm_add_asks_the_inner_layer_when_records_are_not_shared() -> None:
    book = CacheBook()
    book.adopt(["a", "b"], [_Record(unloading=True)] * 2)  # as the cache's placeholders
    asked: list[str] = []

    def inner_hit(resolved_id: str) -> bool:
        asked.append(resolved_id)
        return resolved_id == "a"

    add_model, cold = _warm_add(book, _Lock(), inner_hit)
    add_model("a")
    add_model("b")
    assert (asked, book.order(), [call[0] for call in cold]) == (["a", "b"], ["b", "a"], ["b"])


def test_warm_add_leaves_unusual_arguments_and_timeouts_to_their_owners() -> None:
    book = CacheBook()
    record = _Record()
    book.adopt(["a"], [record])
    lock = _Lock()
    add_model, cold = _warm_add(book, lock)

    class Name(str):
        pass

    for args, kwargs in [
        ((5,), {}),
        ((Name("a"),), {}),
        (("a", 7), {}),
        (("", "k", "a"), {}),  # an alias never excuses an empty id
        (("a", None, ""), {}),
        (("a", None, 3), {}),
        (("a",), {"pin": 1}),
    ]:
        add_model(*args, **kwargs)
    assert (len(cold), lock.calls, record.hits) == (7, [], 0)
    busy = _Lock(free=False)
    add_model, cold = _warm_add(book, busy)
    with pytest.raises(_TimedOut):
        add_model("a")
    assert (busy.calls, cold, record.hits) == (
        [("acquire", False, -1), ("acquire", True, 2.5)],
        [],
        0,
    )


def test_warm_add_uses_the_containers_in_place_at_each_call() -> None:
    """A container swapped after warm_add was made (lockstep's watched copies) is the one used."""
    book = CacheBook()
    a, b = _Record(), _Record()
    book.adopt(["a", "b"], [a, b])
    add_model, cold = _warm_add(book, _Lock())
    book.lru, book.pins = OrderedDict(book.lru), set()
    add_model("a", pin=True)
    assert (list(book.lru), book.pins, cold) == (["b", "a"], {"a"}, [])
    book.marks = dict(book.marks)
    book.choose("b", "x")
    add_model("b")  # the new marks say "in transition": the general steps rescue it
    assert (book.state("b"), list(book.lru)) == (IdState.COMMITTED, ["a", "b"])


def test_warm_add_calls_a_subclass_warm_use_every_time() -> None:
    """The common case written out in warm_add stands in for CacheBook.warm_use only."""

    class Seeing(CacheBook):
        seen: list[str]

        def warm_use(self, resolved_id: str, pin: bool, inner_hit: Any) -> bool:
            self.seen.append(resolved_id)
            return super().warm_use(resolved_id, pin, inner_hit)

    book = Seeing()
    book.seen = []
    book.adopt(["a", "b"], [_Record(), _Record()])
    add_model, cold = _warm_add(book, _Lock())
    add_model("a")
    add_model("b", pin=True)
    assert (book.seen, book.order(), book.pins, cold) == (["a", "b"], ["a", "b"], {"b"}, [])

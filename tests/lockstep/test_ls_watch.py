"""lockstep.watch: tracked instances and containers, what each access records, bad input.

Each access test runs the operations inside an execution with a second thread
alive (so every access is a switch point) and a checkpoint between operations
(so no access is covered by the previous one), then reads the recorded steps.
"""

from __future__ import annotations

import abc
import copy
import dataclasses
import functools
import pickle
import threading
from collections import Counter, OrderedDict, defaultdict, deque
from collections.abc import Callable
from typing import Any, ClassVar

import attrs
import pytest

import lockstep
from lockstep import InvalidArgument, watch
from lockstep._memory._locations import WHOLE, Access
from lockstep.errors import InvalidArgumentType
from lockstep.strategies._replay import PrefixStrategy

Op = tuple[str, object, str]  # (mode, slot, op)


def _run(body: Callable[[], Any], *, races: bool = False) -> tuple[Any, list[Any]]:
    """Run ``body`` once (non-preemptive) with a partner thread alive; return its value
    and the executed steps."""
    box: dict[str, Any] = {}
    steps: list[Any] = []

    class Recorder(PrefixStrategy):
        def end_execution(self, outcome: Any) -> bool:
            steps.extend(outcome.steps)
            return False

    def scenario() -> None:
        done = lockstep.threading.Event()
        partner = lockstep.spawn(done.wait)
        try:
            box["value"] = body()
        finally:
            done.set()
            partner.join()

    result = lockstep.explore(scenario, strategy=Recorder(()), budget=1, shrink=False, races=races)
    assert result.failure is None, result.failure
    return box.get("value"), steps


def _accesses(steps: list[Any]) -> list[Op]:
    found = []
    for step in steps:
        resource = step.op.resource
        if isinstance(resource, Access):
            slot = "*" if resource.slot is WHOLE else resource.slot
            found.append((step.op.kind, slot, resource.op))
    return found


def _each(*operations: Callable[[], object]) -> Callable[[], None]:
    def body() -> None:
        for operation in operations:
            operation()
            lockstep.checkpoint("between")

    return body


def _recorded(make: Callable[[], Any], *operations: Callable[[Any], object]) -> list[Op]:
    def body() -> None:
        target = watch(make())
        for operation in operations:
            operation(target)
            lockstep.checkpoint("between")

    _, steps = _run(body)
    return _accesses(steps)


# --- outside a run ----------------------------------------------------------------------


def test_outside_a_run_watch_returns_the_object_unchanged() -> None:
    """No execution: the same object, same class, no tracking."""

    class Box:
        def __init__(self) -> None:
            self.items: dict[str, int] = {}

    box = Box()
    items = box.items
    assert watch(box) is box
    assert type(box) is Box
    assert box.items is items
    data = {"a": 1}
    assert watch(data) is data
    assert type(data) is dict


# --- containers: what each operation records -----------------------------------------------


def test_dict_operations() -> None:
    """Key reads, key writes, whole reads and whole writes of a dict."""
    ops = _recorded(
        lambda: {"k": 1, "j": 2},
        lambda d: "k" in d,
        lambda d: d.get("k"),
        lambda d: d["k"],
        lambda d: d.__setitem__("n", 3),
        lambda d: d.setdefault("m", 4),
        lambda d: d.pop("m"),
        lambda d: d.__delitem__("n"),
        len,
        list,
        lambda d: list(d.keys()),
        lambda d: list(d.items()),
        lambda d: list(d.values()),
        lambda d: d.copy(),
        lambda d: d == {},
        repr,
        lambda d: d | {"z": 0},
        lambda d: d.update({"u": 1}),
        lambda d: d.__ior__({"v": 1}),
        lambda d: d.popitem(),
        lambda d: d.clear(),
    )
    assert ops == [
        ("read", "k", "in"),
        ("read", "k", "get"),
        ("read", "k", "[]"),
        ("write", "n", "[]="),
        ("write", "m", "setdefault"),
        ("write", "m", "pop"),
        ("write", "n", "del"),
        ("read", "*", "len"),
        ("read", "*", "iter"),
        # list(view) asks the view's length first; the iteration is covered by it
        ("read", "*", "len"),
        ("read", "*", "len"),
        ("read", "*", "len"),
        ("read", "*", "copy"),
        ("read", "*", "=="),
        ("read", "*", "repr"),
        ("read", "*", "|"),
        ("write", "*", "update"),
        ("write", "*", "|="),
        ("write", "*", "popitem"),
        ("write", "*", "clear"),
    ]


def test_ordered_dict_and_defaultdict() -> None:
    """move_to_end reorders; a defaultdict lookup of a missing key writes it."""
    ops = _recorded(
        lambda: OrderedDict(a=1, b=2),
        lambda d: d.move_to_end("a"),
        lambda d: d.popitem(last=False),
        lambda d: list(reversed(d)),
    )
    assert ops == [
        ("write", "a", "move_to_end"),
        ("write", "*", "popitem"),
        ("read", "*", "reversed"),
    ]
    ops = _recorded(lambda: defaultdict(list, a=[1]), lambda d: d["a"], lambda d: d["new"])
    assert ops == [("read", "a", "[]"), ("write", "new", "[]")]


def test_set_operations() -> None:
    """Membership and single-element updates are per element; the rest whole."""
    ops = _recorded(
        lambda: {1, 2},
        lambda s: 1 in s,
        lambda s: s.add(3),
        lambda s: s.discard(3),
        lambda s: s.remove(2),
        len,
        lambda s: s <= {1},
        lambda s: s | {5},
        lambda s: s.union({6}),
        lambda s: s.update({7}),
        lambda s: s.__isub__({7}),
        lambda s: s.pop(),
        lambda s: s.clear(),
    )
    assert ops == [
        ("read", 1, "in"),
        ("write", 3, "add"),
        ("write", 3, "discard"),
        ("write", 2, "remove"),
        ("read", "*", "len"),
        ("read", "*", "<="),
        ("read", "*", "|"),
        ("read", "*", "union"),
        ("write", "*", "update"),
        ("write", "*", "-="),
        ("write", "*", "pop"),
        ("write", "*", "clear"),
    ]


def test_list_and_deque_operations() -> None:
    """Every list/deque operation is on the whole container; mutators write."""
    ops = _recorded(
        lambda: [3, 1, 2],
        lambda s: s.append(4),
        lambda s: s[0],
        lambda s: s.__setitem__(0, 9),
        lambda s: s.sort(),
        lambda s: s.__iadd__([5]),
        lambda s: s.pop(),
        lambda s: 1 in s,
        lambda s: s.index(1),
        len,
    )
    assert [(mode, op) for mode, _, op in ops] == [
        ("write", "append"),
        ("read", "[]"),
        ("write", "[]="),
        ("write", "sort"),
        ("write", "+="),
        ("write", "pop"),
        ("read", "in"),
        ("read", "index"),
        ("read", "len"),
    ]
    assert {slot for _, slot, _ in ops} == {"*"}
    ops = _recorded(
        lambda: deque([1, 2]),
        lambda q: q.appendleft(0),
        lambda q: q.popleft(),
        lambda q: q.rotate(1),
        lambda q: q.extendleft([7]),
        lambda q: q[0],
        list,
    )
    assert ops == [
        ("write", "*", "appendleft"),
        ("write", "*", "popleft"),
        ("write", "*", "rotate"),
        ("write", "*", "extendleft"),
        ("read", "*", "[]"),
        ("read", "*", "iter"),
    ]


def test_a_binary_operation_reads_both_watched_operands() -> None:
    """`a == b` with both watched reads both (C compares their storage directly)."""

    def body() -> None:
        a, b = watch({"x": 1}), watch({"x": 1})
        assert a == b

    _, steps = _run(body)
    targets = [s.op.resource.name for s in steps if isinstance(s.op.resource, Access)]
    assert targets == ["dict#1", "dict#2"]


def test_a_plain_list_plus_a_watched_list_reads_the_watched_one() -> None:
    """`[0] + watched` copies the watched list's items in C: the read is recorded, and
    the result (and `tuple + watched`'s TypeError) are what a plain list gives."""

    def concatenate(target: Any) -> object:
        assert [0] + target == [0, 1]  # noqa: RUF005 (the reflected operation is tested)
        return None

    def concatenate_tuple(target: Any) -> object:
        with pytest.raises(TypeError):
            (0,) + target  # noqa: RUF005 (the reflected operation is what is tested)
        return None

    recorded = _recorded(lambda: [1], concatenate, concatenate_tuple)
    assert recorded == [("read", "*", "+"), ("read", "*", "+")]


def test_iteration_reads_again_after_each_switch_point() -> None:
    """Iterating with a switch point in the loop body reads the container again."""

    def body() -> None:
        d = watch({"a": 1, "b": 2, "c": 3})
        for _ in d:
            lockstep.checkpoint("in the loop")

    _, steps = _run(body)
    assert [op for _, _, op in _accesses(steps)] == ["iter", "next", "next", "next"]


def test_covered_accesses_of_one_operation_are_one_switch_point() -> None:
    """`dict(d)` reads every key after iterating: one operation, one step. `d[k]` right
    after `k in d` is a second operation (another thread may delete `k` between them):
    a step of its own."""

    def body() -> None:
        d = watch({"k": 1, "j": 2})
        if "k" in d:
            d["k"]
        lockstep.checkpoint("between")
        dict(d)

    _, steps = _run(body)
    accesses = _accesses(steps)
    assert accesses[:2] == [("read", "k", "in"), ("read", "k", "[]")]
    assert accesses[2:] in ([("read", "*", "keys")], [("read", "*", "iter")])


def test_a_check_then_act_of_two_reads_is_interleaved_with_races_off() -> None:
    """`if k in d: d[k]` against `del d[k]`: with races off DPOR must run the delete
    between the two reads (a KeyError), not certify the program."""

    def scenario() -> None:
        d = watch({"k": 1})

        def reader() -> None:
            if "k" in d:
                d["k"]

        threads = [lockstep.spawn(reader), lockstep.spawn(d.pop, "k")]
        for t in threads:
            t.join()

    result = lockstep.explore(scenario, strategy=lockstep.DporStrategy(), budget=50, races=False)
    assert result.failure is not None, result.verdict
    assert isinstance(result.failure.exception, KeyError)


def test_a_torn_write_to_a_declared_location_is_explored() -> None:
    """Two appends under a lock, read lock-free through a declared racy location: the
    reader can run between the appends, and DPOR must show it (the declaration says
    the read is benign; the assertion says it is not)."""

    class Log:
        __benign_races__: ClassVar[dict[str, str]] = {"entries": "lock-free snapshot"}

        def __init__(self) -> None:
            self.entries: list[int] = []
            self.lock = lockstep.threading.Lock()

    def scenario() -> None:
        log = watch(Log())

        def writer() -> None:
            with log.lock:
                log.entries.append(1)
                log.entries.append(2)

        def reader() -> None:
            assert len(list(log.entries)) % 2 == 0

        threads = [lockstep.spawn(writer), lockstep.spawn(reader)]
        for t in threads:
            t.join()

    result = lockstep.explore(scenario, strategy=lockstep.DporStrategy(), budget=50)
    assert result.failure is not None, result.verdict
    assert result.failure.kind == "exception"


# --- containers: identity, types and contents --------------------------------------------


def test_tracked_containers_keep_types_and_contents() -> None:
    """Subclasses of the same types, equal contents, order, factory and maxlen kept."""

    def body() -> dict[str, Any]:
        ordered = OrderedDict(a=1, b=2)
        ordered.move_to_end("a")
        return {
            "dict": watch({"a": 1}),
            "ordered": watch(ordered),
            "default": watch(defaultdict(int, a=1)),
            "list": watch([1, 2]),
            "set": watch({1, 2}),
            "deque": watch(deque([1, 2], maxlen=3)),
            "counter": watch(Counter("aab")),
        }

    value, _ = _run(body)
    assert isinstance(value["dict"], dict)
    assert value["dict"] == {"a": 1}
    assert type(value["dict"]) is not dict
    assert isinstance(value["ordered"], OrderedDict)
    assert list(value["ordered"]) == ["b", "a"]
    assert isinstance(value["default"], defaultdict)
    assert value["default"].default_factory is int
    assert isinstance(value["list"], list)
    assert value["list"] == [1, 2]
    assert isinstance(value["set"], set)
    assert value["set"] == {1, 2}
    assert isinstance(value["deque"], deque)
    assert value["deque"].maxlen == 3
    assert isinstance(value["counter"], Counter)
    assert value["counter"]["a"] == 2
    # As a plain OrderedDict prints on this Python (3.12 changed the format).
    assert repr(value["ordered"]) == repr(OrderedDict([("b", 2), ("a", 1)]))


def test_a_python_subclass_is_tracked_in_place() -> None:
    """A Counter (a Python subclass of dict) keeps its identity."""

    def body() -> tuple[bool, list[Op]]:
        counts = Counter("ab")
        return watch(counts) is counts, []

    (same, _), _steps = _run(body)
    assert same


def test_copies_and_pickles_of_tracked_containers_are_plain() -> None:
    """copy.copy, deepcopy and pickle give the original classes."""

    def body() -> list[type]:
        d = watch({"a": [1]})
        s = watch({1})
        q = watch(deque([1], maxlen=2))
        return [
            type(copy.copy(d)),
            type(copy.deepcopy(d)),
            type(pickle.loads(pickle.dumps(d))),
            type(pickle.loads(pickle.dumps(s))),
            type(pickle.loads(pickle.dumps(q))),
        ]

    value, _ = _run(body)
    assert value == [dict, dict, dict, set, deque]


# --- instances -------------------------------------------------------------------------------


class Account:
    fee = 0  # a class-level default

    def __init__(self) -> None:
        self.balance = 0
        self.history: list[int] = []
        self.index: dict[str, int] = {}

    def deposit(self, amount: int) -> None:
        self.balance += amount

    @property
    def doubled(self) -> int:
        return self.balance * 2

    @doubled.setter
    def doubled(self, value: int) -> None:
        self.balance = value // 2

    @functools.cached_property
    def summary(self) -> str:
        return "summary"


def test_instance_attribute_accesses() -> None:
    """Attribute reads/writes, class defaults and missing names are tracked; methods and
    properties are not (their bodies' accesses are); cached_property computes once."""
    ops = _recorded(
        Account,
        lambda a: a.balance,
        lambda a: a.deposit(5),
        lambda a: a.doubled,
        lambda a: setattr(a, "doubled", 8),
        lambda a: a.fee,
        lambda a: getattr(a, "missing", None),
        lambda a: a.summary,
        lambda a: a.summary,
        lambda a: delattr(a, "fee") if "fee" in vars(a) else None,
        lambda a: setattr(a, "extra", 1),
        lambda a: delattr(a, "extra"),
    )
    assert ops == [
        ("read", "balance", "read"),
        ("read", "balance", "read"),
        ("write", "balance", "write"),
        ("read", "balance", "read"),
        ("write", "balance", "write"),
        ("read", "fee", "read"),
        ("read", "missing", "read"),
        ("write", "summary", "compute"),
        ("read", "summary", "read"),
        ("write", "extra", "write"),
        ("write", "extra", "del"),
    ]


class _Hybrid(abc.ABC):  # noqa: B024 - what is tested is its ABC registry, not methods
    """An ABC with a __slots__ member next to its __dict__ and a class-level default."""

    __slots__ = ("__dict__", "slot")
    limit = 3

    def __init__(self) -> None:
        self.slot = 1
        self.value = 2

    def label(self) -> str:
        return "method"


def test_attributes_created_later_slots_shadowed_methods_and_abcs() -> None:
    """Reads are tracked for every attribute a watched instance stores, including one
    first assigned during the execution, a __slots__ member and an instance attribute
    shadowing a method; methods and the class's own attributes are left alone."""

    def shadow(h: _Hybrid) -> None:
        h.label = "shadowed"  # type: ignore[method-assign, assignment]

    ops = _recorded(
        _Hybrid,
        lambda h: h.slot,
        lambda h: setattr(h, "slot", 5),
        lambda h: h.label(),
        lambda h: setattr(h, "later", 7),
        lambda h: h.later,
        lambda h: h.limit,
        shadow,
        lambda h: h.label,
        lambda h: h.value,
    )
    assert ops == [
        ("read", "slot", "read"),
        ("write", "slot", "write"),
        ("write", "later", "write"),
        ("read", "later", "read"),
        ("read", "limit", "read"),
        ("write", "label", "write"),
        ("read", "label", "read"),
        ("read", "value", "read"),
    ]

    def body() -> tuple[object, ...]:
        first, second = watch(_Hybrid()), watch(_Hybrid())
        first.label = "shadowed"  # type: ignore[method-assign, assignment]
        tracked = type(second)
        return (
            second.label(),
            first.label,
            second.slot,
            isinstance(second, _Hybrid),
            issubclass(tracked, _Hybrid),
            "_abc_impl" in vars(tracked) and vars(tracked)["_abc_impl"] is not _Hybrid._abc_impl,  # type: ignore[attr-defined]
            "__init__" in vars(tracked),
        )

    value, _ = _run(body)
    assert value == ("method", "shadowed", 1, True, True, True, False)


def test_a_watched_instance_is_the_same_object() -> None:
    """Identity, isinstance and __class__ are kept; its containers are replaced."""

    def body() -> dict[str, Any]:
        account = Account()
        history = account.history
        watched = watch(account)
        return {
            "same": watched is account,
            "class": account.__class__,
            "isinstance": isinstance(account, Account),
            "type_is": type(account) is Account,
            "history_replaced": account.history is not history,
            "history_list": isinstance(account.history, list),
            "repr_start": repr(account).startswith("<test_ls_watch.Account object at"),
        }

    value, _ = _run(body)
    assert value == {
        "same": True,
        "class": Account,
        "isinstance": True,
        "type_is": False,
        "history_replaced": True,
        "history_list": True,
        "repr_start": True,
    }


def test_shared_containers_and_cycles() -> None:
    """Two watched objects sharing a dict share its tracked copy; cycles are fine;
    re-watching is idempotent."""

    class Node:
        def __init__(self, table: dict[str, int]) -> None:
            self.table = table
            self.peer: Node | None = None

    def body() -> tuple[bool, bool, bool]:
        table: dict[str, int] = {}
        a, b = Node(table), Node(table)
        a.peer, b.peer = b, a
        watch(a)
        watch(b)
        watch(a)
        return a.table is b.table, a.peer is b, type(a.table) is not dict

    value, _ = _run(body)
    assert value == (True, True, True)


def test_containers_assigned_during_the_execution_are_tracked() -> None:
    """`self.items = {}` on a watched instance stores a tracked dict."""

    def body() -> list[Op]:
        account = watch(Account())
        account.index = {"a": 1}
        lockstep.checkpoint("between")
        _ = "a" in account.index
        return []

    _, steps = _run(body)
    ops = _accesses(steps)
    assert ("write", "index", "write") in ops
    assert ("read", "a", "in") in ops


def test_getattr_proxies_and_inheritance() -> None:
    """A subclass with __getattr__ falls back as usual; inherited methods work."""

    class Base:
        def __init__(self) -> None:
            self.data = {"x": 1}

        def get(self, key: str) -> int:
            return self.data[key]

    class Proxy(Base):
        def __getattr__(self, name: str) -> str:
            return f"proxied {name}"

    def body() -> tuple[int, str]:
        proxy = watch(Proxy())
        return proxy.get("x"), proxy.anything

    value, _ = _run(body)
    assert value == (1, "proxied anything")


def test_watching_ends_with_the_execution() -> None:
    """After the execution the instance has its class back; hooks are no-ops."""
    kept: list[Account] = []

    def body() -> None:
        kept.append(watch(Account()))

    _run(body)
    account = kept[0]
    assert type(account) is Account
    account.history.append(1)
    assert account.history == [1]

    def unwatched() -> None:
        account.history.append(2)
        len(account.index)

    _, steps = _run(unwatched)
    assert _accesses(steps) == []


def test_pickle_and_copy_of_a_watched_instance_are_plain() -> None:
    """Pickling and copying give a plain Account with plain containers."""

    def body() -> tuple[type, type, type, type]:
        account = watch(Account())
        account.history.append(1)
        clone = pickle.loads(pickle.dumps(account))
        return (
            type(clone),
            type(clone.history),
            type(copy.copy(account)),
            type(copy.deepcopy(account).index),
        )

    value, _ = _run(body)
    assert value == (Account, list, Account, dict)


def test_init_subclass_registries_do_not_see_the_tracked_class() -> None:
    """A plugin registry filled by __init_subclass__ is not polluted by watch."""
    registry: list[type] = []

    class Plugin:
        def __init_subclass__(cls, **kwargs: Any) -> None:
            super().__init_subclass__(**kwargs)
            registry.append(cls)

    class Concrete(Plugin):
        def __init__(self) -> None:
            self.state = 0

    assert registry == [Concrete]
    _run(lambda: watch(Concrete()))
    assert registry == [Concrete]

    class Later(Plugin):
        pass

    assert registry == [Concrete, Later]


# --- bad input ---------------------------------------------------------------------------------


class Slotted:
    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 1


@dataclasses.dataclass(frozen=True)
class FrozenData:
    value: int = 1


@attrs.frozen
class FrozenAttrs:
    value: int = 1


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (Slotted, "__slots__ without __dict__"),
        (FrozenData, "frozen"),
        (FrozenAttrs, "frozen"),
        (lambda: 5, "immutable"),
        (lambda: "text", "immutable"),
        (lambda: (1, 2), "immutable"),
        (frozenset, "immutable"),
        (lambda: threading, "module globals"),
        (lambda: Account, "is a class"),
        (lambda: bytearray(b"x"), "implemented in C"),
        (object, "implemented in C"),
        (lockstep.threading.Lock, "synchronisation primitive"),
        (threading.Event, "synchronisation primitive"),
        (threading.local, "thread-local"),
    ],
)
def test_bad_input_is_refused_inside_and_outside_a_run(make: Callable[[], Any], words: str) -> None:
    """InvalidArgument naming the object, the reason and what watch supports."""
    target = make()
    with pytest.raises(InvalidArgument, match=words) as outside:
        watch(target)
    assert "watch() tracks instances of Python classes" in str(outside.value)
    caught: list[BaseException] = []

    def body() -> None:
        try:
            watch(make())
        except InvalidArgument as exc:
            caught.append(exc)

    _run(body)
    assert len(caught) == 1


def test_nothing_is_half_watched() -> None:
    """An attribute that cannot be tracked: the error names it, nothing changes."""

    class Final(type):
        def __new__(mcs, name: str, bases: tuple[type, ...], ns: dict[str, Any]) -> Final:
            if any(isinstance(b, Final) for b in bases):
                raise TypeError("final class")
            return super().__new__(mcs, name, bases, ns)

    class FinalDict(dict, metaclass=Final):  # type: ignore[misc]
        pass

    class Holder:
        def __init__(self) -> None:
            self.first: dict[str, int] = {"a": 1}
            self.second = FinalDict(b=2)

    holder = Holder()
    first = holder.first
    caught: list[BaseException] = []

    def body() -> None:
        try:
            watch(holder)
        except InvalidArgument as exc:
            caught.append(exc)
        lockstep.checkpoint("after")
        _ = holder.first["a"]

    _, steps = _run(body)
    assert len(caught) == 1
    assert "final class" in str(caught[0])
    assert type(holder) is Holder
    assert holder.first is first
    assert type(holder.first) is dict
    assert _accesses(steps) == []


def test_racy_argument_is_validated() -> None:
    """racy= is a mapping of names to reasons for instances, a reason for containers."""
    with pytest.raises(InvalidArgumentType, match="mapping"):
        watch(Account(), racy="a reason")
    with pytest.raises(InvalidArgument, match="reason"):
        watch(Account(), racy={"balance": ""})
    with pytest.raises(InvalidArgumentType, match="reason string"):
        watch({}, racy={"a": "b"})
    with pytest.raises(InvalidArgument, match="must not be empty"):
        watch([], racy="  ")


class _Sized:
    def __init__(self) -> None:
        self.__size = 0  # reached as _Sized__size

    def grow(self) -> int:
        self.__size += 1
        return self.__size


def test_a_surely_misspelt_racy_name_is_refused() -> None:
    """A racy= name the object lacks would declare nothing: a private name as the class
    body spells it, or a near miss of an attribute it has, is an error naming the
    right spelling; a name far from every attribute is accepted (created later)."""
    with pytest.raises(InvalidArgument, match=r"'_Sized__size'.*mangles"):
        watch(_Sized(), racy={"__size": "why"})
    with pytest.raises(InvalidArgument, match="did you mean 'balance'"):
        watch(Account(), racy={"balanse": "why"})
    sized = _Sized()
    assert watch(sized, racy={"_Sized__size": "why"}) is sized
    assert watch(Account(), racy={"created_later": "why"}) is not None


def test_a_misspelt_racy_name_changes_nothing_inside_an_execution() -> None:
    def scenario() -> None:
        account = Account()
        with pytest.raises(InvalidArgument):
            watch(account, racy={"balanse": "why"})
        assert type(account) is Account  # not half-watched
        watch(account, racy={"balance": "why"})

    result = lockstep.explore(scenario, strategy=lockstep.RandomStrategy(seed=0), budget=2)
    assert result.failure is None, result.failure


def test_malformed_benign_races_declaration_is_refused() -> None:
    """__benign_races__ must map attribute names to non-empty reasons."""

    class NoReason:
        __benign_races__: ClassVar[dict[str, str]] = {"value": ""}

        def __init__(self) -> None:
            self.value = 0

    class NotMapping:
        __benign_races__: ClassVar[list[str]] = ["value"]

        def __init__(self) -> None:
            self.value = 0

    with pytest.raises(InvalidArgument, match="non-empty string"):
        watch(NoReason())
    with pytest.raises(InvalidArgument, match="mapping of attribute names"):
        watch(NotMapping())

"""Tracked containers: subclasses of dict, OrderedDict, defaultdict, set, list and deque.

For each container class ``C`` (the builtins, and any Python subclass of them such as
``Counter``) :func:`tracked_class` generates, once, a subclass that wraps every
method of the mutable API: the wrapper reports the access (:func:`~._state.hook`),
then calls ``C``'s own method. The subclass adds no storage (``__slots__ = ()``), so
an instance of a Python subclass can switch to it in place; an instance of a builtin
class cannot, and is *copied* into a new tracked instance instead.

A method that ``C`` overrides in Python (``ExpiringDict.__setitem__``: ``with
self.lock:`` then ``OrderedDict.__setitem__(self, ...)``) may synchronise before it
reaches the storage through the base class, which nothing can intercept: its access
is a switch point where the call starts (when accesses are switch points) and is
race-checked when the call returns, with the clock the thread has then and the epoch
it had at the start (``MemoryState.access(defer=True)``), so the method's own lock
orders it. What that gives up: a method that touches the storage *before* it
synchronises can hide a race of that access.

What each operation is (the slot is the key; WHOLE for the container):

* dict / OrderedDict / defaultdict: ``d[k]``, ``k in d``, ``d.get(k)`` read k;
  ``d[k] = v``, ``del d[k]``, ``pop(k)``, ``setdefault(k)`` write k (and, on a
  defaultdict, ``d[k]`` of a missing key writes it); ``len``, iteration,
  ``keys()``/``values()``/``items()`` (live views whose iteration is tracked),
  ``copy``, ``==``, ``|``, ``repr`` read the whole; ``clear``, ``update``,
  ``|=``, ``popitem`` write the whole; ``move_to_end(k)`` reads k and writes the
  order.
* set: ``x in s`` reads x; ``add``, ``discard``, ``remove`` write x; ``pop``,
  ``clear`` and every in-place update write the whole; everything else
  (``len``, iteration, comparisons, set algebra, ``repr``) reads the whole.
* list / deque: every operation is on the whole container; the mutators
  (``append``, ``extend``, ``insert``, ``pop``, ``popleft``, ``remove``,
  ``sort``, ``rotate``, item assignment, ``+=``, ``*=``, ...) write it, the
  rest read it.

A binary operation whose other operand is a watched container also reads that
one (the C implementation reads it without calling its methods), and so does
``plain_list + watched_list`` (a reflected ``__radd__`` that records the read).
Not seen: C functions that take a watched container as an argument and read or
change it in place without calling its methods: ``heapq``'s functions on a
watched list outside patched modules (:mod:`lockstep._memory._heapq` is the stand-in
in patched ones), and a plain set built from or merged with a watched set
(``set(s)``, ``frozenset(s)``, ``plain.update(s)``, ``plain |= s``,
``plain.union(s)``, ...). An iteration
is a read when it starts and again at each ``next()`` after the iterating thread
passed a switch point (another thread may have changed the container
meanwhile). Copies are not watched: ``copy.copy``, ``copy.deepcopy`` and pickles
give the original class (they never refer to lockstep); a ``copy()`` method returns
what the base class returns (a plain dict, list or set; an instance of the tracked
class for OrderedDict and deque, which is not watched).
"""

from __future__ import annotations

import functools
from collections import OrderedDict, defaultdict, deque
from collections.abc import Callable, ItemsView, Iterator, KeysView, ValuesView
from types import FunctionType
from typing import Any, Literal

from lockstep._memory._classes import QUIET, make_subclass, set_class
from lockstep._memory._locations import WHOLE
from lockstep._memory._state import MemoryState, active_run, hook, hook_whole
from lockstep._runtime import Run

__all__ = [
    "CONTAINER_TYPES",
    "adopt_container",
    "container_family",
    "is_tracked_container",
    "plain_base",
    "tracked_class",
    "tracked_copy",
]

CONTAINER_TYPES: tuple[type, ...] = (dict, list, set, deque)
"""Watchable container families (OrderedDict and defaultdict are dicts)."""

_BUILTINS = frozenset({dict, OrderedDict, defaultdict, list, set, deque})

# (method, writes, keyed: the first argument is the slot)
_Spec = tuple[str, bool, bool]

_DICT: tuple[_Spec, ...] = (
    ("__getitem__", False, True),
    ("__contains__", False, True),
    ("get", False, True),
    ("__setitem__", True, True),
    ("__delitem__", True, True),
    ("pop", True, True),
    ("setdefault", True, True),
    ("popitem", True, False),
    ("clear", True, False),
    ("update", True, False),
    ("__ior__", True, False),
    ("__len__", False, False),
    ("copy", False, False),
    ("__repr__", False, False),
    ("__eq__", False, False),
    ("__ne__", False, False),
    ("__or__", False, False),
    ("__ror__", False, False),
)
_SET: tuple[_Spec, ...] = (
    ("__contains__", False, True),
    ("add", True, True),
    ("discard", True, True),
    ("remove", True, True),
    ("pop", True, False),
    ("clear", True, False),
    ("update", True, False),
    ("intersection_update", True, False),
    ("difference_update", True, False),
    ("symmetric_difference_update", True, False),
    ("__ior__", True, False),
    ("__iand__", True, False),
    ("__isub__", True, False),
    ("__ixor__", True, False),
    ("__len__", False, False),
    ("copy", False, False),
    ("union", False, False),
    ("intersection", False, False),
    ("difference", False, False),
    ("symmetric_difference", False, False),
    ("issubset", False, False),
    ("issuperset", False, False),
    ("isdisjoint", False, False),
    ("__repr__", False, False),
    ("__eq__", False, False),
    ("__ne__", False, False),
    ("__lt__", False, False),
    ("__le__", False, False),
    ("__gt__", False, False),
    ("__ge__", False, False),
    ("__or__", False, False),
    ("__ror__", False, False),
    ("__and__", False, False),
    ("__rand__", False, False),
    ("__sub__", False, False),
    ("__rsub__", False, False),
    ("__xor__", False, False),
    ("__rxor__", False, False),
)
_SEQ_WRITES = (
    "append",
    "extend",
    "insert",
    "pop",
    "remove",
    "clear",
    "__setitem__",
    "__delitem__",
    "__iadd__",
    "__imul__",
    "reverse",
)
_SEQ_READS = (
    "__getitem__",
    "__len__",
    "__contains__",
    "count",
    "index",
    "copy",
    "__repr__",
    "__eq__",
    "__ne__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__add__",
    "__mul__",
    "__rmul__",
)
_LIST: tuple[_Spec, ...] = (
    *((name, True, False) for name in (*_SEQ_WRITES, "sort")),
    *((name, False, False) for name in _SEQ_READS),
)
_DEQUE_WRITES = (*_SEQ_WRITES, "appendleft", "extendleft", "popleft", "rotate")
_DEQUE: tuple[_Spec, ...] = (
    *((name, True, False) for name in _DEQUE_WRITES),
    *((name, False, False) for name in (*_SEQ_READS, "__copy__")),
)
_FAMILIES: dict[type, tuple[str, tuple[_Spec, ...]]] = {
    dict: ("keyed", _DICT),
    set: ("keyed", _SET),
    list: ("seq", _LIST),
    deque: ("seq", _DEQUE),
}
# Binary operations whose other operands are read too (C reads them directly).
_READS_OTHERS = frozenset(
    {
        "__eq__",
        "__ne__",
        "__lt__",
        "__le__",
        "__gt__",
        "__ge__",
        "__or__",
        "__ror__",
        "__and__",
        "__rand__",
        "__sub__",
        "__rsub__",
        "__xor__",
        "__rxor__",
        "__ior__",
        "__iand__",
        "__isub__",
        "__ixor__",
        "__iadd__",
        "__add__",
        "update",
        "union",
        "intersection",
        "difference",
        "symmetric_difference",
        "intersection_update",
        "difference_update",
        "symmetric_difference_update",
        "issubset",
        "issuperset",
        "isdisjoint",
        "extend",
        "extendleft",
    }
)
_OP_NAMES = {
    "__getitem__": "[]",
    "__contains__": "in",
    "__setitem__": "[]=",
    "__delitem__": "del",
    "__len__": "len",
    "__iter__": "iter",
    "__reversed__": "reversed",
    "__repr__": "repr",
    "__eq__": "==",
    "__ne__": "!=",
    "__lt__": "<",
    "__le__": "<=",
    "__gt__": ">",
    "__ge__": ">=",
    "__or__": "|",
    "__ror__": "|",
    "__ior__": "|=",
    "__and__": "&",
    "__rand__": "&",
    "__iand__": "&=",
    "__sub__": "-",
    "__rsub__": "-",
    "__isub__": "-=",
    "__xor__": "^",
    "__rxor__": "^",
    "__ixor__": "^=",
    "__iadd__": "+=",
    "__imul__": "*=",
    "__add__": "+",
    "__mul__": "*",
    "__rmul__": "*",
    "__copy__": "copy",
}

_TRACKED: dict[type, type] = {}
_BASE_OF: dict[type, type] = {}


_FAMILY_OF: dict[type, type | None] = {}
_FAMILY_CACHE_SIZE = 4096  # classes made at run time (one per call, say) must not pile up


def container_family(cls: type) -> type | None:
    """dict, set, list or deque when ``cls`` is (a subclass of) one, else None."""
    try:
        return _FAMILY_OF[cls]
    except KeyError:
        pass
    found = None
    for family in CONTAINER_TYPES:
        if issubclass(cls, family):
            found = family
            break
    if len(_FAMILY_OF) >= _FAMILY_CACHE_SIZE:
        _FAMILY_OF.clear()
    _FAMILY_OF[cls] = found
    return found


def is_tracked_container(obj: object) -> bool:
    """True when ``obj`` is an instance of a generated tracked container class."""
    return type(obj) in _BASE_OF


def plain_base(cls: type) -> type:
    """The class a tracked container class was generated from (``cls`` if it is not one)."""
    return _BASE_OF.get(cls, cls)


def _read_others(args: tuple[Any, ...]) -> None:
    for other in args:
        if type(other) in _BASE_OF:
            hook(other, False, WHOLE, "read")


# Methods that take keyword arguments (every other wrapped method takes positional
# arguments only, so its wrapper passes ``*args`` alone: no keyword dict to build).
_KEYWORDS = frozenset({"sort", "update"})


def _wrapper(
    base_method: Callable[..., Any], name: str, write: bool, keyed: bool, seq: bool
) -> Any:
    op = _OP_NAMES.get(name, name)
    reads_others = name in _READS_OTHERS
    keywords = name in _KEYWORDS

    if keyed:

        def keyed_method(self: Any, *args: Any) -> Any:
            hook(self, write, args[0] if args else WHOLE, op)
            return base_method(self, *args)

        def keyed_method_kw(self: Any, *args: Any, **kwargs: Any) -> Any:
            hook(self, write, args[0] if args else WHOLE, op)
            return base_method(self, *args, **kwargs)

        method = keyed_method_kw if keywords else keyed_method
    elif reads_others:

        def binary_method(self: Any, *args: Any, **kwargs: Any) -> Any:
            hook(self, write, WHOLE, op)
            _read_others(args)
            return base_method(self, *args, **kwargs)

        method = binary_method
    elif seq:
        # A list's or deque's operation (the most frequent container accesses).

        def seq_method(self: Any, *args: Any) -> Any:
            hook_whole(self, write, op)
            return base_method(self, *args)

        def seq_method_kw(self: Any, *args: Any, **kwargs: Any) -> Any:
            hook_whole(self, write, op)
            return base_method(self, *args, **kwargs)

        method = seq_method_kw if keywords else seq_method
    else:

        def whole_method(self: Any, *args: Any, **kwargs: Any) -> Any:
            hook(self, write, WHOLE, op)
            return base_method(self, *args, **kwargs)

        method = whole_method
    return functools.wraps(base_method)(method)


class _TrackedIterator:
    """Iterates a watched container; reads it again after each switch point of its own."""

    __slots__ = ("_inner", "_owner", "_run", "_step")

    def __init__(self, owner: object, inner: Iterator[Any], run: Run) -> None:
        self._owner = owner
        self._inner = inner
        self._run = run
        self._step = run.step

    def __iter__(self) -> _TrackedIterator:
        return self

    def __next__(self) -> Any:
        run = self._run
        if run.step != self._step:
            hook(self._owner, False, WHOLE, "next")
            self._step = run.step
        return next(self._inner)

    def __length_hint__(self) -> int:
        hint = getattr(self._inner, "__length_hint__", None)
        return int(hint()) if hint is not None else 0


def _overridden(base: type, name: str) -> bool:
    """Whether ``base.<name>`` is Python code of a subclass (``ExpiringDict.__setitem__``)
    rather than the builtin container's own method."""
    for klass in base.__mro__:
        if name in vars(klass):
            return klass not in _BUILTINS and isinstance(vars(klass)[name], FunctionType)
    return False


def _bracketed(base_method: Callable[..., Any], name: str, write: bool, keyed: bool) -> Any:
    """The wrapper of a method the container's class overrides in Python: its body may
    synchronise (``with self.lock:``) before it touches the storage through the base
    class (``OrderedDict.__setitem__(self, ...)``, which nothing can intercept), so the
    access is a switch point where the call starts (when it is one) and is race-checked
    when the call returns (``MemoryState.access(defer=True)``)."""
    op = _OP_NAMES.get(name, name)
    reads_others = name in _READS_OTHERS

    def bracketed_method(self: Any, *args: Any, **kwargs: Any) -> Any:
        found = active_run(self)
        if found is None:
            return base_method(self, *args, **kwargs)
        memory, lt, shadow = found
        slot = (args[0] if args else WHOLE) if keyed else WHOLE
        entered = memory.access(lt, shadow, write, slot, op, False, 1, defer=True)
        if reads_others:
            _read_others(args)
        try:
            return base_method(self, *args, **kwargs)
        finally:
            memory.leave(entered)

    return functools.wraps(base_method)(bracketed_method)


def _iter_method(base_iter: Callable[[Any], Iterator[Any]], op: str) -> Any:
    def __iter__(self: Any) -> Iterator[Any]:
        found = active_run(self)
        if found is None:
            return base_iter(self)
        memory, lt, shadow = found
        memory.access(lt, shadow, False, WHOLE, op)
        return _TrackedIterator(self, base_iter(self), memory.run)

    return functools.wraps(base_iter)(__iter__)


class _KeysView(KeysView[Any]):
    """A dict's keys() view whose operations go through the tracked dict."""

    __slots__ = ()
    _mapping: Any

    def __reversed__(self) -> Iterator[Any]:
        keys: Iterator[Any] = reversed(self._mapping)
        return keys

    def __repr__(self) -> str:
        return f"dict_keys({list(self)!r})"


class _ValuesView(ValuesView[Any]):
    """A dict's values() view whose operations go through the tracked dict."""

    __slots__ = ()
    _mapping: Any

    def __reversed__(self) -> Iterator[Any]:
        mapping = self._mapping
        for key in reversed(mapping):
            yield mapping[key]

    def __repr__(self) -> str:
        return f"dict_values({list(self)!r})"


class _ItemsView(ItemsView[Any, Any]):
    """A dict's items() view whose operations go through the tracked dict."""

    __slots__ = ()
    _mapping: Any

    def __reversed__(self) -> Iterator[tuple[Any, Any]]:
        mapping = self._mapping
        for key in reversed(mapping):
            yield (key, mapping[key])

    def __repr__(self) -> str:
        return f"dict_items({list(self)!r})"


def _view_method(base_method: Callable[[Any], Any], view: type) -> Any:
    def method(self: Any) -> Any:
        if active_run(self) is None:
            return base_method(self)
        return view(self)

    return functools.wraps(base_method)(method)


def _reflected_concat(self: Any, other: Any) -> Any:
    """``other + self`` for a plain list ``other``: C's list concatenation copies this
    list's items without calling its methods, so the read is recorded here, before
    Python falls back to that concatenation (NotImplemented changes nothing else)."""
    hook_whole(self, False, "+")
    return NotImplemented


def _defaultdict_getitem(base_method: Callable[..., Any]) -> Any:
    def __getitem__(self: Any, key: Any) -> Any:
        found = active_run(self)
        if found is not None:
            memory, lt, shadow = found
            try:
                missing = self.default_factory is not None and not dict.__contains__(self, key)
            except TypeError:
                missing = False
            memory.access(lt, shadow, missing, key, "[]")
        return base_method(self, key)

    return functools.wraps(base_method)(__getitem__)


def _move_to_end(base_method: Callable[..., Any]) -> Any:
    def move_to_end(self: Any, key: Any, last: bool = True) -> None:
        hook(self, False, key, "move_to_end" if last else "move_to_end(last=False)", True)
        base_method(self, key, last)

    return functools.wraps(base_method)(move_to_end)


def _reduce_ex(tracked: type, base: type) -> Any:
    base_reduce: Any = base.__reduce_ex__

    def __reduce_ex__(self: Any, protocol: Any) -> Any:
        return replace_class(base_reduce(self, protocol), tracked, base)

    return __reduce_ex__


def replace_class(reduced: Any, tracked: type, base: type) -> Any:
    """A ``__reduce_ex__`` result with the tracked class replaced by its base (so
    pickles and copies are plain objects that do not refer to lockstep)."""
    if not isinstance(reduced, tuple) or not reduced:
        return reduced
    items = list(reduced)
    if items[0] is tracked:
        items[0] = base
    if len(items) > 1 and isinstance(items[1], tuple) and items[1] and items[1][0] is tracked:
        items[1] = (base, *items[1][1:])
    return tuple(items)


def tracked_class(base: Any) -> type:
    """The tracked subclass of container class ``base`` (generated once, then cached).

    Raises TypeError when ``base`` is not a container or the subclass cannot be created
    (the caller turns it into InvalidArgument).
    """
    base = plain_base(base)
    cached = _TRACKED.get(base)
    if cached is not None:
        return cached
    family = container_family(base)
    if family is None:
        raise TypeError(f"{base.__qualname__} is not a dict, set, list or deque")
    shape, specs = _FAMILIES[family]
    namespace: dict[str, Any] = {"__slots__": ()}
    for name, write, keyed in specs:
        method = getattr(base, name, None)
        if method is None:
            continue
        if _overridden(base, name):
            namespace[name] = _bracketed(method, name, write, keyed and shape != "seq")
        else:
            namespace[name] = _wrapper(method, name, write, keyed, shape == "seq")
    namespace["__iter__"] = _iter_method(base.__iter__, "iter")
    if hasattr(base, "__reversed__"):
        namespace["__reversed__"] = _iter_method(base.__reversed__, "reversed")
    if family is list:
        namespace["__radd__"] = _reflected_concat
    if family is dict:
        namespace["keys"] = _view_method(base.keys, _KeysView)
        namespace["values"] = _view_method(base.values, _ValuesView)
        namespace["items"] = _view_method(base.items, _ItemsView)
        if issubclass(base, defaultdict):
            namespace["__getitem__"] = _defaultdict_getitem(base.__getitem__)
        if issubclass(base, OrderedDict):
            namespace["move_to_end"] = _move_to_end(base.move_to_end)
    module = "lockstep.watched" if base in _BUILTINS else base.__module__
    tracked = make_subclass(base, namespace, module=module)
    tracked.__reduce_ex__ = _reduce_ex(tracked, base)  # type: ignore[method-assign]
    if base in _BUILTINS:
        # A builtin's instances cannot take its class back: an empty subclass stands in.
        quiet = make_subclass(base, {}, module=module)
        quiet.__reduce_ex__ = _reduce_ex(quiet, base)  # type: ignore[method-assign]
    else:
        quiet = base
    _TRACKED[base] = tracked
    _BASE_OF[tracked] = base
    QUIET[tracked] = quiet
    return tracked


def shape_of(cls: type) -> Literal["keyed", "seq"]:
    """ "keyed" (dict, set) or "seq" (list, deque)."""
    family = container_family(cls)
    if family is None:
        raise TypeError(f"{cls.__qualname__} is not a container")
    return "keyed" if _FAMILIES[family][0] == "keyed" else "seq"


def tracked_copy(value: Any) -> Any:
    """A new tracked container with ``value``'s contents (``value`` of a builtin class)."""
    base = type(value)
    tracked: Any = tracked_class(base)
    if base is defaultdict:
        copy = tracked(value.default_factory)
        dict.update(copy, value)
    elif base is OrderedDict:
        copy = tracked()
        for key, item in OrderedDict.items(value):
            OrderedDict.__setitem__(copy, key, item)
    elif base is dict:
        copy = tracked()
        dict.update(copy, value)
    elif base is set:
        copy = tracked()
        set.update(copy, value)
    elif base is list:
        copy = tracked()
        list.extend(copy, value)
    elif base is deque:
        copy = tracked(value, value.maxlen)
    else:
        raise TypeError(f"{base.__qualname__} is not a builtin container")
    return copy


def needs_copy(value: object) -> bool:
    """True for an instance of a builtin container class (its class cannot be swapped)."""
    return type(value) in _BUILTINS


def adopt_container(memory: MemoryState, value: Any, name: str | None, benign: str | None) -> Any:
    """``value`` watched in this execution, as the object to use from now on.

    A builtin container is replaced by a tracked copy (the same copy every time the
    same original is adopted in this execution); an instance of a Python subclass
    switches class in place; anything that is not a container is returned unchanged.
    """
    if container_family(type(value)) is None:
        return value
    shadow = memory.shadows.get(id(value))
    if shadow is not None:
        if benign is not None:
            shadow.benign = benign
        return value
    replaced = memory.replaced.get(id(value))
    if replaced is not None:
        if benign is not None:  # another holder of the same container declares it
            memory.shadows[id(replaced[1])].benign = benign
        return replaced[1]
    base = plain_base(type(value))
    kind = base.__name__
    if is_tracked_container(value):
        memory.register(value, kind=kind, shape=shape_of(base), name=name, benign=benign)
        return value
    if needs_copy(value):
        copy = tracked_copy(value)
        memory.replaced[id(value)] = (value, copy)
        memory.register(copy, kind=kind, shape=shape_of(base), name=name, benign=benign)
        return copy
    try:
        tracked = tracked_class(base)
        set_class(value, tracked)
    except TypeError:
        return value  # cannot be tracked (checked up front by watch(); here: left alone)
    memory.register(
        value,
        kind=kind,
        shape=shape_of(base),
        name=name,
        benign=benign,
        restore=base,
        tracked_class=tracked,
    )
    return value

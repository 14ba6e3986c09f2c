"""The happens-before race detector: one hand-off per primitive, reports, declarations.

Each hand-off test passes a value from one thread to another through one
primitive (a race-free program: DPOR explores every trace and finds nothing),
then runs the same program with the primitive's edge removed (the data race is
reported). Together they show that every controlled primitive orders memory.
"""

from __future__ import annotations

import collections
import functools
import inspect
from collections.abc import Callable
from typing import Any, ClassVar

import pytest

import lockstep
from lockstep import DporStrategy, explore, replay, watch
from lockstep.report import render_html

threading = lockstep.threading
queue = lockstep.queue


class Box:
    def __init__(self) -> None:
        self.value = 0


def _dpor(scenario: Callable[[], None], **options: Any) -> lockstep.ExploreResult:
    return explore(scenario, strategy=DporStrategy(), budget=2000, **options)


def _check_edge(edge: Callable[[bool], Callable[[], None]]) -> None:
    with_edge = _dpor(edge(True))
    assert with_edge.failure is None, with_edge.failure
    assert with_edge.exhausted
    without = _dpor(edge(False))
    assert without.failure is not None
    assert without.failure.kind == "data-race", without.failure
    race = without.failure.race
    assert race is not None
    assert race.location == "Box#1.value"
    assert {race.first.mode, race.second.mode} <= {"read", "write"}
    assert "write" in {race.first.mode, race.second.mode}


def lock_edge(synced: bool) -> Callable[[], None]:
    def scenario() -> None:
        box = watch(Box())
        lock = threading.Lock()
        other = threading.Lock()

        def writer() -> None:
            with lock:
                box.value = 1

        def reader() -> None:
            with lock if synced else other:
                _ = box.value

        ts = [lockstep.spawn(writer), lockstep.spawn(reader)]
        for t in ts:
            t.join()

    return scenario


def rlock_edge(synced: bool) -> Callable[[], None]:
    def scenario() -> None:
        box = watch(Box())
        lock = threading.RLock()
        other = threading.RLock()

        def writer() -> None:
            with lock, lock:
                box.value = 1

        def reader() -> None:
            with lock if synced else other:
                _ = box.value

        ts = [lockstep.spawn(writer), lockstep.spawn(reader)]
        for t in ts:
            t.join()

    return scenario


def condition_edge(synced: bool) -> Callable[[], None]:
    def scenario() -> None:
        box = watch(Box())
        cond = threading.Condition()
        state = {"ready": False}

        def writer() -> None:
            box.value = 1
            with cond:
                state["ready"] = True
                cond.notify()

        def reader() -> None:
            if synced:
                with cond:
                    while not state["ready"]:
                        cond.wait()
            _ = box.value

        ts = [lockstep.spawn(writer), lockstep.spawn(reader)]
        for t in ts:
            t.join()

    return scenario


def event_edge(synced: bool) -> Callable[[], None]:
    def scenario() -> None:
        box = watch(Box())
        event = threading.Event()

        def writer() -> None:
            box.value = 1
            event.set()

        def reader() -> None:
            if synced:
                event.wait()
            _ = box.value

        ts = [lockstep.spawn(writer), lockstep.spawn(reader)]
        for t in ts:
            t.join()

    return scenario


def event_is_set_edge(synced: bool) -> Callable[[], None]:
    def scenario() -> None:
        box = watch(Box())
        event = threading.Event()

        def writer() -> None:
            box.value = 1
            event.set()

        def reader() -> None:
            if event.is_set() or not synced:
                _ = box.value

        ts = [lockstep.spawn(writer), lockstep.spawn(reader)]
        for t in ts:
            t.join()

    return scenario


def event_clear_edge(synced: bool) -> Callable[[], None]:
    def scenario() -> None:
        box = watch(Box())
        event = threading.Event()
        event.set()

        def writer() -> None:
            box.value = 1
            event.clear()

        def reader() -> None:
            if not event.is_set() or not synced:
                _ = box.value

        ts = [lockstep.spawn(writer), lockstep.spawn(reader)]
        for t in ts:
            t.join()

    return scenario


def semaphore_edge(synced: bool, bounded: bool = False) -> Callable[[], None]:
    def scenario() -> None:
        box = watch(Box())
        sem = threading.BoundedSemaphore(1) if bounded else threading.Semaphore(0)
        if bounded:
            sem.acquire()

        def writer() -> None:
            box.value = 1
            sem.release()

        def reader() -> None:
            if synced:
                sem.acquire()
            _ = box.value

        ts = [lockstep.spawn(writer), lockstep.spawn(reader)]
        for t in ts:
            t.join()

    return scenario


def queue_edge(synced: bool) -> Callable[[], None]:
    def scenario() -> None:
        box = watch(Box())
        q: queue.Queue[int] = queue.Queue()

        def writer() -> None:
            box.value = 1
            q.put(1)

        def reader() -> None:
            if synced:
                q.get()
            _ = box.value

        ts = [lockstep.spawn(writer), lockstep.spawn(reader)]
        for t in ts:
            t.join()

    return scenario


def barrier_edge(synced: bool) -> Callable[[], None]:
    def scenario() -> None:
        box = watch(Box())
        barrier = threading.Barrier(2)

        def writer() -> None:
            box.value = 1
            if synced:
                barrier.wait()

        def reader() -> None:
            if synced:
                barrier.wait()
            _ = box.value

        ts = [lockstep.spawn(writer), lockstep.spawn(reader)]
        for t in ts:
            t.join()

    return scenario


def join_edge(synced: bool) -> Callable[[], None]:
    def scenario() -> None:
        box = watch(Box())

        def writer() -> None:
            box.value = 1

        t = lockstep.spawn(writer)
        if synced:
            t.join()
        _ = box.value
        t.join()

    return scenario


def is_alive_edge(synced: bool) -> Callable[[], None]:
    def scenario() -> None:
        box = watch(Box())

        def writer() -> None:
            box.value = 1

        t = lockstep.spawn(writer)
        if not t.is_alive() or not synced:
            _ = box.value
        t.join()

    return scenario


def start_edge(synced: bool) -> Callable[[], None]:
    def scenario() -> None:
        box = watch(Box())

        def reader() -> None:
            _ = box.value

        if synced:
            box.value = 1
            t = lockstep.spawn(reader)
        else:
            t = lockstep.spawn(reader)
            box.value = 1
        t.join()

    return scenario


def timer_edge(synced: bool) -> Callable[[], None]:
    def scenario() -> None:
        box = watch(Box())

        def reader() -> None:
            _ = box.value

        if synced:
            box.value = 1
            timer = threading.Timer(0.5, reader)
            timer.start()
        else:
            timer = threading.Timer(0.5, reader)
            timer.start()
            box.value = 1
        timer.join()

    return scenario


EDGES: dict[str, Callable[[bool], Callable[[], None]]] = {
    "Lock": lock_edge,
    "RLock": rlock_edge,
    "Condition": condition_edge,
    "Event.wait": event_edge,
    "Event.is_set": event_is_set_edge,
    "Event.clear": event_clear_edge,
    "Semaphore": semaphore_edge,
    "BoundedSemaphore": lambda synced: semaphore_edge(synced, bounded=True),
    "Queue": queue_edge,
    "Barrier": barrier_edge,
    "Thread.join": join_edge,
    "Thread.is_alive": is_alive_edge,
    "Thread.start": start_edge,
    "Timer": timer_edge,
}


@pytest.mark.parametrize("primitive", sorted(EDGES))
def test_each_primitive_orders_memory(primitive: str) -> None:
    """A value handed off through the primitive is not a race; without it, it is."""
    _check_edge(EDGES[primitive])


# --- the report ---------------------------------------------------------------------------


def split_lock() -> None:
    """Two threads guard one dict with two different locks (B1 in miniature)."""
    models = watch({})
    a, b = threading.Lock(), threading.Lock()

    def add(lock: Any) -> None:
        with lock:
            if "X" not in models:
                models["X"] = "new"

    ts = [lockstep.spawn(add, a), lockstep.spawn(add, b)]
    for t in ts:
        t.join()


def test_the_report_names_both_sides_and_their_last_synchronisation() -> None:
    """Thread, operation, key, file:line and the last synchronisation of each side."""
    result = _dpor(split_lock)
    failure = result.failure
    assert failure is not None
    assert failure.kind == "data-race"
    race = failure.race
    assert race is not None
    assert race.location == "dict#1['X']"
    first, second = race.first, race.second
    assert first.thread != second.thread
    assert (first.mode, first.operation) == ("write", "[]=")
    assert (second.mode, second.operation) == ("read", "in")
    write_line = _line('models["X"] = "new"')
    read_line = _line('if "X" not in models:')
    assert first.code.endswith(f"test_ls_races.py:{write_line}")
    assert second.code.endswith(f"test_ls_races.py:{read_line}")
    assert first.last_sync is not None
    assert first.last_sync.startswith("Lock.acquire Lock#1")
    assert second.last_sync is not None
    assert second.last_sync.startswith("Lock.acquire Lock#2")
    text = str(failure)
    assert "Data race on dict#1['X']" in text
    assert text.count("<< RACE") == 2
    assert failure.signature == ("data-race", "dict#1['X']")


def _line(fragment: str) -> int:
    with open(__file__, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if fragment in line and "_line(" not in line:
                return number
    raise AssertionError(fragment)


def test_a_race_replays_and_the_html_marks_both_accesses() -> None:
    """The schedule replays the same race; the HTML timeline marks both steps."""
    failure = _dpor(split_lock).failure
    assert failure is not None
    assert failure.race is not None
    again = replay(split_lock, failure.schedule)
    assert again.failure is not None
    assert again.failure.race == failure.race
    page = render_html(
        failure.trace.to_rows(),
        title="race",
        thread_names=list(failure.trace.thread_names),
        marked_steps=failure.race.steps,
    )
    assert page.count('<tr class="race">') == 2


def test_shrinking_keeps_the_race() -> None:
    """A random search's race shrinks to a race on the same location, no preemption."""
    result = explore(split_lock, strategy=lockstep.RandomStrategy(3), budget=50)
    failure = result.failure
    assert failure is not None
    assert failure.kind == "data-race"
    assert failure.race is not None
    assert failure.race.location == "dict#1['X']"
    assert failure.preemptions == 0


def test_races_off_finds_what_the_race_leads_to() -> None:
    """With races=False the accesses stay switch points and DPOR finds the double add."""

    def double_add() -> None:
        models = watch({})
        loads: list[int] = []
        a, b = threading.Lock(), threading.Lock()

        def add(lock: Any) -> None:
            with lock:
                if "X" not in models:  # races off
                    loads.append(1)
                    models["X"] = "new"  # races off

        ts = [lockstep.spawn(add, a), lockstep.spawn(add, b)]
        for t in ts:
            t.join()
        assert len(loads) == 1, f"loaded {len(loads)} times"

    result = _dpor(double_add, races=False)
    assert result.failure is not None
    assert result.failure.kind == "exception"
    assert "loaded 2 times" in result.failure.message
    assert not result.failure.schedule.races
    assert replay(double_add, result.failure.schedule).failure is not None
    # Each access step is placed at the line that made it.
    here = __file__.replace("\\", "/")
    placed = {
        (step.op.kind, step.op.location.replace("\\", "/"))
        for step in result.failure.trace.steps
        if step.op.kind in ("read", "write")
    }
    read_line = _line('if "X" not in models:  # races off')
    write_line = _line('models["X"] = "new"  # races off')
    assert ("read", f"{here}:{read_line}") in placed, placed
    assert ("write", f"{here}:{write_line}") in placed, placed


# --- declared races -------------------------------------------------------------------------


class FastPath:
    """A double-checked lookup: a lock-free read, rechecked under the lock."""

    __benign_races__: ClassVar[dict[str, str]] = {
        "_items": "lock-free membership test; a miss is rechecked under _lock"
    }

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[str, int] = {}
        self.loads = 0

    def get(self, key: str) -> int:
        if key in self._items:
            return self._items[key]
        with self._lock:
            if key not in self._items:
                self.loads += 1
                self._items[key] = len(key)
            return self._items[key]


def _fast_path_scenario(racy: dict[str, str] | None, cls: type = FastPath) -> Callable[[], None]:
    def scenario() -> None:
        cache = watch(cls(), racy=racy)
        ts = [lockstep.spawn(cache.get, "k") for _ in range(2)]
        for t in ts:
            t.join()
        assert cache.loads == 1

    return scenario


def test_a_declared_benign_race_is_not_reported_but_still_explored() -> None:
    """__benign_races__ on the class: no data-race; DPOR still explores both orders of
    the lock-free read against the write (more than one execution) and finds nothing."""
    result = _dpor(_fast_path_scenario(None))
    assert result.failure is None, result.failure
    assert result.exhausted
    assert result.executions > 1


def test_an_undeclared_fast_path_is_reported() -> None:
    """The same class without the declaration: the lock-free read is a data race."""

    class Undeclared(FastPath):
        __benign_races__: ClassVar[dict[str, str]] = {}

    result = _dpor(_fast_path_scenario(None, Undeclared))
    # The subclass inherits the base declaration: subclasses extend, never drop.
    assert result.failure is None

    class Plain:
        def __init__(self) -> None:
            self._lock = threading.Lock()
            self._items: dict[str, int] = {}
            self.loads = 0

        get = FastPath.get

    result = _dpor(_fast_path_scenario(None, Plain))
    assert result.failure is not None
    assert result.failure.kind == "data-race"


class _PartlyDeclared:
    """One attribute declared racy (a flag read without the lock), one not (a counter)."""

    __benign_races__: ClassVar[dict[str, str]] = {"ready": "a hint, rechecked under _lock"}

    def __init__(self, locked_count: bool) -> None:
        self._lock = threading.Lock()
        self.ready = False
        self.count = 0
        self.locked_count = locked_count

    def work(self) -> None:
        if not self.ready:  # lock-free read of the declared attribute
            with self._lock:
                self.ready = True
        if self.locked_count:
            with self._lock:
                self.count += 1
        else:
            self.count += 1  # an undeclared attribute of the same object: a race


def test_a_declaration_covers_only_the_attributes_it_names() -> None:
    """An object with one declared attribute still has every other attribute checked:
    the unlocked counter next to the declared flag is reported (naming the counter),
    the locked one is not."""

    def scenario(locked_count: bool) -> Callable[[], None]:
        def body() -> None:
            shared = watch(_PartlyDeclared(locked_count))
            ts = [lockstep.spawn(shared.work) for _ in range(2)]
            for t in ts:
                t.join()

        return body

    clean = _dpor(scenario(True))
    assert clean.failure is None, clean.failure
    assert clean.exhausted
    racy = _dpor(scenario(False))
    assert racy.failure is not None
    assert racy.failure.kind == "data-race"
    assert racy.failure.race is not None
    assert racy.failure.race.location == "_PartlyDeclared#1.count"


def test_a_test_side_declaration() -> None:
    """watch(obj, racy={...}) declares it from the test, without touching the class."""

    class Plain:
        def __init__(self) -> None:
            self._lock = threading.Lock()
            self._items: dict[str, int] = {}
            self.loads = 0

        get = FastPath.get

    reason = {"_items": "double-checked lookup"}
    result = _dpor(_fast_path_scenario(reason, Plain))
    assert result.failure is None, result.failure
    assert result.exhausted


def _declared_set(locked_write: bool) -> Callable[[], None]:
    def scenario() -> None:
        seen = watch(set(), racy="a lock-free membership test, rechecked under the lock")
        lock = threading.Lock()

        def worker() -> None:
            if locked_write:
                if 1 not in seen:  # lock-free read: the declared race
                    with lock:
                        if 1 not in seen:
                            seen.add(1)
            elif 1 not in seen:
                seen.add(1)  # two of these can run unordered: a write/write race

        ts = [lockstep.spawn(worker) for _ in range(2)]
        for t in ts:
            t.join()

    return scenario


def test_a_declaration_covers_read_write_races_only() -> None:
    """watch(container, racy=reason): a lock-free read racing with a locked write is
    the declared race; two unordered writes are still reported."""
    declared = _dpor(_declared_set(locked_write=True))
    assert declared.failure is None, declared.failure
    assert declared.exhausted
    unlocked = _dpor(_declared_set(locked_write=False))
    assert unlocked.failure is not None
    assert unlocked.failure.kind == "data-race"
    race = unlocked.failure.race
    assert race is not None
    assert (race.first.mode, race.second.mode) == ("write", "write")


# -- where each side of a race is reported ----------------------------------------------
#
# The detector finds the code that made an access from the number of lockstep frames
# between it and the tracked method, which differs per kind of access (an attribute, a
# keyed or whole-container method, an iteration, a view, a binary operation, a declared
# location that is also a switch point). Each program below races two accesses marked
# `# <- side`; the report must name exactly those lines.


class _Cached:
    def __init__(self) -> None:
        self.value = 0

    @functools.cached_property
    def total(self) -> int:
        return 1


def _race_program(
    first: Callable[[Any], None], second: Callable[[Any], None], make: Callable[[], Any]
) -> Callable[[], None]:
    def scenario() -> None:
        state = make()
        ts = [lockstep.spawn(first, state), lockstep.spawn(second, state)]
        for t in ts:
            t.join()

    return scenario


def _w_attr(box: Any) -> None:
    box.value = 1  # <- side


def _r_attr(box: Any) -> None:
    _ = box.value  # <- side


def _del_attr(box: Any) -> None:
    del box.value  # <- side


def _cached_total(box: Any) -> None:
    _ = box.total  # <- side


def _w_key(d: Any) -> None:
    d["k"] = 1  # <- side


def _r_get(d: Any) -> None:
    _ = d.get("k")  # <- side


def _r_keys(d: Any) -> None:
    for _ in d.keys():  # noqa: SIM118  # <- side (the view is what is tested)
        pass


def _r_eq(pair: Any) -> None:
    _ = pair[1] == pair[0]  # <- side


def _w_first(pair: Any) -> None:
    pair[0]["k"] = 1  # <- side


def _append(items: Any) -> None:
    items.append(1)  # <- side


def _len(items: Any) -> None:
    _ = len(items)  # <- side


def _iterate(items: Any) -> None:
    for _ in items:  # <- side
        pass


def _missing(dd: Any) -> None:
    _ = dd["k"]  # <- side


def _contains(dd: Any) -> None:
    _ = "k" in dd  # <- side


def _move(od: Any) -> None:
    od.move_to_end("k")  # <- side


def _set_k(od: Any) -> None:
    od["k"] = 2  # <- side


SITE_PROGRAMS: dict[str, tuple[Callable[[Any], None], Callable[[Any], None], Any]] = {
    "attribute write/read": (_w_attr, _r_attr, lambda: watch(Box())),
    "attribute del/read": (_del_attr, _r_attr, lambda: watch(Box())),
    "declared attribute write/write": (
        _w_attr,
        _w_attr,
        lambda: watch(Box(), racy={"value": "a flag read without the lock"}),
    ),
    "cached_property compute/compute": (_cached_total, _cached_total, lambda: watch(_Cached())),
    "dict key write/get": (_w_key, _r_get, lambda: watch({})),
    "dict key write/keys() view": (_w_key, _r_keys, lambda: watch({})),
    "binary operation reads its operand": (
        _w_first,
        _r_eq,
        lambda: (watch({}), watch({})),
    ),
    "list append/len": (_append, _len, lambda: watch([])),
    "list append/iteration": (_append, _iterate, lambda: watch([])),
    "deque append/iteration": (_append, _iterate, lambda: watch(collections.deque())),
    "defaultdict missing key/in": (
        _missing,
        _contains,
        lambda: watch(collections.defaultdict(int)),
    ),
    "OrderedDict move_to_end/write": (
        _move,
        _set_k,
        lambda: watch(collections.OrderedDict(k=1)),
    ),
    "declared container write/write": (_set_k, _set_k, lambda: watch({}, racy="a cache")),
}


def _side_lines(*functions: Callable[[Any], None]) -> set[int]:
    lines: set[int] = set()
    for function in functions:
        source, start = inspect.getsourcelines(function)
        lines |= {start + i for i, text in enumerate(source) if "# <- side" in text}
    return lines


@pytest.mark.parametrize("name", sorted(SITE_PROGRAMS))
def test_each_side_of_a_race_is_reported_at_the_line_that_made_it(name: str) -> None:
    first, second, make = SITE_PROGRAMS[name]
    result = _dpor(_race_program(first, second, make))
    failure = result.failure
    assert failure is not None, name
    assert failure.kind == "data-race", failure
    race = failure.race
    assert race is not None
    here = __file__.replace("\\", "/")
    reported = set()
    for side in (race.first, race.second):
        path, _, line = side.code.replace("\\", "/").rpartition(":")
        assert path == here, side.code
        reported.add(int(line))
    assert reported <= _side_lines(first, second), (race.first.code, race.second.code)
    assert len(reported) == len(_side_lines(first, second)), reported


def _released_by_another(releaser_writes: bool) -> Callable[[], None]:
    """A Lock acquired by main and released by a worker (legal for a Lock): the
    worker's release, not main's acquire, is what a later acquirer synchronises with."""

    def scenario() -> None:
        box = watch(Box())
        lock = threading.Lock()
        lock.acquire()
        done = threading.Event()

        def releaser() -> None:
            if releaser_writes:
                box.value = 1
            lock.release()
            done.set()

        def reader() -> None:
            with lock:
                _ = box.value

        ts = [lockstep.spawn(releaser), lockstep.spawn(reader)]
        done.wait()
        if not releaser_writes:
            box.value = 1  # main wrote it, after its acquire: nothing orders it
        for t in ts:
            t.join()

    return scenario


def test_a_lock_released_by_another_thread_orders_what_that_thread_did() -> None:
    """The releaser's write happens before the next acquirer's read (no race); a write
    by the thread that acquired the lock but did not release it is unordered."""
    ordered = _dpor(_released_by_another(releaser_writes=True))
    assert ordered.failure is None, ordered.failure
    assert ordered.exhausted
    unordered = _dpor(_released_by_another(releaser_writes=False))
    assert unordered.failure is not None
    assert unordered.failure.kind == "data-race", unordered.failure

"""A race report near synchronisation lockstep does not control says it is unproven.

A real lock (a module that was not patched, a lock made at import time) orders
accesses that lockstep cannot see: its race detector would report them as a race
with "nothing ordering the two", a false claim. The report must say what real
primitive the thread could reach and what to patch, and a race with nothing real
in reach must read as before.
"""

from __future__ import annotations

import io
import logging
import multiprocessing
import threading as real_threading
from collections.abc import Callable

import pytest

import lockstep
from lockstep import RandomStrategy, explore, watch
from lockstep.linearizability import HistoryRecorder
from lockstep.report import DataRace
from tests.lockstep.samples import harness_module, import_time_lock_module

threading = lockstep.threading


class Box:
    def __init__(self) -> None:
        self.value = 0


def _two_writers(body: Callable[[Box], None]) -> Callable[[], None]:
    def scenario() -> None:
        box = watch(Box())
        threads = [lockstep.spawn(body, box) for _ in range(2)]
        for t in threads:
            t.join()

    return scenario


def _race(scenario: Callable[[], None], **options: object) -> DataRace:
    result = explore(scenario, strategy=RandomStrategy(0), budget=50, **options)  # type: ignore[arg-type]
    assert result.failure is not None, "expected a race report"
    assert result.failure.kind == "data-race", result.failure
    race = result.failure.race
    assert race is not None
    return race


def test_a_held_real_lock_in_a_closure_makes_the_race_unproven() -> None:
    lock = real_threading.Lock()

    def add(box: Box) -> None:
        with lock:
            box.value += 1

    result = explore(_two_writers(add), strategy=RandomStrategy(0), budget=50)
    failure = result.failure
    assert failure is not None
    race = failure.race
    assert race is not None
    assert len(race.uncontrolled) == 1
    assert race.uncontrolled[0].startswith("a real threading.Lock `lock` (held), reached from ")
    assert "test_ls_uncontrolled_sync.py:" in race.uncontrolled[0]
    assert "unproven: the thread can reach a real threading.Lock" in failure.message
    assert "with nothing ordering the two" not in failure.message
    text = race.describe()
    assert "Unproven: nothing lockstep controls orders the two accesses" in text
    assert "Patch the module that creates it" in text
    assert "Guard both with the same lock" not in text


def test_the_same_program_with_lockstep_s_lock_has_no_race() -> None:
    lock = threading.Lock()

    def add(box: Box) -> None:
        with lock:
            box.value += 1

    result = explore(_two_writers(add), strategy=RandomStrategy(0), budget=50)
    assert result.failure is None, result.failure


def test_a_race_with_nothing_real_in_reach_reads_as_before() -> None:
    def add(box: Box) -> None:
        box.value += 1

    result = explore(_two_writers(add), strategy=RandomStrategy(0), budget=50)
    failure = result.failure
    assert failure is not None
    assert failure.race is not None
    assert failure.race.uncontrolled == ()
    assert failure.message.endswith("with nothing ordering the two")
    assert "Guard both with the same lock" in failure.race.describe()


def test_a_lock_made_at_import_time_is_found_as_the_global_the_code_names() -> None:
    def scenario() -> None:
        counter = watch(import_time_lock_module.Counter())
        threads = [lockstep.spawn(counter.add_under_import_time_lock) for _ in range(2)]
        for t in threads:
            t.join()

    race = _race(scenario, patch=[import_time_lock_module])
    assert race.uncontrolled[0].startswith("a real threading.Lock `_LOCK` (held)")
    assert "(module tests.lockstep.samples.import_time_lock_module)" in race.uncontrolled[0]
    # The lock the same module makes while patched is lockstep's: no race at all.

    def controlled() -> None:
        counter = watch(import_time_lock_module.Counter())
        threads = [lockstep.spawn(counter.add_under_own_lock) for _ in range(2)]
        for t in threads:
            t.join()

    result = explore(
        controlled, strategy=RandomStrategy(0), budget=50, patch=[import_time_lock_module]
    )
    assert result.failure is None, result.failure


class RealLocked:
    """A class whose lock is real: the scenario's module is not patched."""

    def __init__(self) -> None:
        self.value = 0
        self._lock = real_threading.Lock()
        self._ready = real_threading.Event()

    def add(self) -> None:
        with self._lock:
            self.value += 1


def test_an_attribute_of_a_local_is_found_held_ones_first() -> None:
    def scenario() -> None:
        obj = watch(RealLocked())
        threads = [lockstep.spawn(obj.add) for _ in range(2)]
        for t in threads:
            t.join()

    race = _race(scenario)
    assert race.uncontrolled[0].startswith("a real threading.Lock `self._lock` (held)")
    assert any(
        found.startswith("a real threading.Event `self._ready`, reached from")
        for found in race.uncontrolled[1:]
    ), race.uncontrolled


def test_lockstep_s_own_objects_with_real_locks_are_not_evidence() -> None:
    """A HistoryRecorder (linearizability) guards its log with a real lock on purpose."""
    recorder = HistoryRecorder()

    def add(box: Box) -> None:
        pending = recorder.invoke("p", "add")
        box.value += 1
        recorder.respond(pending, None)

    race = _race(_two_writers(add))
    assert race.uncontrolled == ()


def _through_the_harness() -> Callable[[], None]:
    def scenario() -> None:
        box = watch(Box())
        recorder = harness_module.Recorder()

        def add() -> None:
            box.value += 1

        threads = [lockstep.spawn(harness_module.call, add, recorder) for _ in range(2)]
        for t in threads:
            t.join()

    return scenario


def test_a_harness_module_s_real_locks_are_not_evidence() -> None:
    """The lockstep check driver and fake models hold real locks on purpose; a module
    that declares ``__lockstep_harness__ = True`` keeps its frames and objects out of
    the search, and the race in the code it calls is reported as usual."""
    assert _race(_through_the_harness()).uncontrolled == ()


def test_without_the_declaration_the_harness_lock_would_be_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(harness_module, "__lockstep_harness__", False)
    found = _race(_through_the_harness()).uncontrolled
    assert any("`_LOG_LOCK` (held)" in phrase for phrase in found), found


class _Guard:
    def __init__(self) -> None:
        self.lock = real_threading.Lock()


class Pool:
    """The real lock two attributes down: ``self._guard.lock``."""

    def __init__(self) -> None:
        self.value = 0
        self._guard = _Guard()

    def add(self) -> None:
        with self._guard.lock:
            self.value += 1


def test_a_lock_two_attributes_down_is_found() -> None:
    def scenario() -> None:
        pool = watch(Pool())
        threads = [lockstep.spawn(pool.add) for _ in range(2)]
        for t in threads:
            t.join()

    race = _race(scenario)
    assert race.uncontrolled[0].startswith("a real threading.Lock `self._guard.lock` (held)")


def test_the_standard_library_s_own_locks_are_not_evidence() -> None:
    """A logging handler holds a real RLock for its own output: a race beside it is a race."""

    def add(box: Box) -> None:
        handler = logging.StreamHandler(io.StringIO())
        box.value += 1
        handler.close()

    assert _race(_two_writers(add)).uncontrolled == ()


def test_a_multiprocessing_lock_is_named() -> None:
    lock = multiprocessing.Lock()

    def add(box: Box) -> None:
        with lock:
            box.value += 1

    race = _race(_two_writers(add))
    assert race.uncontrolled[0].startswith("a real multiprocessing.Lock `lock`, reached from")


def test_a_primitive_owned_by_another_module_s_object_names_that_module() -> None:
    """The thread reaches the real lock through an object whose class lives in an
    unpatched module: that module, not the reaching frame's, is the one to patch."""

    def scenario() -> None:
        counter = watch(import_time_lock_module.Counter())  # not patched: its lock is real

        def bump() -> None:
            counter.value += 1

        threads = [lockstep.spawn(bump) for _ in range(2)]
        for t in threads:
            t.join()

    race = _race(scenario)
    owned = [found for found in race.uncontrolled if "`counter._lock`" in found]
    assert owned, race.uncontrolled
    assert owned[0].endswith(
        "; it is an attribute of a tests.lockstep.samples.import_time_lock_module.Counter, "
        "so module tests.lockstep.samples.import_time_lock_module likely creates it"
    ), owned[0]
    # Reached through a variable of the frame's own module: no owner is named.
    assert all("attribute of a" not in found for found in race.uncontrolled if found not in owned)

"""The warm paths (hit, lease, refresh) answer under one short lock, never during a teardown.

A warm ``add_model`` or ``lease`` is answered without the id's lifecycle only
when the model is registered and not being unloaded (B4); otherwise it takes
the full protocol, which waits for the removal or eviction and then reloads
or fails. Threads are ordered with Events: a blocking ``clear_cache`` holds a
removal (or an eviction) open while another thread tries the warm path, and
a manager subclass signals when that thread has fallen back to the lifecycle.
"""

from __future__ import annotations

import functools
import re
import sys
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, ClassVar

import pytest

from modelmanager import (
    InvalidArgument,
    InvalidArgumentType,
    LockTimeout,
    ModelManager,
    ModelManagerDecorator,
    ModelNotFound,
    WithFixedSizeCache,
)
from modelmanager.decorators._cache_book import IdState

from .helpers import FakeModel, FakeRegistry, join

Stack = Any
D = ModelManagerDecorator

GATE = 30.0


class SignallingManager(ModelManager):
    """Sets ``fell_back`` when the thread named ``watched`` asks for a lifecycle."""

    watched = "adder"

    def __init__(self, registry: Any, *, lock_timeout: float = GATE) -> None:
        super().__init__(registry, lock_timeout=lock_timeout)
        self.fell_back = threading.Event()

    def lifecycle(self, resolved_id: str) -> AbstractContextManager[None]:
        if threading.current_thread().name == self.watched:
            self.fell_back.set()
        return super().lifecycle(resolved_id)


def _cache(inner: Stack, max_size: int = 2) -> WithFixedSizeCache:
    return WithFixedSizeCache(inner, max_size=max_size, queue_lock_timeout=GATE)


STACKS: dict[str, Callable[[ModelManager], Stack]] = {
    "M": lambda m: m,
    "D(M)": D,
    "C(M)": _cache,
    "C(D(M))": lambda m: _cache(D(m)),
    "D(C(M))": lambda m: D(_cache(m)),
    "C(C(M))": lambda m: _cache(_cache(m)),
    "D(C(D(M)))": lambda m: D(_cache(D(m))),
}
CACHED = [name for name in STACKS if "C(" in name]


class _Worker:
    """A named thread running ``fn``; ``done`` is set when it finishes either way."""

    def __init__(self, name: str, fn: Callable[[], Any], progress: threading.Event) -> None:
        self.outcome: dict[str, Any] = {}
        self.done = threading.Event()

        def target() -> None:
            try:
                self.outcome["result"] = fn()
            except BaseException as error:  # recorded for the test to assert on
                self.outcome["error"] = error
            finally:
                self.done.set()
                progress.set()

        self.thread = threading.Thread(target=target, name=name, daemon=True)
        self.thread.start()


def _add_and_look(stack: Stack, model_id: str) -> tuple[FakeModel, list[bool]]:
    """add_model, then what the caller finds right after it returned (I3)."""
    stack.add_model(model_id)
    model = stack[model_id]
    return model, list(model.clear_calls)


def _watch_fallback(manager: SignallingManager, progress: threading.Event) -> None:
    def relay() -> None:
        if manager.fell_back.wait(GATE):
            progress.set()

    threading.Thread(target=relay, daemon=True).start()


# ----------------------------------------------------------- during removal


@pytest.mark.parametrize("name", list(STACKS))
def test_warm_add_during_removal_waits_then_reloads(registry: FakeRegistry, name: str) -> None:
    """A warm add racing a removal inside clear_cache waits, then loads a fresh model."""
    manager = SignallingManager(registry)
    stack = STACKS[name](manager)
    stack.add_model("x")
    first = stack["x"]
    entered, release = threading.Event(), threading.Event()
    registry.clear_gates["x"] = (entered, release)
    progress = threading.Event()
    remover = _Worker("remover", lambda: stack.remove("x"), threading.Event())
    assert entered.wait(GATE)
    _watch_fallback(manager, progress)
    adder = _Worker("adder", lambda: _add_and_look(stack, "x"), progress)
    assert progress.wait(GATE)
    # The adder fell back to the lifecycle and is still waiting there: it did
    # not answer "loaded" while X was being torn down.
    assert manager.fell_back.is_set()
    assert not adder.done.is_set(), adder.outcome
    del registry.clear_gates["x"]
    release.set()
    join(remover.thread)
    join(adder.thread)
    assert "error" not in remover.outcome, remover.outcome
    assert "error" not in adder.outcome, adder.outcome
    model, clear_calls_at_return = adder.outcome["result"]
    assert model is not first
    assert clear_calls_at_return == []
    assert first.cleared
    assert not model.cleared
    assert stack.keys() == ["x"]
    assert stack["x"] is model
    assert stack.statistics().hits == 0
    assert stack.statistics().loads == 2
    assert stack.lifecycle_snapshot() == {}


@pytest.mark.parametrize("name", list(STACKS))
def test_warm_add_during_removal_raises_the_reload_error(registry: FakeRegistry, name: str) -> None:
    """If the reload after the removal fails, the racing add raises that error (no success)."""
    manager = SignallingManager(registry)
    stack = STACKS[name](manager)
    stack.add_model("x")
    entered, release = threading.Event(), threading.Event()
    registry.clear_gates["x"] = (entered, release)
    progress = threading.Event()
    remover = _Worker("remover", lambda: stack.remove("x"), threading.Event())
    assert entered.wait(GATE)
    registry.load_errors["x"] = OSError("weights missing")
    _watch_fallback(manager, progress)
    adder = _Worker("adder", lambda: _add_and_look(stack, "x"), progress)
    assert progress.wait(GATE)
    assert manager.fell_back.is_set()
    assert not adder.done.is_set(), adder.outcome
    release.set()
    join(remover.thread)
    join(adder.thread)
    assert "error" not in remover.outcome, remover.outcome
    error = adder.outcome.get("error")
    assert isinstance(error, OSError), adder.outcome
    assert str(error) == "weights missing"
    assert stack.keys() == []
    assert stack.statistics().hits == 0
    assert stack.statistics().load_failures == 1
    assert stack.lifecycle_snapshot() == {}


@pytest.mark.parametrize("name", list(STACKS))
def test_warm_lease_during_removal_cannot_answer(registry: FakeRegistry, name: str) -> None:
    """A lease racing a removal inside clear_cache cannot get the model being torn down."""
    manager = ModelManager(registry, lock_timeout=0)
    stack = STACKS[name](manager)
    stack.add_model("x")
    entered, release = threading.Event(), threading.Event()
    registry.clear_gates["x"] = (entered, release)
    remover = _Worker("remover", lambda: stack.remove("x"), threading.Event())
    assert entered.wait(GATE)
    with pytest.raises(LockTimeout), stack.lease("x"):
        pass
    assert stack.lease_counts() == {}
    release.set()
    join(remover.thread)
    assert "error" not in remover.outcome, remover.outcome
    with pytest.raises(ModelNotFound), stack.lease("x"):
        pass
    assert stack.lease_counts() == {}
    assert stack.lifecycle_snapshot() == {}


@pytest.mark.parametrize("name", list(STACKS))
def test_failed_removal_leaves_the_warm_path_open(registry: FakeRegistry, name: str) -> None:
    """A removal whose clear_cache raises unmarks the model: hits and leases work again."""
    stack = STACKS[name](ModelManager(registry))
    stack.add_model("x")
    model = stack["x"]
    registry.clear_errors["x"] = RuntimeError("disk busy")
    with pytest.raises(RuntimeError, match="disk busy"):
        stack.remove("x")
    stack.add_model("x")
    with stack.lease("x") as leased:
        assert leased is model
    assert stack.statistics().hits == 1
    assert stack.describe_models()[0].hits == 1
    assert len(registry.constructed) == 1


def test_lease_waits_while_the_lifecycle_is_held(registry: FakeRegistry) -> None:
    """A lifecycle holder (e.g. an eviction checking leases) sees a stable lease count.

    A warm add is still answered meanwhile: it changes no registration, and
    the model is live until a removal marks it.
    """
    manager = ModelManager(registry, lock_timeout=0)
    stack = _cache(manager)
    stack.add_model("x")
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with manager.lifecycle("x"):
            holding.set()
            assert release.wait(GATE)

    holder = _Worker("holder", hold, threading.Event())
    assert holding.wait(GATE)
    with pytest.raises(LockTimeout), stack.lease("x"):
        pass
    assert stack.lease_counts() == {}
    stack.add_model("x")
    assert stack.statistics().hits == 1
    release.set()
    join(holder.thread)
    assert "error" not in holder.outcome, holder.outcome
    with stack.lease("x"):
        assert stack.lease_counts() == {"x": 1}
    assert stack.lease_counts() == {}


# ----------------------------------------------------------- during eviction


@pytest.mark.parametrize("outer", [0, 1])
def test_warm_add_during_eviction_waits_then_reloads(registry: FakeRegistry, outer: int) -> None:
    """A warm add of a victim being evicted waits for the eviction, then reloads it."""
    manager = SignallingManager(registry)
    cache = _cache(manager, max_size=1)
    stack: Stack = D(cache) if outer else cache
    stack.add_model("a")
    first = stack["a"]
    entered, release = threading.Event(), threading.Event()
    registry.clear_gates["a"] = (entered, release)
    progress = threading.Event()
    evictor = _Worker("evictor", lambda: stack.add_model("b"), threading.Event())
    assert entered.wait(GATE)
    assert cache.lru_order() == ["a"]  # still listed while being unloaded
    _watch_fallback(manager, progress)
    adder = _Worker("adder", lambda: _add_and_look(stack, "a"), progress)
    assert progress.wait(GATE)
    assert manager.fell_back.is_set()
    assert not adder.done.is_set(), adder.outcome
    del registry.clear_gates["a"]
    release.set()
    join(evictor.thread)
    join(adder.thread)
    assert "error" not in evictor.outcome, evictor.outcome
    assert "error" not in adder.outcome, adder.outcome
    model, clear_calls_at_return = adder.outcome["result"]
    assert model is not first
    assert clear_calls_at_return == []
    assert first.cleared
    assert not model.cleared
    # The adder's reload evicted b in turn (max_size 1).
    assert stack.keys() == ["a"]
    assert cache.lru_order() == ["a"]
    assert stack.statistics().hits == 0
    assert stack.statistics().evictions_capacity == 2
    assert stack.lifecycle_snapshot() == {}


def test_warm_add_rescues_a_chosen_victim(registry: FakeRegistry) -> None:
    """A warm hit on a victim chosen but not yet committed rescues it (a use)."""
    cache = _cache(ModelManager(registry), max_size=2)
    cache.add_model("a")
    cache.add_model("b")
    cache._book.choose("a", "c")  # chosen by an eviction that has not committed yet
    cache.add_model("a")
    assert cache._book.state("a") is IdState.COMMITTED
    assert cache.lru_order() == ["b", "a"]


def test_warm_add_refuses_a_committed_victim(registry: FakeRegistry) -> None:
    """A victim committed to unloading is never a warm hit (the add takes the lifecycle)."""
    manager = ModelManager(registry, lock_timeout=0)
    cache = _cache(manager)
    cache.add_model("a")
    holding, release = threading.Event(), threading.Event()

    def commit_and_hold() -> None:
        # What _evict_one does before its inner remove: hold, commit, unload.
        with manager.lifecycle("a"):
            with cache._lru_changed:
                cache._book.choose("a", None)
                cache._book.start_unload("a")
            holding.set()
            assert release.wait(GATE)
            with cache._lru_changed:
                cache._book.fail_unload("a")

    holder = _Worker("holder", commit_and_hold, threading.Event())
    assert holding.wait(GATE)
    with pytest.raises(LockTimeout):
        cache.add_model("a")
    assert cache.statistics().hits == 0
    release.set()
    join(holder.thread)
    assert "error" not in holder.outcome, holder.outcome
    cache.add_model("a")
    assert cache.statistics().hits == 1


# -------------------------------------------------------------- statistics


@pytest.mark.parametrize("name", list(STACKS))
def test_warm_hits_are_counted_once(registry: FakeRegistry, name: str) -> None:
    """statistics().hits and describe_models' hits count each warm add exactly once."""
    stack = STACKS[name](ModelManager(registry))
    stack.add_model("a")
    stack.add_model("b")
    for _ in range(3):
        stack.add_model("a")
    stack.add_model("b", model_id_alias=None)
    stats = stack.statistics()
    assert stats.hits == 4
    assert stats.lifecycle_entries == 0
    assert {d.model_id: d.hits for d in stack.describe_models()} == {"a": 3, "b": 1}
    if "C(" in name:
        assert stack.lru_order() == ["a", "b"]


def test_warm_add_with_pin_pins(registry: FakeRegistry) -> None:
    """pin=True on a warm add pins the id (and moves it, like any hit)."""
    cache = _cache(ModelManager(registry))
    cache.add_model("a")
    cache.add_model("b")
    cache.add_model("a", pin=True)
    assert cache.pinned() == frozenset({"a"})
    assert cache.lru_order() == ["b", "a"]
    assert cache.statistics().hits == 1


def test_warm_add_of_an_alias_uses_the_alias(registry: FakeRegistry) -> None:
    """The warm path keys on the resolved id: C loaded does not make alias A warm (B10)."""
    cache = _cache(ModelManager(registry))
    cache.add_model("c")
    cache.add_model("c", model_id_alias="a")
    assert sorted(cache.keys()) == ["a", "c"]
    assert cache.statistics().hits == 0
    cache.add_model("c", model_id_alias="a")
    assert cache.statistics().hits == 1


# ----------------------------------------------------- subclasses, arguments


def test_a_decorator_overriding_add_model_sees_every_add(registry: FakeRegistry) -> None:
    """An outer cache's warm path never skips an inner layer's add_model override."""

    class Counting(ModelManagerDecorator):
        calls = 0

        def add_model(self, *args: Any, **kwargs: Any) -> None:
            Counting.calls += 1
            super().add_model(*args, **kwargs)

    stack = _cache(Counting(ModelManager(registry)))
    stack.add_model("a")
    stack.add_model("a")
    assert Counting.calls == 2
    assert stack.statistics().hits == 1


def test_a_cache_overriding_a_warm_step_gets_the_full_protocol(registry: FakeRegistry) -> None:
    """A subclass that overrides a step the warm path stands in for sees every hit."""

    class Recording(WithFixedSizeCache):
        seen: ClassVar[list[str]] = []

        def _warm_hit(self, resolved_id: str, request: Any) -> bool:
            Recording.seen.append(resolved_id)
            return super()._warm_hit(resolved_id, request)

    stack = Recording(ModelManager(registry), max_size=2)
    assert "add_model" not in vars(stack)  # no warm add stands in for the class's
    stack.add_model("a")
    stack.add_model("a")
    assert Recording.seen == ["a", "a"]
    assert stack.statistics().hits == 1
    assert stack.lru_order() == ["a"]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"model_id": 5}, InvalidArgumentType, "model_id must be a non-empty str"),
        ({"model_id": ""}, InvalidArgument, "model_id must be a non-empty str"),
        # the warm lookup uses the alias: a listed alias must not excuse an empty id
        ({"model_id": "", "model_id_alias": "a"}, InvalidArgument, "model_id must be a non-empty"),
        ({"model_id": "a", "api_key": 5}, InvalidArgumentType, "api_key"),
        ({"model_id": "a", "model_id_alias": ""}, InvalidArgument, "model_id_alias"),
        ({"model_id": "a", "model_id_alias": 7}, InvalidArgumentType, "model_id_alias"),
        ({"model_id": "a", "pin": "yes"}, InvalidArgumentType, "pin"),
    ],
)
def test_warm_add_still_validates(
    registry: FakeRegistry, kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    """Arguments are checked before the warm path: a loaded id does not skip validation."""
    cache = _cache(ModelManager(registry))
    cache.add_model("a")
    with pytest.raises(error, match=match):
        cache.add_model(**kwargs)
    assert cache.statistics().hits == 0


def test_str_subclass_ids_are_accepted(registry: FakeRegistry) -> None:
    """The inline type check falls back to the full one, which accepts str subclasses."""

    class Name(str):
        pass

    cache = _cache(ModelManager(registry))
    cache.add_model(Name("a"))
    cache.add_model(Name("a"))
    cache.refresh(Name("a"))
    with cache.lease(Name("a")):
        pass
    assert cache.statistics().hits == 1


def test_lease_context_is_single_use(registry: FakeRegistry) -> None:
    """A lease object cannot be entered twice; leaving it gives the lease back once."""
    manager = ModelManager(registry)
    manager.add_model("a")
    lease = manager.lease("a")
    with lease:
        with pytest.raises(RuntimeError, match="twice"), lease:
            pass
        assert manager.lease_counts() == {"a": 1}
    assert manager.lease_counts() == {}
    with pytest.raises(ValueError, match="boom"), manager.lease("a"):
        raise ValueError("boom")
    assert manager.lease_counts() == {}


def _python_calls(call: Callable[[], object]) -> list[str]:
    """The Python functions ``call`` runs, in order (``sys.setprofile``'s "call" events).

    Only the core's functions and this module's count: in the mutation run
    mutmut's trampolines, and the standard library code they call, are not the
    project's calls.
    """
    names: list[str] = []
    here = globals()

    def profile(frame: Any, event: str, arg: object) -> None:
        if event == "call" and (
            frame.f_globals is here
            or frame.f_globals.get("__name__", "").startswith("modelmanager.")
        ):
            names.append(frame.f_code.co_qualname)

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return names


@pytest.mark.parametrize(
    "kwargs", [{}, {"api_key": "k"}, {"pin": True}, {"model_id_alias": "a", "model_id": "x"}]
)
def test_a_warm_add_is_one_python_call(registry: FakeRegistry, kwargs: dict[str, Any]) -> None:
    """What every request pays: the book's warm add (CacheBook.warm_add) and nothing else."""
    cache = _cache(ModelManager(registry))
    cache.add_model("a")
    call = functools.partial(cache.add_model, **{"model_id": "a", **kwargs})
    [only] = _python_calls(call)  # (by its name's parts: mutmut renames warm_add)
    assert only.startswith("CacheBook.")
    assert "warm_add" in only
    assert only.endswith(".<locals>.add_model")
    assert (cache.statistics().hits, cache.pinned()) == (
        1,
        frozenset({"a"} if kwargs.get("pin") else ()),
    )


def test_a_subclass_add_model_keeps_the_warm_path_through_super(registry: FakeRegistry) -> None:
    """An add_model override sees every add, and its super() call is still a warm add."""

    class Logging(WithFixedSizeCache):
        adds: ClassVar[list[str]] = []

        def add_model(self, model_id: str, *args: Any, **kwargs: Any) -> None:
            Logging.adds.append(model_id)
            super().add_model(model_id, *args, **kwargs)

    stack = Logging(ModelManager(registry), max_size=2)
    stack.add_model("a")
    calls = _python_calls(functools.partial(stack.add_model, "a", pin=True))
    # The override, the class's add_model, then the warm add, which calls nothing else.
    assert calls[0].endswith("<locals>.Logging.add_model")
    assert any(name.startswith("WithFixedSizeCache.") for name in calls[1:-1])
    assert "warm_add" in calls[-1]
    assert calls[-1].endswith(".<locals>.add_model")
    assert not any("_add" in name and "add_model" not in name for name in calls)
    assert (Logging.adds, stack.statistics().hits, stack.pinned()) == (
        ["a", "a"],
        1,
        frozenset("a"),
    )


def _step(name: str) -> str:
    """A qualified name's last part; mutmut's renamed original reads as the original."""
    return re.sub(r"^xǁ\w+ǁ(\w+?)__mutmut_\w+$", r"\1", name.rsplit(".", 1)[-1])


def _lease_once(cache: WithFixedSizeCache, model_id: str) -> None:
    with cache.lease(model_id):
        pass


@pytest.mark.parametrize("on_full", ["wait", "proceed"])
def test_a_lease_is_the_caches_three_calls_and_the_managers_two(
    registry: FakeRegistry, on_full: str
) -> None:
    """What every request holding a model pays: the cache's lease function, its
    ``__enter__`` and ``__exit__`` (made for this cache: no bound method, nothing
    read through the cache), and the manager's two lease steps; nothing else."""
    cache = WithFixedSizeCache(ModelManager(registry), max_size=2, on_full=on_full)
    cache.add_model("a")
    calls = _python_calls(functools.partial(_lease_once, cache, "a"))
    assert calls[0] == "_lease_once"
    assert [_step(name) for name in calls[1:]] == [
        "lease",
        "__enter__",
        "_take_lease",
        "__exit__",
        "give_back",
    ]
    assert all("lease_function" in name for name in calls[1:3] + calls[4:5])
    assert cache.manager.lease_counts() == {}


def test_a_subclass_lease_keeps_the_caches_lease_through_super(registry: FakeRegistry) -> None:
    """A ``lease`` override sees every lease; ``super().lease`` (and the class's method
    called on an instance) is the cache's own lease, whose end restores the bound."""

    class Logging(WithFixedSizeCache):
        leases: ClassVar[list[str]] = []

        def lease(self, model_id: str) -> AbstractContextManager[Any]:
            Logging.leases.append(model_id)
            return super().lease(model_id)

    stack = Logging(ModelManager(registry), max_size=1)
    stack.add_model("a")
    with stack.lease("a") as model:
        stack.add_model("b")  # every model leased by this thread: admitted over
        assert stack.manager.lease_counts() == {"a": 1}
    assert model is registry.constructed[0]
    assert (Logging.leases, stack.lru_order()) == (["a"], ["b"])
    with WithFixedSizeCache.lease(stack, "b"):
        assert stack.manager.lease_counts() == {"b": 1}
    assert Logging.leases == ["a"]
    assert stack.manager.lease_counts() == {}

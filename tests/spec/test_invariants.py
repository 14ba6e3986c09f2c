"""Unit tests of models_spec.invariants: each check fails on a bad case and passes on a good one."""

from __future__ import annotations

from typing import Any

import pytest

from modelmanager.errors import note_swallowed
from models_spec.adapter import CAPABILITIES, Snapshot
from models_spec.fakes import (
    Ghost,
    Script,
    ScriptedLoadError,
    ScriptedRegistry,
    ScriptedUnloadError,
)
from models_spec.invariants import (
    CATALOGUE,
    SAFE_POLICIES,
    InvariantSkipped,
    InvariantViolation,
    check_all,
    check_i1,
    check_i2,
    check_i3,
    check_i4,
    check_i5,
    check_i6,
    check_i7,
    check_i8,
    check_i8_outcomes,
    check_i9,
    check_i10,
    check_i11,
    check_i12,
    check_i13,
    check_i14,
    check_i16,
    check_i17,
    check_i18,
    check_i19,
    check_linearizable,
    documented_overflows,
)
from models_spec.spec import initial_state


def violation(inv: str) -> Any:
    return pytest.raises(InvariantViolation, match=rf"^{inv} violated")


def loaded(*ids: str, script: Script | None = None) -> tuple[ScriptedRegistry, dict[str, object]]:
    registry = ScriptedRegistry(script or Script())
    return registry, {rid: registry.get_model(rid)(model_id=rid) for rid in ids}


def snap(models: dict[str, object], **kwargs: object) -> Snapshot:
    defaults: dict[str, object] = {
        "lru": tuple(models),
        "lifecycle": {},
        "pins": frozenset(),
        "leases": {},
        "in_flight_loads": 0,
        "max_size": 3,
    }
    defaults.update(kwargs)
    return Snapshot(registered=models, **defaults)  # type: ignore[arg-type]


def test_catalogue_numbers_every_invariant_and_each_is_broken_by_a_known_bug() -> None:
    """Every invariant is catalogued with a function and a scope, and the bug modules
    (models_spec._harness.catalogue) name a known-bug variant breaking each one."""
    from models_spec._harness.catalogue import load

    assert list(CATALOGUE) == [f"I{n}" for n in range(1, len(CATALOGUE) + 1)]
    bugs = load()
    assert [i for i in CATALOGUE if not bugs.breaking(i)] == []
    for info in CATALOGUE.values():
        assert info.scope in {"state", "operation", "history"}
        assert info.needs <= CAPABILITIES


def test_i1_generations() -> None:
    """Unreserved or duplicated generations violate I1; a missing table skips."""
    _, models = loaded()
    check_i1(snap(models, lifecycle={"a": (1, 2, True)}))
    with violation("I1"):
        check_i1(snap(models, lifecycle={"a": (1, 0, False)}))
    with violation("I1"):
        check_i1(snap(models, lifecycle={"a": (1, 1, True), "b": (1, 1, False)}))
    with pytest.raises(InvariantSkipped):
        check_i1(snap(models, lifecycle=None))


def test_i2_single_flight_from_the_ghost() -> None:
    """Two live constructors or a constructor during clear_cache violate I2."""
    ghost = Ghost()
    check_i2(None, ghost)
    ghost.max_constructing["a"] = 2
    with violation("I2"):
        check_i2(None, ghost)
    registry = ScriptedRegistry()
    registry.ghost.clearing["a"] = 1
    registry.get_model("a")(model_id="a")
    with violation("I2"):
        check_i2(None, registry.ghost)


def test_i3_add_postcondition() -> None:
    """After add returns the id must be registered with a live model."""
    registry, models = loaded("a")
    check_i3(snap(models), registry.ghost, resolved_id="a")
    with violation("I3"):
        check_i3(snap(models), registry.ghost, resolved_id="b")
    models["a"].clear_cache()  # type: ignore[attr-defined]
    with violation("I3"):
        check_i3(snap(models), registry.ghost, resolved_id="a")


def test_i4_lru_bijection() -> None:
    """Duplicates always violate; phantoms and missing ids only at quiescence."""
    _, models = loaded("a", "b")
    check_i4(snap(models))
    with violation("I4"):
        check_i4(snap(models, lru=("a", "b", "a")), quiescent=False)
    check_i4(snap(models, lru=("a",)), quiescent=False)
    with violation("I4"):
        check_i4(snap(models, lru=("a",)))
    with violation("I4"):
        check_i4(snap(models, lru=("a", "b", "z")))
    with pytest.raises(InvariantSkipped):
        check_i4(snap(models, lru=None))


def test_i5_failed_remove_is_a_noop() -> None:
    """A failed remove must leave registry, LRU order and pins untouched."""
    _, models = loaded("a", "x", "b")
    before = snap(models)
    check_i5(before, snap(dict(models)), resolved_id="x")
    with violation("I5"):
        check_i5(before, snap(models, lru=("a", "b", "x")), resolved_id="x")
    with violation("I5"):
        check_i5(before, snap({k: v for k, v in models.items() if k != "x"}), resolved_id="x")


def test_i6_failed_eviction_preserves() -> None:
    """[P, A, B]: A fails: P and A stay in place; earlier victims stay gone."""
    _, models = loaded("v", "p", "a", "b")
    before = snap(models, pins=frozenset({"p"}))
    good = {k: m for k, m in models.items() if k != "v"}
    check_i6(before, snap(good, lru=("p", "a", "b")), evicted={"v"}, failed_candidate="a")
    with violation("I6"):  # B9: P and A dropped from the LRU
        check_i6(before, snap(good, lru=("b",)), evicted={"v"}, failed_candidate="a")
    with violation("I6"):
        check_i6(before, snap(good, lru=("p", "b", "a")), evicted={"v"}, failed_candidate="a")
    without_a = {k: m for k, m in good.items() if k != "a"}
    with violation("I6"):
        check_i6(before, snap(without_a, lru=("p", "b")), evicted={"v"}, failed_candidate="a")


def test_i7_resolved_id_is_the_key() -> None:
    """A model registered under another key, stray leases or stray LRU keys violate I7."""
    _, models = loaded("a")
    check_i7(snap(models))
    with violation("I7"):
        check_i7(snap({"alias": models["a"]}, lru=("alias",)))
    with violation("I7"):
        check_i7(snap(models, leases={"z": 1}))
    with violation("I7"):
        check_i7(snap(models, lru=("a", "z")))


def test_i8_composition() -> None:
    """Stacks disagreeing on keys/LRU/pins, or on outcomes, violate I8."""
    _, models = loaded("a", "b")
    check_i8({"d0": snap(models), "d1": snap(models)})
    with violation("I8"):
        check_i8([snap(models), snap(models, lru=("b", "a"))])
    check_i8_outcomes({"d0": ("ok", None), "d1": ("ok", None)})
    with violation("I8"):
        check_i8_outcomes({"d0": ("ok", None), "d1": ("raise", "LockTimeout")})


def test_i9_no_leaks() -> None:
    """At quiescence: empty lifecycle table; unregistered models torn down exactly once."""
    registry, models = loaded("a", "b")
    ghost = registry.ghost
    with violation("I9"):  # b constructed, not registered, never torn down
        check_i9(snap({"a": models["a"]}), ghost)
    models["b"].clear_cache()  # type: ignore[attr-defined]
    check_i9(snap({"a": models["a"]}), ghost)
    with violation("I9"):
        check_i9(snap({"a": models["a"]}, lifecycle={"q": (3, 1, False)}), ghost)
    with pytest.raises(InvariantSkipped):
        check_i9(snap(models), ghost, quiescent=False)


def test_i10_failures_leave_no_residue() -> None:
    """A failed add of a new id leaves no registration, LRU entry or lifecycle entry."""
    registry, models = loaded("a")
    before = snap(models)
    check_i10(before, snap(models), registry.ghost, resolved_id="b")
    with violation("I10"):
        check_i10(before, snap(models, lru=("a", "b")), registry.ghost, resolved_id="b")
    with violation("I10"):
        check_i10(before, snap(models, lifecycle={"b": (1, 1, False)}), resolved_id="b")
    registry.get_model("b")(model_id="b")  # constructed, never registered or torn down
    with violation("I10"):
        check_i10(before, snap(models), registry.ghost, resolved_id="b")


def test_i11_capacity() -> None:
    """Over max_size only by pinned/leased models; postcondition form after a cold add."""
    _, models = loaded("a", "b", "c")
    check_i11(snap(models, max_size=3))
    with violation("I11"):
        check_i11(snap(models, max_size=2))
    check_i11(snap(models, max_size=2, pins=frozenset({"a"})))
    with violation("I11"):
        check_i11(snap(models, max_size=3, in_flight_loads=1))
    check_i11(snap(models, max_size=2, pins=frozenset({"a", "b"})), added="c")
    with violation("I11"):
        check_i11(snap(models, max_size=2, pins=frozenset({"a"})), added="c")
    with pytest.raises(InvariantSkipped):
        check_i11(snap(models, max_size=None))


@pytest.mark.parametrize("on_full", ["wait", "refuse"])
def test_i11_under_a_safe_policy_forgives_only_documented_overflows(on_full: str) -> None:
    """Under "wait" and "refuse" pins and leases never excuse going over the bound, in
    the state and postcondition forms; the slack passed (the documented overflows) does.
    "proceed" keeps the pinned/leased allowance; the quiescent form is the same."""
    _, models = loaded("a", "b", "c")
    pinned = snap(models, max_size=2, pins=frozenset({"a"}))
    check_i11(pinned)
    with violation("I11"):
        check_i11(pinned, on_full=on_full)
    check_i11(pinned, on_full=on_full, slack=1)
    both = snap(models, max_size=2, pins=frozenset({"a", "b"}))
    check_i11(both, added="c")
    with violation("I11"):
        check_i11(both, added="c", on_full=on_full)
    check_i11(both, added="c", on_full=on_full, slack=1)
    check_i11(snap(models, max_size=3), added="c", on_full=on_full)
    check_i11(both, quiescent=True, on_full=on_full)  # pins fill the bound: pinned + 1


def test_documented_overflows_under_each_policy() -> None:
    """ "proceed" forgives what the stack counted; "wait" only lease-held and oversized
    adds, "refuse" only oversized ones, never more than were counted."""
    assert documented_overflows("proceed", 3, 0, 0) == 3
    assert documented_overflows("wait", 3, 1, 1) == 2
    assert documented_overflows("wait", 1, 2, 0) == 1
    assert documented_overflows("refuse", 3, 2, 1) == 1
    assert documented_overflows("refuse", 3, 2, 0) == 0
    assert SAFE_POLICIES == ("wait", "refuse")


def test_i12_pins_survive() -> None:
    """A pinned, registered id may only disappear through an explicit removal."""
    _, models = loaded("p", "a")
    before = snap(models, pins=frozenset({"p"}))
    after = snap({"a": models["a"]}, pins=frozenset({"p"}))
    with violation("I12"):
        check_i12(before, after)
    check_i12(before, after, removed=["p"])
    check_i12(before, snap(models))
    # An unpin that ends by restoring the bound may evict what it unpinned.
    check_i12(before, snap({"a": models["a"]}, pins=frozenset()))


def test_i13_leases() -> None:
    """clear_cache on a model in use, or while its id is leased, violates I13."""
    registry, models = loaded("a")
    ghost = registry.ghost
    check_i13(snap(models, leases={"a": 1}), ghost)
    ghost.clearing["a"] = 1
    with violation("I13"):
        check_i13(snap(models, leases={"a": 1}), ghost)
    del ghost.clearing["a"]
    with ghost.use(models["a"]):
        models["a"].clear_cache()  # type: ignore[attr-defined]
    with violation("I13"):
        check_i13(None, ghost)


def test_i14_needs_a_lock_probe() -> None:
    """Skipped without a probe; violated when the LRU lock was held in a callback."""
    registry = ScriptedRegistry()
    with pytest.raises(InvariantSkipped):
        check_i14(None, registry.ghost)
    held = [False]
    registry.ghost.lock_probe = lambda: held[0]
    registry.get_model("a")(model_id="a")
    check_i14(None, registry.ghost)
    held[0] = True
    registry.get_model("b")(model_id="b")
    with violation("I14"):
        check_i14(None, registry.ghost)


def test_i16_error_masking() -> None:
    """The first scripted failure must be the one raised; a torn-down target must not fail."""
    registry = ScriptedRegistry(Script(load_failures={"a": [1]}))
    ghost = registry.ghost
    mark = ghost.mark()
    with pytest.raises(ScriptedLoadError) as info:
        registry.get_model("a")(model_id="a")
    check_i16(info.value, ghost, since=mark)
    with violation("I16"):
        check_i16(TimeoutError("cleanup"), ghost, since=mark)
    with violation("I16"):
        check_i16(None, ghost, since=mark)
    check_i16(ExceptionGroup("g", [info.value]), ghost, since=mark)
    with violation("I16"):
        check_i16(ExceptionGroup("g", [ValueError()]), ghost, since=mark)
    model = registry.get_model("b")(model_id="b")
    mark = ghost.mark()
    model.clear_cache()
    with violation("I16"):  # B16: a timeout after the model was deleted
        check_i16(TimeoutError("late"), ghost, since=mark, target="b")
    check_i16(None, ghost, since=mark, target="b")


def test_i16_a_swallowed_unload_is_said_without_the_cache_s_restoration() -> None:
    """A remove that swallows its failed unload is told to let the error propagate: the
    message named "a restoration of its bound" as an alternative, which no manager
    without a bounded cache has and which the check never forgives here anyway."""
    registry = ScriptedRegistry(Script(unload_failures={"a": [1]}))
    ghost = registry.ghost
    model = registry.get_model("a")(model_id="a")
    mark = ghost.mark()
    with pytest.raises(ScriptedUnloadError):
        model.clear_cache()
    with violation("I16") as caught:
        check_i16(None, ghost, since=mark, target="a")
    assert str(caught.value).endswith(
        "the call returned normally although clear_cache of 'a' raised ScriptedUnloadError "
        "during it: a correct manager lets that error propagate from the call, never hides it"
    )


def test_i16_allows_only_what_a_restoration_marked_as_swallowed() -> None:
    """An add that timed out and whose restoration then met a failing unload raises
    its own timeout: allowed when the stack marked the unload error as swallowed by
    its restoration (and only with ``restored``); an unmarked one is still masked."""
    registry = ScriptedRegistry(Script(unload_failures={"a": [1, 2]}))
    ghost = registry.ghost
    model = registry.get_model("a")(model_id="a")
    mark = ghost.mark()
    with pytest.raises(ScriptedUnloadError) as info:
        model.clear_cache()
    timeout = TimeoutError("the add's own wait")
    with violation("I16"):  # unmarked: the add's own eviction error, masked
        check_i16(timeout, ghost, since=mark, restored=True)
    note_swallowed(info.value, "the cache's restoration")
    check_i16(timeout, ghost, since=mark, restored=True)
    with violation("I16"):  # no restoration ends this operation: still masked
        check_i16(timeout, ghost, since=mark)


def test_check_linearizable_glue() -> None:
    """A sequential history passes; a history returning an impossible token fails I15."""
    from lockstep._linearizability import Operation

    initial = initial_state(max_size=2)
    good = [
        Operation("t1", 0, 1, ("add", "a", None, False), ("ok", None)),
        Operation("t2", 2, 3, ("getitem", "a"), ("ok", "a#1")),
    ]
    assert check_linearizable(good, initial=initial).verdict == "ok"
    bad = [*good[:1], Operation("t2", 2, 3, ("getitem", "a"), ("ok", "a#2"))]
    with violation("I15"):
        check_linearizable(bad, initial=initial)


def test_check_all_reports_checked_skipped_violated() -> None:
    """check_all runs state invariants, skips on missing capabilities, collects violations."""
    registry, models = loaded("a")
    report = check_all(snap(models), registry.ghost, quiescent=True, capabilities=CAPABILITIES)
    assert report.ok
    assert set(report.checked) == {"I1", "I2", "I4", "I7", "I9", "I11", "I13"}
    skipped = dict(report.skipped)
    assert "lock probe" in skipped["I14"]
    assert "operation invariant" in skipped["I5"]
    bare = check_all(
        Snapshot(registered=models, lifecycle={}, leases={}),
        registry.ghost,
        quiescent=True,
        capabilities={"leases", "lifecycle", "aliases"},
    )
    assert "capability missing: lru" in dict(bare.skipped)["I4"]
    assert "I4" not in bare.checked
    broken = check_all(
        snap(models, lru=("a", "a")), registry.ghost, quiescent=True, capabilities=CAPABILITIES
    )
    assert [v.invariant for v in broken.violated] == ["I4"]
    with violation("I4"):
        broken.raise_first()
    assert "VIOLATED" in str(broken)


def test_check_all_capacity_slack() -> None:
    """An over-capacity admission whose pin went away needs the slack to pass I11."""
    registry, models = loaded("a", "b")
    over = snap(models, max_size=1)
    strict = check_all(over, registry.ghost, quiescent=True, capabilities=CAPABILITIES)
    assert [v.invariant for v in strict.violated] == ["I11"]
    lenient = check_all(
        over, registry.ghost, quiescent=True, capabilities=CAPABILITIES, capacity_slack=1
    )
    assert lenient.ok
    assert "I11" in lenient.checked


def test_i11_at_quiescence_the_bound_has_come_back() -> None:
    """With no lease and no load in flight, only pins filling the bound excuse exceeding it."""
    registry, models = loaded("a", "b", "c")
    pinned_one = snap(models, max_size=2, pins=frozenset({"a"}))
    check_i11(pinned_one)  # mid-run: the pinned model may have been admitted over the bound
    with violation("I11"):
        check_i11(pinned_one, quiescent=True)  # at quiescence b or c should have gone
    check_i11(pinned_one, quiescent=True, slack=1)  # a failed restoration leaves one over
    check_i11(snap(models, max_size=2, pins=frozenset({"a", "b"})), quiescent=True)  # c: +1
    with violation("I11"):
        check_i11(
            snap({**models, **loaded("d")[1]}, max_size=2, pins=frozenset({"a", "b"})),
            quiescent=True,
        )
    leased = snap(models, max_size=2, leases={"b": 1})
    check_i11(leased, quiescent=True)  # a lease still open: the state form applies
    report = check_all(pinned_one, registry.ghost, quiescent=True, capabilities=CAPABILITIES)
    assert [v.invariant for v in report.violated] == ["I11"]


def _state(name: str, **fields: object) -> Any:
    from lockstep.lowlevel import ThreadState

    values: dict[str, object] = {
        "daemon": False,
        "runnable": True,
        "waiting_for": "",
        "bounded": False,
        "lost_wakeup": False,
    }
    values.update(fields)
    return ThreadState(name=name, **values)  # type: ignore[arg-type]


def test_i17_liveness() -> None:
    """A lost wake-up, or every thread waiting with a timeout pending, violates I17;
    threads that can run, or waits without a timeout (lockstep's deadlock), do not."""
    waiting = {"runnable": False, "waiting_for": "Condition.wake Condition#1", "bounded": True}
    check_i17([_state("main"), _state("R", **waiting)])
    with violation("I17"):
        check_i17([_state("main"), _state("R", **waiting, lost_wakeup=True)])
    with pytest.raises(InvariantViolation, match="masked by timeouts"):
        check_i17(
            [_state("main", runnable=False, waiting_for="Thread.join"), _state("R", **waiting)]
        )
    unbounded = {**waiting, "bounded": False}
    check_i17([_state("main", runnable=False, waiting_for="Thread.join"), _state("R", **unbounded)])
    # a zero-timeout try (its time is already up) is not a wait that lasts
    trying = {**waiting, "waiting_for": "Semaphore.acquire Semaphore#1", "due": True}
    check_i17([_state("main", **trying)])
    check_i17([_state("main", **trying), _state("R", **waiting)])
    # only daemon threads left (a TTL timer counting down): the program is ending
    daemon_timer = {**waiting, "waiting_for": "Event.wait Event#1", "daemon": True}
    check_i17([_state("Thread-1", **daemon_timer), _state("Thread-2", **daemon_timer)])
    with pytest.raises(InvariantViolation, match="masked by timeouts"):
        check_i17(
            [
                _state("main", runnable=False, waiting_for="Thread.join"),
                _state("Thread-1", **daemon_timer),
            ]
        )
    with pytest.raises(InvariantSkipped):
        check_i17(None)


def test_i18_no_lease_outlives_its_block() -> None:
    """More leases on an id than open lease blocks violate I18."""
    _, models = loaded("a")
    check_i18(snap(models, leases={"a": 1}), {"a": 1})
    check_i18(snap(models, leases={}), {"a": 2})
    with violation("I18"):
        check_i18(snap(models, leases={"a": 1}), {})
    with violation("I18"):
        check_i18(snap(models, leases={"a": 2}), {"a": 1})
    with pytest.raises(InvariantSkipped):
        check_i18(snap(models, leases=None), {})


def test_i19_statistics_count_the_ghost_events() -> None:
    """Counters must equal the ghost's constructions and teardowns; lock_timeouts at least
    the timed-out operations."""
    registry, models = loaded("a", "b")
    models["a"].clear_cache()  # type: ignore[attr-defined]
    good = {"loads": 2, "load_failures": 0, "removals": 1, "removal_failures": 0}
    check_i19(good, registry.ghost)
    check_i19({**good, "lock_timeouts": 1}, registry.ghost, timeouts=1)
    with pytest.raises(InvariantViolation, match=r"loads=1 but the factory returned a model 2"):
        check_i19({**good, "loads": 1}, registry.ghost)
    with pytest.raises(InvariantViolation, match=r"removals=2 but clear_cache returned 1"):
        check_i19({**good, "removals": 2}, registry.ghost)
    with pytest.raises(InvariantViolation, match=r"lock_timeouts=0 but 1 call\(s\) raised"):
        check_i19({**good, "lock_timeouts": 0}, registry.ghost, timeouts=1)
    with pytest.raises(InvariantSkipped):
        check_i19({"loads": 2}, registry.ghost)


def test_i5_allows_only_the_restoration_a_remove_ends_with() -> None:
    """A failed remove over a cache above its bound may evict the excess of other,
    unprotected models (the restoration it ends with), never its target, never more."""
    _, models = loaded("a", "b", "c")
    before = snap(models, max_size=2, lru=["a", "b", "c"])
    after = snap({k: models[k] for k in ("b", "c")}, max_size=2, lru=["b", "c"])
    check_i5(before, after, resolved_id="c")  # a went: the excess of one
    with violation("I5"):
        check_i5(before, after, resolved_id="a")  # the target itself went
    fewer = snap({"c": models["c"]}, max_size=2, lru=["c"])
    with violation("I5"):
        check_i5(before, fewer, resolved_id="c")  # two went: more than the excess
    pinned = snap(models, max_size=2, lru=["a", "b", "c"], pins=frozenset({"a"}))
    with violation("I5"):
        check_i5(pinned, after, resolved_id="c")  # a pinned model never goes


def test_the_details_are_the_verbose_detail_never_the_message() -> None:
    """The message is the reader's; the checker's data (one-line values, I15's multi-line
    explanation) is `detail`, shown as lines (not a repr with escaped newlines) only
    under --verbose."""
    error = InvariantViolation("I15", "not linearizable", explanation="first\nsecond", at=3)
    assert str(error) == "I15 violated: not linearizable"
    assert error.detail.splitlines() == ["at=3", "explanation:", "  first", "  second"]
    error.amend(" (running then: nothing)")
    assert str(error) == "I15 violated: not linearizable (running then: nothing)"


def test_i15_s_order_says_which_of_its_calls_raised() -> None:
    """I15's order lists remove('a'), then says 'a' was loaded after those calls: the
    order says that remove raised (and so changed nothing), or the reader cannot see
    why 'a' is still there."""
    from lockstep.linearizability import UNKNOWN, Operation, check_linearizability
    from models_spec._harness.wording import linearizability_message
    from models_spec.spec import expand_adds, explain, step

    history = [
        Operation("main", 0, 1, ("add", "a", None, False), ("ok", None)),
        Operation("T1", 2, 3, ("remove", "a"), ("raise", "ScriptedUnloadError")),
        Operation("T3", 4, 5, ("keys",), ("ok", ())),
    ]
    initial = initial_state(max_size=2, script=Script(unload_failures={"a": [1]}))
    result = check_linearizability(expand_adds(history), step, initial=initial, explain=explain)
    assert result.verdict == "illegal"
    words = linearizability_message(result, history, initial, step, lru=False, unknown=UNKNOWN)
    assert words == (
        "thread T3's keys() returned [], which no one-at-a-time order of the threads' calls "
        "explains (each call taking effect at one instant between its call and its return). "
        "The order that explains the most: main: add_model('a'); T1: remove('a') (raised "
        "ScriptedUnloadError). After those calls 'a' was loaded, so a correct manager's "
        "keys() would have returned ['a'] there"
    )

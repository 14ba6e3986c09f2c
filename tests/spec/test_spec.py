"""Unit tests of models_spec.spec: each operation's outcome and the step function."""

from __future__ import annotations

import pytest

from models_spec.fakes import Script, ScriptedLoadError, ScriptedUnloadError
from models_spec.spec import (
    Spec,
    SpecState,
    apply,
    encode_outcome,
    explain,
    initial_state,
    resolve,
    step,
)


def make(max_size: int = 3, **kwargs: object) -> Spec:
    return Spec(initial_state(max_size=max_size, **kwargs))  # type: ignore[arg-type]


def test_initial_state_validates() -> None:
    """Bad max_size and thresholds are rejected naming the value."""
    with pytest.raises(ValueError, match="max_size"):
        initial_state(max_size=0)
    with pytest.raises(ValueError, match="memory_threshold"):
        initial_state(memory_threshold=2.0)
    assert initial_state(max_size=2) == SpecState(max_size=2)


def test_add_registers_tokens_and_lru() -> None:
    """Cold adds register '<id>#<attempt>' and append to the LRU; warm adds refresh."""
    spec = make()
    spec.add_model("a")
    spec.add_model("b")
    spec.add_model("a")
    assert spec.lru_order() == ["b", "a"]
    assert spec["a"] == "a#1"
    assert spec.keys() == ["a", "b"]
    assert len(spec) == 2
    assert "a" in spec
    assert "z" not in spec


def test_alias_is_the_key() -> None:
    """add_model(C, alias=A) loads under A (chosen semantics 1)."""
    spec = make()
    spec.add_model("c")
    spec.add_model("c", model_id_alias="a")
    assert spec.keys() == ["a", "c"]
    assert spec["a"] == "a#1"
    assert resolve("c", "a") == "a"
    assert resolve("c", None) == "c"


def test_capacity_evicts_only_what_it_needs() -> None:
    """A full cache of 2 evicts just the least recent model (chosen semantics 6)."""
    spec = make(2)
    spec.add_model("a")
    spec.add_model("b")
    spec.add_model("c")
    assert spec.lru_order() == ["b", "c"]
    assert spec.state.unload_attempts == (("a", 1),)


def test_pinned_and_leased_are_skipped_and_overflow_is_counted() -> None:
    """Pins and leases are never evicted; only they left: admit over capacity."""
    spec = make(2)
    spec.pin_model("a")
    spec.add_model("a")
    spec.add_model("b")
    spec.lease("b")
    spec.add_model("c")
    assert spec.keys() == ["a", "b", "c"]
    assert spec.state.overflows == 1
    spec.release("b")
    spec.add_model("d")
    assert spec.lru_order() == ["a", "d"]  # back within capacity: b and c both go


def test_failed_load_leaves_no_residue_but_keeps_evictions() -> None:
    """A constructor failure raises the scripted error; victims stay evicted."""
    spec = make(1, script=Script(load_failures={"b": [1]}))
    spec.add_model("a")
    with pytest.raises(ScriptedLoadError, match="'b' \\(attempt 1\\)"):
        spec.add_model("b", pin=True)
    assert spec.keys() == []
    assert spec.lru_order() == []
    assert spec.pinned() == frozenset()
    spec.add_model("b")
    assert spec["b"] == "b#2"


def test_failed_eviction_preserves_positions() -> None:
    """B9 shape: [P, A, B] full, evicting A fails: nothing moves, the add fails."""
    spec = make(3, script=Script(unload_failures={"a": [1]}))
    for rid in ("p", "a", "b"):
        spec.add_model(rid)
    spec.pin_model("p")
    with pytest.raises(ScriptedUnloadError, match="'a'"):
        spec.add_model("x")
    assert spec.lru_order() == ["p", "a", "b"]
    assert "x" not in spec


def test_failed_remove_is_a_noop_and_unknown_remove_is_silent() -> None:
    """I5/B6: [A, X, B] stays [A, X, B]; removing an unknown id does nothing."""
    spec = make(3, script=Script(unload_failures={"x": [1]}))
    for rid in ("a", "x", "b"):
        spec.add_model(rid)
    with pytest.raises(ScriptedUnloadError):
        spec.remove("x")
    assert spec.lru_order() == ["a", "x", "b"]
    before = spec.state
    spec.remove("nope")
    assert spec.state == before
    spec.remove("x")
    assert spec.lru_order() == ["a", "b"]


def test_remove_of_leased_times_out_without_change() -> None:
    """remove waits for leases; with nobody releasing it raises LockTimeout."""
    spec = make()
    assert spec.acquire("a") == "a#1"
    outcome, state = apply(spec.state, ("remove", "a"))
    assert outcome == ("raise", "LockTimeout")
    assert state == spec.state


def test_clear_attempts_all_and_groups_failures() -> None:
    """clear() removes what it can and raises an ExceptionGroup; pins survive."""
    spec = make(script=Script(unload_failures={"b": [1]}))
    for rid in ("a", "b", "c"):
        spec.add_model(rid)
    spec.pin_model("a")
    with pytest.raises(ExceptionGroup) as info:
        spec.clear()
    assert [type(e) for e in info.value.exceptions] == [ScriptedUnloadError]
    assert spec.keys() == ["b"]
    assert spec.pinned() == frozenset({"a"})
    spec.clear()
    assert spec.keys() == []


def test_refresh_pin_unpin_and_lookup_errors() -> None:
    """refresh of an unknown id is a no-op; getitem/lease of unknown ids raise ModelNotFound."""
    spec = make()
    spec.add_model("a")
    spec.add_model("b")
    spec.refresh("a")
    spec.refresh("zzz")
    assert spec.lru_order() == ["b", "a"]
    spec.pin_model("q")
    spec.unpin_model("q")
    assert spec.pinned() == frozenset()
    with pytest.raises(KeyError):
        spec["zzz"]
    with pytest.raises(KeyError):
        spec.lease("zzz")


def test_invalid_arguments_change_nothing() -> None:
    """Bad ids raise InvalidArgument(Type) with the state unchanged."""
    spec = make()
    spec.add_model("a")
    before = spec.state
    assert apply(before, ("add", "", None))[0] == ("raise", "InvalidArgument")
    assert apply(before, ("add", 3, None))[0] == ("raise", "InvalidArgumentType")
    assert apply(before, ("add", "b", ""))[0] == ("raise", "InvalidArgument")
    assert apply(before, ("add", "b", None, "yes"))[0] == ("raise", "InvalidArgumentType")
    assert apply(before, ("remove", None)) == (("raise", "InvalidArgumentType"), before)
    with pytest.raises(ValueError, match="unknown operation"):
        apply(before, ("explode",))
    with pytest.raises(ValueError, match="elements"):
        apply(before, ("remove",))


def test_unknown_registry_id_after_eviction() -> None:
    """The registry is asked after eviction, so a full cache evicts first."""
    spec = make(1, universe=["a"])
    spec.add_model("a")
    outcome, state = apply(spec.state, ("add", "b", None))
    assert outcome == ("raise", "UnknownModelId")
    assert state.registered == ()
    assert state.load_attempts == (("a", 1),)


def test_memory_pressure_evicts_rounds_of_three() -> None:
    """Readings below the threshold evict up to 3 per round, re-measuring between rounds."""
    script = Script(memory=[1.0, 1.0, 1.0, 1.0, 0.1, 0.1, 0.9])
    spec = make(10, script=script, memory_threshold=0.5)
    for rid in "abcd":
        spec.add_model(rid)
    spec.add_model("e")
    assert spec.lru_order() == ["e"]
    assert spec.state.probe_calls == 7


def test_a_failed_memory_eviction_ends_the_add_before_the_re_measure() -> None:
    """A round evicts before the probe is read again, as the core does: a failed
    clear_cache in round one leaves one reading taken, so the next add reads the
    script from the second reading on (a spec that chose every round before
    evicting would have read two and disagreed with the core from then on)."""
    script = Script(memory=[1.0, 1.0, 0.1, 0.1, 0.9], unload_failures={"a": [1]})
    spec = make(3, script=script, memory_threshold=0.5)
    spec.add_model("a")
    spec.add_model("b")
    with pytest.raises(ScriptedUnloadError, match="'a'"):
        spec.add_model("c")
    assert spec.state.probe_calls == 3
    assert spec.lru_order() == ["a", "b"]
    spec.add_model("c")  # reads 0.1 (evicts a and b), then 0.9
    assert spec.state.probe_calls == 5
    assert spec.lru_order() == ["c"]


def test_step_accepts_expected_rejects_others_and_handles_timeouts() -> None:
    """step: right outputs pass, wrong fail, LockTimeout is effect-free, UNKNOWN applies."""
    s0 = initial_state(max_size=2)
    ok, s1 = step(s0, ("add", "a", None, False), ("ok", None))
    assert ok
    assert s1.models == {"a": "a#1"}
    assert step(s1, ("getitem", "a"), ("ok", "a#1"))[0]
    assert not step(s1, ("getitem", "a"), ("ok", "a#2"))[0]
    assert not step(s1, ("getitem", "b"), ("ok", "b#1"))[0]
    assert step(s1, ("add", "b", None), ("raise", "LockTimeout")) == (True, s1)
    ok, s2 = step(s1, ("remove", "a"), "unknown")
    assert ok
    assert s2.registered == ()
    assert step(s1, ("keys",), ["ok", ["a"]])[0]
    ok, s3 = step(s1, ("add", "b", None), ("ok", None))
    assert step(s3, ("keys",), ("ok", ["b", "a"]))[0]  # any order
    assert {s1, s2, s0} == {s0, s1, s2}  # hashable


def test_step_with_lockstep_unknown_sentinel() -> None:
    """lockstep's UNKNOWN output is 'any output' as well."""
    from lockstep._linearizability import UNKNOWN

    ok, state = step(initial_state(), ("add", "a", None), UNKNOWN)
    assert ok
    assert state.models == {"a": "a#1"}


def test_encode_outcome() -> None:
    """Real results encode to the spec's outputs, groups by sorted member names; a plain
    KeyError is "not loaded" (ModelNotFound), as a user's ``self.models[id]`` raises it."""
    assert encode_outcome(3) == ("ok", 3)
    assert encode_outcome(error=KeyError("x")) == ("raise", "ModelNotFound")
    assert encode_outcome(error=LookupError("x")) == ("raise", "LookupError")
    group = ExceptionGroup("g", [ValueError(), KeyError()])
    assert encode_outcome(error=group) == ("raise", "ExceptionGroup(ModelNotFound,ValueError)")


def test_scripted_failures_match_the_fakes_attempt_numbering() -> None:
    """Failures carry the same (id, attempt) the fakes would report."""
    spec = make(script=Script(load_failures={"a": [2]}))
    spec.add_model("a")
    spec.remove("a")
    with pytest.raises(ScriptedLoadError) as info:
        spec.add_model("a")
    assert (info.value.resolved_id, info.value.attempt) == ("a", 2)


# ------------------------------------------------------------ three-point adds


def _two(max_size: int = 2, script: Script | None = None) -> SpecState:
    state = initial_state(max_size=max_size, script=script)
    for rid in ("a", "b"):
        _, state = apply(state, ("add", rid, None, False))
    return state


def _ok(state: SpecState, op: tuple[object, ...], output: object = ("ok", None)) -> SpecState:
    ok, after = step(state, op, output)
    assert ok, (op, output)
    return after


def test_admit_chooses_evict_unloads_complete_registers() -> None:
    """Admission chooses the least recent and holds a slot; eviction unloads it;
    completion registers."""
    state = _ok(_two(), ("admit", 1, "c", None, True))
    assert state.leaving == ((1, "a"),)
    assert state.lru == ("a", "b")  # chosen, not gone yet
    assert state.in_flight() == {"c"}
    state = _ok(state, ("evict", 1))
    assert state.lru == ("b",)
    assert state.leaving == ()
    assert "c" not in state.pins  # pinned only on success
    state = _ok(state, ("complete", 1, "c", None, True))
    assert state.lru == ("b", "c")
    assert state.models["c"] == "c#1"
    assert "c" in state.pins
    assert state.admitted == ()


def test_the_eviction_window_victims_stay_visible_and_fixed() -> None:
    """Between an admission and its eviction the victim is still listed by every
    observer; a removal of another id does not undo the choice; uses, leases,
    removals, pins and adds of the victim wait (are blocked) until it is gone."""
    state = _ok(_two(), ("admit", 1, "c", None, False))
    state = _ok(state, ("remove", "b"))  # room made meanwhile: the choice stands
    assert _ok(state, ("keys",), ("ok", ("a",))) == state
    assert step(state, ("contains", "a"), ("ok", True))[0]
    assert step(state, ("len",), ("ok", 1))[0]
    assert step(state, ("lru",), ("ok", ("a",)))[0]
    for op in (
        ("refresh", "a"),
        ("getitem", "a"),
        ("lease", "a"),
        ("remove", "a"),
        ("pin", "a"),
        ("admit", 2, "a", None, False),
        ("complete", 1, "c", None, False),
        ("clear",),
    ):
        assert not step(state, op, ("ok", None))[0], op
    assert step(state, ("unpin", "a"), ("ok", None))[0]  # pins are configuration
    state = _ok(state, ("evict", 1))
    assert step(state, ("keys",), ("ok", ()))[0]
    assert step(state, ("getitem", "a"), ("raise", "ModelNotFound"))[0]
    state = _ok(state, ("complete", 1, "c", None, False))
    assert state.lru == ("c",)


def test_an_admission_that_needs_room_waits_for_another_eviction() -> None:
    """Evictions run one at a time; an admission needing no room does not wait."""
    state = _ok(_two(max_size=2), ("admit", 1, "c", None, False))
    assert not step(state, ("admit", 2, "d", None, False), ("ok", None))[0]
    roomy = _ok(_two(max_size=4), ("admit", 1, "c", None, False))
    assert roomy.leaving == ()
    assert step(roomy, ("admit", 2, "d", None, False), ("ok", None))[0]


def test_victims_stay_evicted_after_a_failed_completion() -> None:
    state = _two(script=Script(load_failures={"c": (1,)}))
    state = _ok(_ok(state, ("admit", 1, "c", None, False)), ("evict", 1))
    ok, after = step(state, ("complete", 1, "c", None, False), ("raise", "ScriptedLoadError"))
    assert ok
    assert after.lru == ("b",)
    assert after.in_flight() == frozenset()
    assert dict(after.load_attempts)["c"] == 1
    # The completion's outcome is checked: success is not what the script says.
    assert not step(state, ("complete", 1, "c", None, False), ("ok", None))[0]


def test_reservations_count_toward_capacity() -> None:
    """Two slots held, cache of 3 with a: a third admission chooses a, a fourth
    needing room waits for that eviction."""
    state = initial_state(max_size=3)
    _, state = apply(state, ("add", "a", None, False))
    state = _ok(state, ("admit", 1, "x", None, False))
    state = _ok(state, ("admit", 2, "y", None, False))
    assert state.leaving == ()  # a + 2 slots = 3: nothing chosen yet
    state = _ok(state, ("admit", 3, "z", None, False))
    assert state.leaving == ((3, "a"),)
    state = _ok(state, ("evict", 3))
    assert state.lru == ()
    # A slot of the same id is shared: no room needed.
    shared = _ok(state, ("admit", 4, "z", None, False))
    assert shared.in_flight() == {"x", "y", "z"}
    # With no evictable model left, an admission cannot happen while loads are in flight.
    assert not step(state, ("admit", 5, "w", None, False), ("ok", None))[0]


def test_a_timeout_changes_nothing_but_releases_an_admitted_slot() -> None:
    state = _two()
    ok, same = step(state, ("complete", 7, "c", None, False), ("raise", "LockTimeout"))
    assert ok
    assert (same.registered, same.lru, same.admitted) == (state.registered, state.lru, ())
    assert same.closed == {7}
    # Once timed out, its admission can no longer happen; its eviction is a no-op.
    assert not step(same, ("admit", 7, "c", None, False), ("ok", None))[0]
    assert step(same, ("evict", 7), ("ok", None)) == (True, same)
    _, admitted = step(state, ("admit", 7, "c", None, False), "unknown")
    # A timed-out completion cannot overtake the eviction its admission chose.
    assert not step(admitted, ("complete", 7, "c", None, False), ("raise", "LockTimeout"))[0]
    _, evicted = step(admitted, ("evict", 7), "unknown")
    ok, after = step(evicted, ("complete", 7, "c", None, False), ("raise", "LockTimeout"))
    assert ok
    assert after.lru == ("b",)  # the admission's victim stays evicted
    assert after.admitted == ()
    assert after.closed == frozenset()


def test_a_completion_follows_its_admission_and_eviction() -> None:
    state = _two()
    assert not step(state, ("complete", 1, "c", None, False), ("ok", None))[0]
    assert not step(state, ("evict", 1), ("ok", None))[0]
    admitted = _ok(state, ("admit", 1, "c", None, False))
    assert not step(admitted, ("admit", 1, "c", None, False), ("ok", None))[0]


def test_warm_hit_at_admission_and_joined_hit_at_completion() -> None:
    """A registered id hits at admission (LRU moves); a slot whose id got loaded joins."""
    state = _ok(_two(max_size=3), ("admit", 1, "a", None, False))
    assert state.lru == ("b", "a")
    state = _ok(_ok(state, ("evict", 1)), ("complete", 1, "a", None, False))
    state = _ok(_ok(state, ("admit", 2, "c", None, False)), ("evict", 2))
    state = _ok(_ok(state, ("admit", 3, "c", None, True)), ("evict", 3))
    state = _ok(state, ("complete", 2, "c", None, False))
    state = _ok(state, ("refresh", "b"))
    state = _ok(state, ("complete", 3, "c", None, True))
    assert state.lru == ("a", "c", "b")  # the joined hit does not move c
    assert "c" in state.pins
    assert dict(state.load_attempts)["c"] == 1


def test_a_warm_hit_cannot_complete_after_its_model_is_gone() -> None:
    """B4: a hit admitted while X was loaded cannot return after X was removed."""
    state = _two()
    admitted = _ok(_ok(state, ("admit", 1, "a", None, False)), ("evict", 1))
    removed = _ok(admitted, ("remove", "a"))
    assert not step(removed, ("complete", 1, "a", None, False), ("ok", None))[0]
    assert step(admitted, ("complete", 1, "a", None, False), ("ok", None))[0]


def test_a_failed_eviction_is_the_adds_error() -> None:
    """The chosen victim's clear_cache fails at the eviction: it stays, in place."""
    state = _ok(_two(script=Script(unload_failures={"a": (1,)})), ("admit", 1, "c", None, False))
    assert not step(state, ("evict", 1), ("ok", None))[0]
    failed = _ok(state, ("evict", 1), ("raise", "ScriptedUnloadError"))
    assert failed.lru == ("a", "b")
    assert failed.leaving == ()
    assert not step(failed, ("complete", 1, "c", None, False), ("ok", None))[0]
    done = _ok(failed, ("complete", 1, "c", None, False), ("raise", "ScriptedUnloadError"))
    assert done.admitted == ()


def test_acquire_completes_with_a_lease() -> None:
    state = _ok(_ok(_two(max_size=3), ("admit", 1, "c", None, False)), ("evict", 1))
    ok, state = step(state, ("complete", 1, "c", None, False, True), ("ok", "c#1"))
    assert ok
    assert state.lease_counts == {"c": 1}


def _full_of_leases(on_full: str) -> SpecState:
    """A cache of 2 holding ``a`` (leased) and ``b`` (pinned): nothing is evictable."""
    state = initial_state(max_size=2, on_full=on_full)
    for op in (("add", "a", None, False), ("add", "b", None, True), ("lease", "a")):
        _, state = apply(state, op)
    return state


def test_on_full_is_validated() -> None:
    with pytest.raises(ValueError, match="on_full"):
        initial_state(on_full="drop")


def test_refuse_raises_cache_full_and_changes_nothing() -> None:
    """on_full="refuse": a cold add into a cache full of pinned or leased models
    raises CacheFull at its completion, having evicted and reserved nothing."""
    state = _full_of_leases("refuse")
    assert apply(state, ("add", "c", None, False))[0] == ("raise", "CacheFull")
    admitted = _ok(state, ("admit", 1, "c", None, False))
    assert admitted.leaving == ()
    assert admitted.in_flight() == frozenset()
    done = _ok(admitted, ("complete", 1, "c", None, False), ("raise", "CacheFull"))
    assert done.models == state.models
    assert not step(admitted, ("complete", 1, "c", None, False), ("ok", None))[0]


def test_wait_blocks_unless_the_thread_holds_a_lease() -> None:
    """on_full="wait": the admission cannot take effect while the cache is full
    (a timeout is always legal), except for a thread holding a lease, whose add
    is admitted over the bound; once a lease ends the add evicts as usual."""
    state = _full_of_leases("wait")
    assert not step(state, ("admit", 1, "c", None, False), ("ok", None))[0]
    assert step(state, ("add", "c", None, False), ("raise", "LockTimeout"))[0]
    over = _ok(state, ("admit", 1, "c", None, False, True))
    assert over.overflows == state.overflows + 1
    assert apply(state, ("add", "c", None, False, True))[0] == ("ok", None)
    released = _ok(state, ("release", "a"))
    admitted = _ok(released, ("admit", 1, "c", None, False))
    assert admitted.leaving == ((1, "a"),)


def test_proceed_admits_over_the_bound() -> None:
    state = _full_of_leases("proceed")
    assert _ok(state, ("admit", 1, "c", None, False)).overflows == state.overflows + 1


def test_explain_says_what_the_spec_expected_and_what_the_code_did() -> None:
    """I15 names, for each rejected operation, the spec's outcome and the code's."""
    s0 = initial_state(max_size=2)
    _, s1 = step(s0, ("add", "a", None, False), ("ok", None))
    assert explain(s1, ("getitem", "a"), ("ok", "a#1")) is None  # accepted: nothing to say
    assert explain(s1, ("keys",), ("ok", ())) == (
        "the spec says it returns ('a',) here; the code returns ()"
    )
    assert explain(s1, ("getitem", "b"), ("ok", "b#1")) == (
        "the spec says it raises ModelNotFound here; the code returns 'b#1'"
    )
    assert explain(s1, ("remove", "a"), ("raise", "ScriptedUnloadError")) == (
        "the spec says it returns normally here; the code raises ScriptedUnloadError"
    )
    assert explain(s1, ("keys",), "unknown") is None  # any outcome is legal


def test_an_admission_never_counts_on_room_a_joined_load_takes_back() -> None:
    """Adds 1 and 2 of c share a slot; 2 loads c while 1 still holds its share (a join).
    Evicting c would make no room (1 loads it again): an admission of d skips it and
    cannot take effect while 1 is pending; once 1 completes (a joined hit), c goes."""
    state = initial_state(max_size=1, on_full="refuse")
    state = _ok(state, ("admit", 1, "c", None, False))
    state = _ok(state, ("admit", 2, "c", None, False))
    state = _ok(state, ("evict", 2))
    state = _ok(state, ("complete", 2, "c", None, False))
    assert state.joined() == {"c"}
    assert not step(state, ("admit", 3, "d", None, False), ("ok", None))[0]
    state = _ok(state, ("pin", "c"))  # c could not go anyway: the policy decides
    refused = _ok(state, ("admit", 3, "d", None, False))
    assert refused.leaving == ()
    assert step(refused, ("complete", 3, "d", None, False), ("raise", "CacheFull"))[0]
    state = _ok(_ok(state, ("unpin", "c")), ("evict", 1))
    state = _ok(state, ("complete", 1, "c", None, False))  # the joined hit
    assert state.joined() == frozenset()
    state = _ok(state, ("admit", 3, "d", None, False))
    assert state.leaving == ((3, "c"),)

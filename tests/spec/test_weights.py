"""Weight-based capacity in the spec, in I11/I5, and the core judged by both.

The sequential spec counts a model with the weight the weigher gives it once
it is loaded; a load in flight counts with the weight its id had when last
loaded (0 the first time), and the bound comes back right after the load if
that estimate was low.  The core is run through the same operations and
must agree; two broken policies (weight ignored at admission, weight
ignored by restoration) must be caught.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import pytest

from modelmanager import ModelManager, WithFixedSizeCache
from modelmanager.decorators._cache_policy import CapacityPolicy
from models_spec.adapter import WEIGHTED_CORE, CoreAdapter, Snapshot, core_adapter_named
from models_spec.fakes import LOAD, Script, ScriptedRegistry
from models_spec.invariants import InvariantSkipped, InvariantViolation, check_i5, check_i11
from models_spec.spec import SpecState, apply, initial_state

WEIGHTS: Mapping[str, int] = {"a": 2, "b": 2, "c": 5, "p": 1, "x": 5, "y": 4}


def spec(script: Script | None = None, **kwargs: Any) -> SpecState:
    settings: dict[str, Any] = {"max_size": None, "max_weight": 6, "weights": WEIGHTS}
    settings.update(kwargs)
    return initial_state(script=script, **settings)


def run(state: SpecState, *ops: tuple[object, ...]) -> tuple[list[object], SpecState]:
    outcomes = []
    for op in ops:
        outcome, state = apply(state, op)
        outcomes.append(outcome)
    return outcomes, state


def add(model_id: str, pin: bool = False) -> tuple[object, ...]:
    return ("add", model_id, None, pin)


# -- the sequential spec ------------------------------------------------------------


def test_weight_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="max_weight too"):
        initial_state(max_size=None)
    with pytest.raises(ValueError, match="max_weight"):
        initial_state(max_weight=0)
    with pytest.raises(ValueError, match="max_weight"):
        initial_state(max_weight=True)
    with pytest.raises(ValueError, match="weight of 'a'"):
        initial_state(max_weight=3, weights={"a": -1})
    with pytest.raises(ValueError, match="default_weight"):
        initial_state(max_weight=3, default_weight=-2)
    state = initial_state(max_weight=3, weights={"a": 2})
    assert (state.config.weight_of("a"), state.config.weight_of("z")) == (2, 1)


def test_a_first_load_counts_nothing_and_the_bound_comes_back_after_it() -> None:
    """c's weight is unknown before its first load: nothing is evicted for it
    beforehand; once loaded the cache is at 9 > 6 and restores, least recent
    first, never evicting c itself."""
    outcomes, state = run(spec(), add("a"), add("b"), add("c"))
    assert outcomes == [("ok", None)] * 3
    assert state.lru == ("c",)
    assert state.weight() == 5
    assert dict(state.unload_attempts) == {"a": 1, "b": 1}


def test_a_known_weight_evicts_before_the_load() -> None:
    """The second load of c counts its weight up front: a and b go before the
    constructor runs, so a failing load leaves them evicted (victims stay
    evicted) and nothing registered; the first load's failure evicts nothing."""
    script = Script()
    script.set_outcome(LOAD, "c", 1, fail=True)
    script.set_outcome(LOAD, "c", 3, fail=True)
    outcomes, state = run(spec(script), add("a"), add("b"), add("c"))
    assert outcomes[-1] == ("raise", "ScriptedLoadError")
    assert state.lru == ("a", "b")  # first load: estimate 0, nothing evicted for it
    outcomes, state = run(state, add("c"), ("remove", "c"), add("a"), add("b"))
    assert state.lru == ("a", "b")
    outcomes, state = run(state, add("c"))
    assert outcomes == [("raise", "ScriptedLoadError")]
    assert state.lru == ()  # evicted for c's known weight before its failed load


def test_count_and_weight_bound_together() -> None:
    _, state = run(spec(max_size=2, max_weight=10), add("p"), add("a"), add("b"))
    assert state.lru == ("a", "b")  # the count bound: p went although the weight fits
    _, state = run(state, add("c"))
    assert state.lru == ("b", "c")  # 2 + 5 <= 10 but 3 models > 2


def test_a_model_heavier_than_the_bound_is_admitted_alone_whatever_the_policy() -> None:
    """x (5) never fits beside a pinned p (1) under 4; known to be heavier than
    the bound alone, it is admitted over it even when the cache refuses; y (4)
    fits alone, so beside the pinned p it is refused."""
    state = spec(max_weight=4, on_full="refuse")
    outcomes, state = run(state, add("p", pin=True), add("x"), add("y"))
    assert outcomes == [("ok", None)] * 3
    assert state.lru == ("p", "y")  # the cache was over (6 > 4): y's admission evicted x
    outcomes, state = run(state, ("remove", "y"), add("x"))
    assert outcomes[-1] == ("ok", None)
    assert state.lru == ("p", "x")
    assert state.overflows == 1
    outcomes, state = run(state, ("remove", "x"), add("y"))
    assert outcomes[-1] == ("raise", "CacheFull")
    assert state.lru == ("p",)


def test_a_lease_given_back_restores_the_weight_bound() -> None:
    state = spec(max_weight=4)
    _, state = run(state, add("a"), ("lease", "a"), add("y"))
    assert state.lru == ("a", "y")  # 6 > 4, but a is leased and y just loaded
    _, state = run(state, ("release", "a"))
    assert state.lru == ("y",)


def test_an_admission_chooses_victims_by_weight() -> None:
    """Three-point add: the admission of c (known: 5) under 6 chooses a and b."""
    _, state = run(spec(), add("c"), ("remove", "c"), add("a"), add("b"))
    _, admitted = run(state, ("admit", 1, "c", None, False))
    assert admitted.leaving == ((1, "a"), (1, "b"))


def test_a_remove_restores_by_weight() -> None:
    """A remove that times out on its leased target still restores the others."""
    state = spec(max_weight=4)
    outcomes, state = run(state, add("a"), ("lease", "a"), add("y"), ("remove", "a"))
    assert outcomes[-1] == ("raise", "LockTimeout")
    assert state.lru == ("a",)  # y went: a is leased and the remove never evicts its target


# -- the core against the spec -------------------------------------------------------


class _WeightBlindAdmission(CapacityPolicy):
    """Known bug: admission ignores the weight a load is known to have."""

    def weight_needed(self, requester: str) -> int:
        return 0


class _WeightBlindRestoration(CapacityPolicy):
    """Known bug: restoration brings back the count bound only."""

    def restoration_victims(self, leased: Any, exclude: str | None) -> list[str]:
        count, _ = self.excess()
        return self.capacity_victims(count, leased, exclude) if count > 0 else []


def _core(script: Script, policy: type[CapacityPolicy] = CapacityPolicy, **kwargs: Any) -> Any:
    adapter = CoreAdapter(0, max_weight=kwargs.pop("max_weight", 6), weights=WEIGHTS)
    cache_class = type("Cache", (WithFixedSizeCache,), {"policy_class": policy})
    cache = cache_class(
        ModelManager(ScriptedRegistry(script), lock_timeout=0.0),
        max_size=kwargs.pop("max_size", None),
        max_weight=adapter.max_weight,
        weigher=adapter.weigh,
        queue_lock_timeout=0.0,
        **kwargs,
    )
    return adapter, cache


def _differential(
    policy: type[CapacityPolicy], script: Script, ops: list[tuple[object, ...]]
) -> None:
    """Run `ops` on the spec and the core; compare outcomes and the LRU; check I11."""
    adapter, cache = _core(script, policy)
    state = spec(script)
    for op in ops:
        expected, state = apply(state, op)
        name, model_id = op[0], op[1]
        before = adapter.snapshot(cache)
        try:
            if name == "add":
                cache.add_model(model_id)
            else:
                cache.remove(model_id)
            outcome: tuple[str, object] = ("ok", None)
        except Exception as error:
            outcome = ("raise", type(error).__name__)
        after = adapter.snapshot(cache)
        if name == "add" and model_id not in before.registered and outcome == ("ok", None):
            check_i11(after, added=str(model_id))
        check_i11(after, quiescent=True)
        assert outcome == expected, f"{op}: core {outcome}, spec {expected}"
        assert tuple(after.lru or ()) == state.lru, f"{op}: core {after.lru}, spec {state.lru}"


FIRST_LOAD = [add("a"), add("b"), add("c")]
KNOWN_WEIGHT_FAILS = [add("c"), ("remove", "c"), add("a"), add("b"), add("c")]


def test_the_core_agrees_with_the_spec_on_weights() -> None:
    script = Script()
    script.set_outcome(LOAD, "c", 2, fail=True)
    _differential(CapacityPolicy, Script(), FIRST_LOAD)
    _differential(CapacityPolicy, script, KNOWN_WEIGHT_FAILS)


def test_weight_blind_restoration_is_caught_by_i11() -> None:
    with pytest.raises(
        InvariantViolation, match=r"I11.*add_model\('c'\) returned with models weighing"
    ):
        _differential(_WeightBlindRestoration, Script(), FIRST_LOAD)


def test_weight_blind_admission_is_caught_by_the_spec() -> None:
    script = Script()
    script.set_outcome(LOAD, "c", 2, fail=True)
    with pytest.raises(AssertionError, match=r"core \('a', 'b'\), spec \(\)"):
        _differential(_WeightBlindAdmission, script, KNOWN_WEIGHT_FAILS)


# -- I11 and I5 in weight -------------------------------------------------------------


def _snap(registered: str, *, pins: str = "", leases: str = "") -> Snapshot:
    return Snapshot(
        registered={rid: object() for rid in registered},
        lru=tuple(registered),
        pins=frozenset(pins),
        leases=dict.fromkeys(leases, 1),
        in_flight_loads=0,
        weights={rid: WEIGHTS.get(rid, 1) for rid in registered},
        max_weight=6,
    )


def test_i11_weight_forms() -> None:
    check_i11(_snap("ab"), quiescent=True)  # 4 <= 6
    check_i11(_snap("pc"), quiescent=True)  # 6 <= 6
    check_i11(_snap("cx", pins="c"), quiescent=True)  # over, one unpinned: the last load
    with pytest.raises(
        InvariantViolation, match=r"I11.*once every call had returned, models weighing"
    ):
        check_i11(_snap("acx", pins="c"), quiescent=True)
    check_i11(_snap("acx", pins="c"), quiescent=True, slack=1)  # a failed restoration kept a
    check_i11(_snap("acx", pins="c", leases="a"))  # mid-run: no weight state form
    check_i11(_snap("acx", pins="c", leases="a"), added="x")  # nothing else evictable
    with pytest.raises(InvariantViolation, match=r"I11.*add_model\('x'\) returned with"):
        check_i11(_snap("acx", pins="c"), added="x")
    with pytest.raises(InvariantSkipped, match="max_size"):
        check_i11(Snapshot(registered={}, weights={}, max_weight=None))


def _only(before: Snapshot, kept: str) -> Snapshot:
    """`before` after a restoration that kept only `kept` (the same model objects)."""
    return attrs.evolve(
        before,
        registered={rid: before.registered[rid] for rid in kept},
        lru=tuple(kept),
        weights={rid: WEIGHTS[rid] for rid in kept},
    )


def test_i5_lets_a_failed_remove_restore_only_what_the_weight_needs() -> None:
    """A remove of the leased x times out and restores: least recent first until
    the weight excess is covered (all but the last evicted weigh less than it)."""
    before = _snap("abcx", leases="x")  # 14 > 6: excess 8
    check_i5(before, _only(before, "x"), resolved_id="x")  # a + b = 4 < 8 before c
    before = _snap("cpx", leases="x")  # 11 > 6: excess 5
    check_i5(before, _only(before, "px"), resolved_id="x")
    with pytest.raises(InvariantViolation, match="I5"):
        check_i5(before, _only(before, "x"), resolved_id="x")  # c alone covered it: p too many


def test_the_weighted_check_cells_name_their_setting() -> None:
    adapter = core_adapter_named("core-depth0-wait-weighted")
    assert adapter is not None
    assert (adapter.on_full, adapter.max_weight, adapter.name) == (
        "wait",
        WEIGHTED_CORE["max_weight"],
        "core-depth0-wait-weighted",
    )
    assert adapter.weighting()["weights"] == WEIGHTED_CORE["weights"]
    assert CoreAdapter(1).weighting() == {}
    with pytest.raises(ValueError, match="max_weight"):
        CoreAdapter(0, max_weight=0)

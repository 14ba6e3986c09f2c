"""Declared semantics: an implementation that differs from the chosen semantics on
purpose (upstream's eviction in rounds of 3, its clear() stopping at the first failure)
is judged by its own rule, so the difference never fails it, and never masks a race."""

from __future__ import annotations

import pytest

from models_spec.fakes import Script, ScriptedUnloadError
from models_spec.spec import DECLARABLE_SEMANTICS, Spec, apply, initial_state


def test_eviction_in_rounds_of_3_frees_up_to_3_slots() -> None:
    """Full at 4: the chosen semantics evict one; declared rounds evict the 3 least recent."""
    plain = Spec(initial_state(max_size=4))
    rounds = Spec(initial_state(max_size=4, semantics={"evicts-in-rounds-of-3"}))
    for spec in (plain, rounds):
        for rid in "abcd":
            spec.add_model(rid)
        spec.add_model("e")
    assert plain.lru_order() == ["b", "c", "d", "e"]
    assert rounds.lru_order() == ["d", "e"]
    assert rounds.state.overflows == 0


def test_rounds_skip_pins_and_evict_what_is_there() -> None:
    """Fewer than 3 evictable: all of them go; pins stay."""
    spec = Spec(initial_state(max_size=2, semantics={"evicts-in-rounds-of-3"}))
    spec.pin_model("a")
    spec.add_model("a")
    spec.add_model("b")
    spec.add_model("c")
    assert spec.lru_order() == ["a", "c"]


def test_clear_stopping_at_the_first_failure_raises_it_alone() -> None:
    """The first failing removal ends clear(): the models after it stay; no group."""
    script = Script(unload_failures={"b": [1]})
    plain = Spec(initial_state(max_size=4, script=script))
    stops = Spec(
        initial_state(max_size=4, script=script, semantics={"clear-stops-at-first-failure"})
    )
    for spec in (plain, stops):
        for rid in "abc":
            spec.add_model(rid)
    with pytest.raises(ExceptionGroup):
        plain.clear()
    assert plain.keys() == ["b"]
    with pytest.raises(ScriptedUnloadError):
        stops.clear()
    assert stops.keys() == ["b", "c"]
    outcome, _ = apply(stops.state, ("clear",))
    assert outcome == ("ok", None)  # b's second unload succeeds


def test_unknown_semantics_are_refused_naming_the_declarable_ones() -> None:
    """A typo cannot silently judge by the chosen semantics."""
    with pytest.raises(ValueError, match="unknown declared semantics"):
        initial_state(semantics={"evicts-everything"})
    assert set(DECLARABLE_SEMANTICS) == {"evicts-in-rounds-of-3", "clear-stops-at-first-failure"}

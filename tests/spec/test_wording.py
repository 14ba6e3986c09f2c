"""models_spec._harness.wording: the spec's encodings said as the manager's calls and answers."""

from __future__ import annotations

import pytest

from models_spec._harness.wording import call_text, outcome_text, state_text
from models_spec.spec import initial_state, step


@pytest.mark.parametrize(
    ("encoded", "said"),
    [
        (("add", "X", None, False), "add_model('X')"),
        (("add", "X", "A", False), "add_model('X', None, 'A')"),
        (("add", "X", None, True), "add_model('X', pin=True)"),
        (("admit", 3, "X", None, False), "add_model('X')"),
        (("complete", 3, "X", None, False, True), "with acquire('X')"),
        (("remove_only", 1, "X"), "remove('X')"),
        (("give_back", 2, "X"), "the exit of a `with lease('X')` block"),
        (("lease", "X"), "with lease('X')"),
        (("getitem", "X"), "manager['X']"),
        (("contains", "X"), "'X' in manager"),
        (("keys",), "keys()"),
        (("lru",), "lru_order()"),
        (("clear",), "clear()"),
    ],
)
def test_calls(encoded: tuple[object, ...], said: str) -> None:
    assert call_text(encoded) == said


@pytest.mark.parametrize(
    ("encoded", "said"),
    [
        (("ok", None), "returned normally"),
        (("ok", ("a", "b")), "returned ['a', 'b']"),
        (("ok", "X#2"), "handed out the model of 'X' from its load #2"),
        (("ok", True), "returned True"),
        (("raise", "LockTimeout"), "raised LockTimeout"),
        (
            ("raise", "ExceptionGroup(ScriptedUnloadError)"),
            "raised an ExceptionGroup of ScriptedUnloadError",
        ),
        (None, "had no recorded outcome (it never returned)"),
    ],
)
def test_outcomes(encoded: object, said: str) -> None:
    assert outcome_text(encoded) == said


def test_state_in_the_managers_terms() -> None:
    state = initial_state(max_size=3)
    assert state_text(state, lru=True) == "nothing was loaded"
    for model_id in ("a", "b"):
        ok, state = step(state, ("add", model_id, None, False), ("ok", None))
        assert ok
    said = state_text(state, lru=True)
    assert said == "'a' and 'b' were loaded (least recently used first: ['a', 'b'])"
    assert "SpecState" not in said

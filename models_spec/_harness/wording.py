"""The spec's encodings in the manager's own words, for failure messages.

The history I15 judges is recorded in `spec.py`'s encoding (``("add", "X", None,
False)`` -> ``("ok", None)``), and the checker splits calls into points
(``("admit", 0, ...)``, ``("complete", 0, ...)``, ``("restore", 0)``: see
`spec.expand_adds`). A reader who did not write the spec knows none of that:
this module turns a recorded call into the call the manager saw
(``add_model('X')``), an outcome into what it returned or raised, and the spec's
state into what a correct manager holds. `linearizability_message` is I15's
message; the spec's own account stays in the violation's details (``--verbose``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from models_spec.spec import SpecState, apply

__all__ = ["call_text", "linearizability_message", "outcome_text", "state_text"]

_POINTS: Final = frozenset(
    {"admit", "evict", "complete", "restore", "remove_only", "give_back", "unpin_only"}
)
"""Inputs of `spec.expand_adds` whose second element is the original call's index."""
_MAIN_POINTS: Final = frozenset({"complete", "remove_only", "give_back", "unpin_only"})
"""The point at which an expanded call has done what its caller asked."""


def _token(value: object) -> str | None:
    """A model token ("X#2") as words, or None when `value` is not one."""
    if isinstance(value, str) and "#" in value:
        rid, _, attempt = value.rpartition("#")
        if attempt.isdigit():
            return f"the model of {rid!r} from its load #{attempt}"
    return None


def call_text(op_input: Any) -> str:
    """The call a recorded input stands for: ``add_model('X')``, ``remove('X')``,
    ``with lease('X')`` (its entry), ``keys()``... (its repr for an unknown input)."""
    if not isinstance(op_input, tuple) or not op_input:
        return repr(op_input)
    kind, args = op_input[0], op_input[1:]
    if kind in _POINTS and kind not in ("admit", "complete"):
        args = args[1:]  # drop the original call's index
    first = repr(args[0]) if args else ""
    if kind in ("add", "admit", "complete"):
        if kind in ("admit", "complete"):
            args = args[1:]
        mid = repr(args[0]) if args else "?"
        alias = args[1] if len(args) > 1 else None
        pin = len(args) > 2 and args[2] is True
        lease = kind == "complete" and len(args) > 3 and args[3] is True
        if lease:
            return f"with acquire({mid}{'' if alias is None else f', None, {alias!r}'})"
        text = mid if alias is None else f"{mid}, None, {alias!r}"
        return f"add_model({text}{', pin=True' if pin else ''})"
    simple = {
        "remove": f"remove({first})",
        "remove_only": f"remove({first})",
        "clear": "clear()",
        "refresh": f"refresh({first})",
        "getitem": f"manager[{first}]",
        "pin": f"pin_model({first})",
        "unpin": f"unpin_model({first})",
        "unpin_only": f"unpin_model({first})",
        "keys": "keys()",
        "contains": f"{first} in manager",
        "len": "len(manager)",
        "lru": "lru_order()",
        "lease": f"with lease({first})",
        "release": f"the exit of a `with lease({first})` block",
        "give_back": f"the exit of a `with lease({first})` block",
    }
    if kind in simple:
        return simple[kind]
    if kind == "acquire":
        alias = args[1] if len(args) > 1 else None
        return f"with acquire({first}{'' if alias is None else f', None, {alias!r}'})"
    if kind == "evict":
        return "an add's eviction"
    if kind == "restore":
        return "the restoration of the cache's bound at the end of a call"
    return repr(op_input)


def outcome_text(outcome: Any) -> str:
    """What a call did: "returned normally", "raised LockTimeout", "returned ['a']",
    "handed out the model of 'X' from its load #2"."""
    if not isinstance(outcome, tuple) or len(outcome) != 2:
        return "had no recorded outcome (it never returned)"
    kind, value = outcome
    if kind == "raise":
        if value == "_Blocked":
            return "could not have taken effect yet (it would still wait for another call)"
        name = str(value)
        if name.startswith("ExceptionGroup(") and name.endswith(")"):
            return f"raised an ExceptionGroup of {name[len('ExceptionGroup(') : -1]}"
        return f"raised {value}"
    if kind != "ok":
        return f"gave {outcome!r}"
    if value is None:
        return "returned normally"
    model = _token(value)
    if model is not None:
        return f"handed out {model}"
    if isinstance(value, tuple):
        return "returned [" + ", ".join(repr(v) for v in value) + "]"
    return f"returned {value!r}"


def state_text(state: SpecState, *, lru: bool) -> str:
    """What a correct manager holds in `state`, in words (loaded ids, LRU order, leases,
    pins: what the manager's own API shows)."""
    loaded = [rid for rid, _ in state.registered]
    text = "nothing was loaded" if not loaded else f"{_ids(loaded)} {_be(loaded)} loaded"
    if lru and len(state.lru) > 1:
        text += " (least recently used first: [" + ", ".join(map(repr, state.lru)) + "])"
    if state.leases:
        text += ", with leases held on " + _ids([rid for rid, _ in state.leases])
    if state.pins:
        text += ", " + _ids(sorted(state.pins)) + " pinned"
    return text


def _ids(ids: Sequence[str]) -> str:
    quoted = [repr(i) for i in ids]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _be(ids: Sequence[str]) -> str:
    return "was" if len(ids) == 1 else "were"


def _original(op: Any, originals: Sequence[Any]) -> Any:
    """The recorded call an expanded point belongs to (itself when it was not split)."""
    op_input = op.input
    if (
        isinstance(op_input, tuple)
        and len(op_input) > 1
        and op_input[0] in _POINTS
        and isinstance(op_input[1], int)
        and 0 <= op_input[1] < len(originals)
    ):
        return originals[op_input[1]]
    return op


def _done(op: Any) -> bool:
    """Whether linearizing this point means its call did what it was asked."""
    op_input = op.input
    if not isinstance(op_input, tuple) or not op_input:
        return True
    return op_input[0] in _MAIN_POINTS or op_input[0] not in _POINTS


def _raised(call: Any) -> str:
    """`` (raised X)`` for a recorded call that raised, "" otherwise: a call that failed
    changed nothing, which the order has to say for "after those calls" to make sense
    (after "T1: remove('a')", 'a' is still loaded when that remove raised)."""
    output = call.output
    failed = isinstance(output, tuple) and len(output) == 2 and output[0] == "raise"
    return f" ({outcome_text(output)})" if failed and output[1] != "_Blocked" else ""


def linearizability_message(
    result: Any,
    originals: Sequence[Any],
    initial: SpecState,
    step: Any,
    *,
    lru: bool,
    unknown: object,
) -> str:
    """I15's message for an "illegal" `result` of ``check_linearizability``.

    `originals` are the recorded calls before `spec.expand_adds` split them (the
    points' indices point into it), `initial` the spec's initial state, `step` its
    step function and `unknown` the checker's output for a call that never
    returned. Names the call the checker could not place (its thread, the call,
    what it returned or raised), the one-at-a-time order of the calls before it
    that the checker got furthest with, what a correct manager holds after them,
    and what it would have answered there.
    """
    culprit = result.culprit
    if culprit is None:  # pragma: no cover - an illegal verdict always names one
        return "the calls' outcomes fit no one-at-a-time order of the calls"
    original = _original(culprit, originals)
    state = initial
    order: list[str] = []
    placed: set[int] = set()
    for op in result.longest_linearization:
        _, state = step(state, op.input, unknown if op.ret is None else op.output)
        source = _original(op, originals)
        if _done(op) and id(source) not in placed:
            placed.add(id(source))
            order.append(f"{source.process}: {call_text(source.input)}{_raised(source)}")
    try:
        expected, _ = apply(state, culprit.input)
    except ValueError:  # an input the spec cannot apply here: no answer to offer
        expected = None
    call = call_text(original.input)
    observed = outcome_text(original.output)
    sequence = "; ".join(order) if order else "none of the other calls"
    answer = outcome_text(expected)
    if expected == ("raise", "_Blocked"):
        verdict = "could not have taken effect there yet (it would still wait for another call)"
    elif expected is None or answer == observed:  # no answer fits, or a point of the call
        # (its eviction) failed rather than its answer
        verdict = "could not have answered that way at any instant of the call"
    else:
        verdict = f"would have {answer} there"
    return (
        f"thread {culprit.process}'s {call} {observed}, which no one-at-a-time order of the "
        f"threads' calls explains (each call taking effect at one instant between its call "
        f"and its return). The order that explains the most: {sequence}. After those calls "
        f"{state_text(state, lru=lru)}, so a correct manager's {call} {verdict}"
    )

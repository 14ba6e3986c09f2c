"""Sequential specs and Hypothesis strategies shared by the linearizability tests."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from lockstep._linearizability import UNKNOWN, Operation


def register_step(state: int, inp: tuple[Any, ...], out: Any) -> tuple[bool, int]:
    """A read/write register: ("w", v) -> None, ("r",) -> current value."""
    if inp[0] == "w":
        return True, inp[1]
    return (out is UNKNOWN or out == state), state


def kv_step(
    state: frozenset[tuple[str, int]], inp: tuple[Any, ...], out: Any
) -> tuple[bool, frozenset[tuple[str, int]]]:
    """A key-value store: ("put", k, v), ("get", k) -> v or None, ("cas", k, old, new) -> bool."""
    current = dict(state)
    verb, key = inp[0], inp[1]
    if verb == "put":
        current[key] = inp[2]
        return True, frozenset(current.items())
    if verb == "get":
        return (out is UNKNOWN or out == current.get(key)), state
    swapped = current.get(key) == inp[2]
    if out is not UNKNOWN and out != swapped:
        return False, state
    if swapped:
        current[key] = inp[3]
    return True, frozenset(current.items())


class RegisterSpec:
    """The register as a SequentialSpec object."""

    def init(self) -> int:
        return 0

    def step(self, state: int, inp: tuple[Any, ...], out: Any) -> tuple[bool, int]:
        return register_step(state, inp, out)


def brute_force(ops: Sequence[Operation], step: Any, init: Any) -> bool:
    """The definition, by enumeration: some subset of the pending operations plus
    every completed one, in some order respecting real time, is accepted."""
    done = [op for op in ops if op.ret is not None]
    pending = [op for op in ops if op.ret is None]
    for r in range(len(pending) + 1):
        for chosen in itertools.combinations(pending, r):
            for order in itertools.permutations([*done, *chosen]):
                if not _respects_real_time(order):
                    continue
                state = init
                for op in order:
                    ok, state = step(state, op.input, UNKNOWN if op.ret is None else op.output)
                    if not ok:
                        break
                else:
                    return True
    return False


def _respects_real_time(order: Sequence[Operation]) -> bool:
    for i, a in enumerate(order):
        for b in order[i + 1 :]:
            # b is placed after a; illegal if b returned strictly before a was called.
            if b.ret is not None and b.ret < a.call:
                return False
    return True

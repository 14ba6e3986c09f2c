"""The upstream stack without its declared semantics (for the tests that show what they
change): the spec then judges it by the chosen semantics."""

from __future__ import annotations

from typing import Any

import attrs


def stack() -> Any:
    """`inference-stack` declaring nothing."""
    from models_spec.targets.roboflow_inference import stack as declared

    return attrs.evolve(declared(), name="inference-stack-undeclared", semantics=frozenset())

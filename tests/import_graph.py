"""The cycle finder the import-graph tests share (lockstep's kernel, models_spec's modules).

`tests/spec/test_package.py` shows it finds a cycle where there is one.
"""

from __future__ import annotations

import graphlib

__all__ = ["cycle"]


def cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of ``graph`` as the modules around it (empty: none), found by the
    standard library's topological sorter."""
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as found:
        return list(found.args[1])
    return []

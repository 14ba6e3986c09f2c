"""What a watched access touches: the resource of a "read"/"write" step.

A watched object or container is a *target* with a per-run id (``dict#2``,
``Manager#1``), numbered in order of first watch so the same scenario gives the
same ids in every execution. An :class:`Access` names the target, the *slot*
it touches and whether it reads or writes:

* an attribute of a watched instance: the slot is the attribute name;
* a key of a dict / OrderedDict, an element of a set: the slot is the key (a
  stable stand-in for keys that are not plain values, see ``_state``);
* the whole container (``len``, iteration, ``clear``, anything on a list or a
  deque): the slot is :data:`WHOLE`;
* ``OrderedDict.move_to_end(k)``: reads the presence of ``k`` and writes the
  order (:attr:`Access.reorder`).

Two consumers read it. DPOR's dependency relation uses :attr:`Access.footprint`
(abstract cells read and written; two steps conflict when one writes a cell the
other reads or writes); the race detector uses the same fields for its
location rules (``_detector``). Writes to two different keys of one dict are
*dependent* for DPOR (each may insert, and insertion order is observable by
iteration); for the detector they are an *order race* only when both change the
key order in ways that do not commute (inserts, ``move_to_end``, a set's
removals) and something reads the order after both, since a write of a present
key or a dict's deletion commutes with the other key's insert.
"""

from __future__ import annotations

from collections.abc import Hashable
from functools import lru_cache
from typing import Literal

import attrs

from lockstep._trace import PrimitiveId

__all__ = ["STRUCTURE", "WHOLE", "Access", "ObjectKey", "footprint"]

Shape = Literal["attr", "keyed", "seq"]


class _Marker:
    """A named singleton slot (stable across executions: equality by identity)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name

    def __reduce__(self) -> str:
        return self.name


WHOLE = _Marker("WHOLE")
"""The slot of a whole-container access (len, iteration, clear, any list/deque operation)."""

STRUCTURE = _Marker("STRUCTURE")
"""The abstract cell holding a container's key set and order (DPOR footprints only)."""


@attrs.frozen(slots=True)
class ObjectKey:
    """A stable stand-in for a key that is not a plain value: its type and the order
    in which the execution first used it (``Model#3``)."""

    kind: str
    number: int

    def __str__(self) -> str:
        return f"<{self.kind}#{self.number}>"


@attrs.frozen(slots=True)
class Access:
    """One watched access: ``target`` (and its readable ``name``), ``slot``, mode.

    ``shape``: "attr" (an attribute of a watched instance), "keyed" (dict,
    OrderedDict, set: per-key slots plus the whole container) or "seq" (list,
    deque: the whole container only). ``write``: whether it writes. ``reorder``:
    ``move_to_end`` (reads the key's presence, writes the order). ``op``: the
    operation as the user wrote it (``in``, ``get``, ``[]=``, ``append``...).
    """

    target: PrimitiveId
    name: str
    shape: Shape
    slot: Hashable
    write: bool
    op: str
    reorder: bool = False

    @property
    def mode(self) -> str:
        """ "read" or "write" (a reorder counts as a write)."""
        return "write" if self.write or self.reorder else "read"

    @property
    def footprint(self) -> tuple[frozenset[Hashable], frozenset[Hashable]]:
        """(cells read, cells written): the DPOR dependency of this access."""
        return footprint(self)

    def describe(self) -> str:
        """``Manager#1._models['X'] (in)``: target, slot and operation."""
        if self.slot is WHOLE:
            where = self.name
        elif self.shape == "attr":
            where = f"{self.name}.{self.slot}"
        else:
            where = f"{self.name}[{slot_text(self.slot)}]"
        return f"{where} ({self.op})"

    def location_text(self) -> str:
        """The location alone, without the operation (``Manager#1._models['X']``)."""
        if self.slot is WHOLE:
            return self.name
        if self.shape == "attr":
            return f"{self.name}.{self.slot}"
        return f"{self.name}[{slot_text(self.slot)}]"

    def __str__(self) -> str:
        return self.describe()


def slot_text(slot: Hashable, limit: int = 40) -> str:
    """A short, deterministic rendering of a slot (never ``repr`` of arbitrary objects)."""
    if isinstance(slot, ObjectKey):
        return str(slot)
    text = repr(slot)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@lru_cache(maxsize=4096)
def footprint(access: Access) -> tuple[frozenset[Hashable], frozenset[Hashable]]:
    """The abstract cells ``access`` reads and writes (see the module docstring).

    * attribute: reads or writes the cell (target, name);
    * keyed container: a key read reads (target, key) and (target, WHOLE); a key
      write writes (target, key) and the STRUCTURE cell (it may insert or
      delete); a whole read reads STRUCTURE (every write writes it); a whole
      write writes STRUCTURE and (target, WHOLE), which every key read reads;
      a reorder reads (target, key) and (target, WHOLE) and writes STRUCTURE;
    * list / deque: every read reads STRUCTURE, every write writes it.
    """
    t = access.target
    if access.shape == "attr":
        cell = frozenset({(t, access.slot)})
        return (frozenset(), cell) if access.write else (cell, frozenset())
    structure = (t, STRUCTURE)
    if access.shape == "seq":
        cells = frozenset({structure})
        return (frozenset(), cells) if access.write else (cells, frozenset())
    whole = (t, WHOLE)
    if access.reorder:
        return frozenset({(t, access.slot), whole}), frozenset({structure})
    if access.slot is WHOLE:
        if access.write:
            return frozenset(), frozenset({structure, whole})
        return frozenset({structure}), frozenset()
    if access.write:
        return frozenset(), frozenset({(t, access.slot), structure})
    return frozenset({(t, access.slot), whole}), frozenset()

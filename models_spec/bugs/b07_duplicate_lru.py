"""B7 duplicate LRU entries: an unlocked "not loaded" check, then append before loading.

Bug path: the cold-add bookkeeping of `WithFixedSizeCache`.  It cannot be
one override: the core's LRU is an OrderedDict, which cannot hold a
duplicate, so this variant also swaps in upstream's deque (a `CacheBook`
subclass named by `book_class`) and moves the append from `_commit_load` to
before the load (`_add`), with the failure path dropping one occurrence
(`_release_slot`).  Two cold adds of X
both pass the unlocked check and both append: X is listed twice (I4).
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import lockstep
from modelmanager import WithFixedSizeCache
from modelmanager.decorators._cache_book import CacheBook
from models_spec._harness.catalogue import Bug, Variant
from models_spec.bugs._support import cache_over_manager
from models_spec.scenarios import Op, Scenario, Setup

__all__ = ["BUG", "AppendBeforeLoadCache", "DequeBook", "DequeLRU"]


class DequeLRU:
    """Upstream's deque LRU behind the OrderedDict calls the core makes (duplicates allowed)."""

    def __init__(self) -> None:
        self._items: deque[str] = deque()

    def append(self, model_id: str) -> None:
        self._items.append(model_id)

    def __contains__(self, model_id: object) -> bool:
        return model_id in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._items))

    def __len__(self) -> int:
        return len(self._items)

    def keys(self) -> list[str]:
        """Every entry, duplicates included (so ``dict(lru)`` works like the core's)."""
        return list(self._items)

    def __getitem__(self, model_id: str) -> None:
        if model_id not in self._items:
            raise KeyError(model_id)

    def get(self, model_id: str, default: Any = None) -> Any:
        return default

    def __delitem__(self, model_id: str) -> None:
        self._items.remove(model_id)  # one occurrence

    def update(self, pairs: Any) -> None:
        for model_id, _ in pairs:
            self._items.append(model_id)

    def __setitem__(self, model_id: str, value: None) -> None:
        if model_id not in self._items:
            self._items.append(model_id)

    def move_to_end(self, model_id: str) -> None:
        self._items.remove(model_id)
        self._items.append(model_id)

    def pop(self, model_id: str, default: Any = None) -> Any:
        if model_id in self._items:
            self._items.remove(model_id)
        return default


class DequeBook(CacheBook):
    """The core's bookkeeping over upstream's deque LRU."""

    def __init__(self) -> None:
        super().__init__()
        self.lru = DequeLRU()  # type: ignore[assignment]


class AppendBeforeLoadCache(WithFixedSizeCache):
    """Appends the id to a deque LRU before loading, after an unlocked check."""

    book_class = DequeBook

    def _add(self, request: Any, after_load: Callable[[str], Any] | None) -> Any:
        resolved_id = request.resolved_id
        lockstep.checkpoint(f"unlocked loaded-check:{resolved_id}", resource=resolved_id)
        if resolved_id not in self.manager:
            with self._lru_guard():
                self._book.lru.append(resolved_id)  # type: ignore[attr-defined]
        return super()._add(request, after_load)

    def _commit_load(self, resolved_id: str, pin: bool, weight: int = 0) -> None:
        # (B7 is about the order, not weights: the weight is left unrecorded.)
        with self._lru_changed:  # appended before the load already
            self._book.release(resolved_id)
            if pin:
                self._book.pin(resolved_id)
            self._lru_changed.notify_all()

    def _release_slot(self, resolved_id: str) -> None:
        super()._release_slot(resolved_id)
        if sys.exc_info()[0] is not None:  # the failure path: drop our own append
            with self._lru_changed:
                self._book.lru.pop(resolved_id, None)


BUG = Bug(
    id="B7",
    title="duplicate LRU entries",
    story=(
        'T1 and T2 both add X. Each checks "X loaded?" without a lock, both see no, '
        "both append X to the LRU before loading: X is listed twice (I4), and later "
        "evictions waste their budget on the duplicate."
    ),
    scenario=Scenario(
        "B7-duplicate-lru-entries",
        ("B7",),
        "two cold adds of X: the LRU never holds X twice",
        [("T1", [Op("add", "X")]), ("T2", [Op("add", "X")])],
        Setup(max_size=3),
        needs=frozenset({"lru"}),
    ),
    variants=Variant(cache_over_manager(cache_cls=AppendBeforeLoadCache)),
    breaks=("I4",),
    caught_by=("pct", "dpor", "random"),
)

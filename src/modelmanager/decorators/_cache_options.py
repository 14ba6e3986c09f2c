"""The cache's configuration: validated options, and the parts its helpers share.

:meth:`CacheOptions.validated` checks the constructor's keywords of
:class:`~modelmanager.WithFixedSizeCache` (the errors it documents, raised
before anything is built) and returns them frozen; :class:`CacheParts` is
what the cache hands its admission and its evictions (the book, the inner
layer, the condition on the bookkeeping lock, the counters, the options).
The weight helpers (:func:`weigh`, :func:`adoptable`) check what a weigher
answers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

import attrs

from modelmanager._validation import (
    abbreviate_ids,
    check_bool,
    check_choice,
    check_fraction,
    check_memory_probe,
    check_positive_int,
    check_timeout,
    check_weight,
)
from modelmanager.decorators._cache_book import CacheBook
from modelmanager.errors import InvalidArgument, InvalidArgumentType
from modelmanager.protocols import ManagerLike, MemoryProbe, Model
from modelmanager.statistics import Counters

if TYPE_CHECKING:
    import threading

__all__ = [
    "FULL_POLICIES",
    "CacheOptions",
    "CacheParts",
    "FullPolicy",
    "Weigher",
    "adoptable",
    "weigh",
]

FullPolicy = Literal["wait", "proceed", "refuse"]
"""What a cold add does when every registered model is pinned or leased."""

FULL_POLICIES: tuple[str, ...] = ("wait", "proceed", "refuse")
"""The accepted values of ``on_full``; the first is the default."""

Weigher = Callable[[str, Model], int]
"""``weigher(resolved_id, model) -> int >= 0``: a loaded model's weight (e.g. bytes)."""


@attrs.frozen
class CacheOptions:
    """The validated settings of one cache (see :class:`~modelmanager.WithFixedSizeCache`)."""

    max_size: int | None
    max_weight: int | None
    weigher: Weigher | None
    on_full: str
    queue_lock_timeout: float
    memory_free_threshold: float
    memory_probe: MemoryProbe | None
    delete_evicted_from_disk: bool

    @classmethod
    def validated(
        cls,
        *,
        max_size: object,
        max_weight: object,
        weigher: object,
        on_full: object,
        queue_lock_timeout: object,
        memory_free_threshold: object,
        memory_probe: object,
        delete_evicted_from_disk: object,
    ) -> CacheOptions:
        """The options, checked; raises :class:`InvalidArgument` /
        :class:`InvalidArgumentType` naming the first bad one."""
        size = None if max_size is None else check_positive_int(max_size, "max_size")
        delete = check_bool(delete_evicted_from_disk, "delete_evicted_from_disk")
        threshold = check_fraction(memory_free_threshold, "memory_free_threshold")
        timeout = check_timeout(queue_lock_timeout, "queue_lock_timeout")
        probe = check_memory_probe(memory_probe) if memory_probe is not None else None
        full = check_choice(on_full, "on_full", FULL_POLICIES)
        weight_bound = None if max_weight is None else check_positive_int(max_weight, "max_weight")
        _check_weighing(size, weight_bound, weigher)
        return cls(
            max_size=size,
            max_weight=weight_bound,
            weigher=weigher,  # type: ignore[arg-type]  # checked callable above
            on_full=full,
            queue_lock_timeout=timeout,
            memory_free_threshold=threshold,
            memory_probe=probe,
            delete_evicted_from_disk=delete,
        )

    def bounds(self) -> str:
        """The bounds, as messages name them (``max_size=2, max_weight=8``)."""
        parts = [] if self.max_size is None else [f"max_size={self.max_size}"]
        if self.max_weight is not None:
            parts.append(f"max_weight={self.max_weight}")
        return ", ".join(parts)


@attrs.frozen
class CacheParts:
    """What one cache shares with its admission and evictions (wired once)."""

    book: CacheBook
    manager: ManagerLike
    changed: threading.Condition
    """The condition on the bookkeeping lock."""
    counters: Counters
    options: CacheOptions


def _check_weighing(max_size: int | None, max_weight: int | None, weigher: object) -> None:
    """A weight bound needs a weigher and the reverse; some bound is needed."""
    if weigher is not None and not callable(weigher):
        raise InvalidArgumentType(
            f"weigher must be a callable weigher(resolved_id, model) -> int "
            f"(got {weigher!r} of type {type(weigher).__name__})"
        )
    if (max_weight is None) != (weigher is None):
        missing = "weigher" if weigher is None else "max_weight"
        raise InvalidArgument(
            f"max_weight and weigher go together (got max_weight={max_weight!r} and "
            f"weigher={weigher!r}): pass {missing}= too, e.g. "
            "max_weight=8 * 2**30, weigher=torch_parameter_bytes"
        )
    if max_size is None and max_weight is None:
        raise InvalidArgument(
            "max_size=None bounds the cache by weight only: pass max_weight= and weigher= "
            "too, or a max_size"
        )


def weigh(weigher: Weigher, resolved_id: str, model: Model) -> int:
    """``weigher(resolved_id, model)``, checked: an int >= 0 (InvalidArgument otherwise)."""
    return check_weight(weigher(resolved_id, model), f"weigher({resolved_id!r}, model)")


def adoptable(manager: ManagerLike, options: CacheOptions) -> tuple[list[str], list[int]]:
    """The models ``manager`` already holds, and their weights, to adopt (B20).

    Returned in the inner layer's registration order (least recent first).
    Raises :class:`InvalidArgument`, nothing changed, when they do not fit
    ``max_size`` or ``max_weight``: a constructor never unloads anything.
    """
    max_size, max_weight, weigher = options.max_size, options.max_weight, options.weigher
    held = manager.keys()
    if max_size is not None and len(held) > max_size:
        raise InvalidArgument(
            f"WithFixedSizeCache(max_size={max_size}) over a manager that already holds "
            f"{len(held)} models ({abbreviate_ids(held)}): remove some from it first "
            f"(manager.remove(id)) or pass max_size >= {len(held)}"
        )
    weights = [weigh(weigher, rid, manager[rid]) for rid in held] if weigher else [0] * len(held)
    if max_weight is not None and sum(weights) > max_weight:
        raise InvalidArgument(
            f"WithFixedSizeCache(max_weight={max_weight}) over a manager that already holds "
            f"{len(held)} models weighing {sum(weights)} ({abbreviate_ids(held)}): remove "
            f"some from it first (manager.remove(id)) or pass max_weight >= {sum(weights)}"
        )
    return held, weights

"""The seam between two layers of a stack: what an outer layer may use of an inner one.

Every layer (the manager, every decorator) answers :meth:`inner_link` (part of
:class:`~modelmanager.protocols.ManagerLike`) with an :class:`InnerLink`: the
steps it lets the layer directly above it take *without* going through its
public API. Each part is optional (None: not offered), and a layer offers a
part only while what the part stands in for is its own unchanged code:

* ``warm_view`` (a :class:`WarmView`): the layer's state lock and its
  records. Holding the lock, the outer layer may read the records, read a
  record's ``unloading`` and count a warm hit with ``record.hits += 1`` (it
  shows in the inner layer's statistics and descriptions as if the inner
  layer had answered it); nothing else. Only a :class:`ModelManager` offers
  it, to the layer directly above it, and only while it keeps its own
  ``add_model`` and warm step; a cache then guards its own bookkeeping with
  that same lock, so a warm add takes one lock and calls nothing.
* ``warm_hit(resolved_id) -> bool``: record a warm add of a resolved id
  atomically and return True, or change nothing and return False (the outer
  layer then calls ``add_model``). It stands in for the layer's
  ``add_model`` on the warm path, so a layer that does something on every
  add (it overrides ``add_model``) must not forward its inner layer's.
* ``try_lifecycle(resolved_id)``: take the id's lifecycle without waiting
  and return it held (a context manager to exit), or return None, nothing
  changed, when another thread holds it (a cache's eviction skips a busy
  victim instead of waiting for it while holding choices others wait for).
  It stands in for ``lifecycle``: a layer that changes ``lifecycle`` must not
  forward its inner layer's.
* ``lease_steps`` (a :class:`LeaseSteps`): ``take(resolved_id) -> model``
  takes a lease as entering ``lease(resolved_id)`` does (raises
  :class:`~modelmanager.ModelNotFound`, nothing changed, when the id is not
  loaded), and ``give_back(resolved_id)`` ends one taken so, as exiting the
  lease does. They stand in for ``lease``, so an outer layer whose own lease
  adds to the inner one (a cache) pays for no second context manager; a
  layer that changes ``lease`` must not forward its inner layer's.

A pass-through layer forwards its inner layer's ``warm_hit``,
``try_lifecycle`` and ``lease_steps`` (never the ``warm_view``: the records
are not its own), each only while it does not override the method the part
stands in for; a layer
may also offer its own ``warm_hit`` (one that counts, then asks the inner
one). :class:`LayerLink` is the ready-made value; ``LayerLink()`` offers
nothing, and an outer layer then takes its full protocol.

:func:`clear_each` is the clearing contract every layer's ``clear`` shares.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, NamedTuple, Protocol

if TYPE_CHECKING:  # annotations only: this module creates no lock
    import threading

    from modelmanager.protocols import Model

__all__ = [
    "InnerLink",
    "LayerLink",
    "LeaseSteps",
    "TryLifecycle",
    "WarmHit",
    "WarmRecord",
    "WarmView",
    "clear_each",
]

WarmHit = Callable[[str], bool]
"""``warm_hit(resolved_id) -> bool``: a warm add recorded (True) or nothing changed (False)."""

TryLifecycle = Callable[[str], AbstractContextManager[None] | None]
"""``try_lifecycle(resolved_id)``: the id's lifecycle, held, or None if another thread holds it."""


class WarmRecord(Protocol):
    """One registered model's record, as a :class:`WarmView` shares it.

    ``unloading`` is True from the moment a removal starts tearing the model
    down (and for good once it is gone); ``hits`` counts its warm adds. Both
    are read and written under the view's lock only.
    """

    unloading: bool
    hits: int


class WarmView(NamedTuple):
    """A manager's state lock and records, for the layer directly above it (module doc).

    ``lock`` is the manager's state lock; ``records`` maps each registered
    resolved id to its :class:`WarmRecord`. Holding ``lock``, the outer layer
    may read ``records``, read a record's ``unloading`` and count a warm hit
    with ``record.hits += 1``; nothing else.
    """

    lock: threading.Lock
    records: Mapping[str, WarmRecord]


class LeaseSteps(NamedTuple):
    """A layer's lease, as two steps for the layer directly above it (module doc)."""

    take: Callable[[str], Model]
    """``take(resolved_id) -> model``: what entering ``lease(resolved_id)`` does."""
    give_back: Callable[[str], None]
    """``give_back(resolved_id)``: what exiting a lease taken by ``take`` does."""


class InnerLink(Protocol):
    """What a layer offers the layer directly above it (module doc); None: not offered."""

    @property
    def warm_view(self) -> WarmView | None:
        """The state lock and records (a manager only, to the layer right above it)."""

    @property
    def warm_hit(self) -> WarmHit | None:
        """The warm step standing in for this layer's ``add_model``."""

    @property
    def try_lifecycle(self) -> TryLifecycle | None:
        """The non-waiting lifecycle take standing in for this layer's ``lifecycle``."""

    @property
    def lease_steps(self) -> LeaseSteps | None:
        """The take and give-back standing in for this layer's ``lease``."""


class LayerLink(NamedTuple):
    """The ready-made :class:`InnerLink`; every part defaults to None (not offered)."""

    warm_view: WarmView | None = None
    warm_hit: WarmHit | None = None
    try_lifecycle: TryLifecycle | None = None
    lease_steps: LeaseSteps | None = None


def clear_each(resolved_ids: Iterable[str], remove: Callable[[str], None]) -> None:
    """Call ``remove`` on every id in order, attempting all; group the failures.

    An :class:`Exception` of one removal gets a note naming the id and the
    clear goes on; at the end the failures are raised as one
    :class:`ExceptionGroup` (in order). A :class:`BaseException` that is not
    an Exception (KeyboardInterrupt, ...) stops the clear at once.
    """
    failures: list[Exception] = []
    for resolved_id in resolved_ids:
        try:
            remove(resolved_id)
        except Exception as error:
            error.add_note(f"while clearing: removing model {resolved_id!r} failed")
            failures.append(error)
    if failures:
        raise ExceptionGroup(f"clear() failed for {len(failures)} model(s)", failures)

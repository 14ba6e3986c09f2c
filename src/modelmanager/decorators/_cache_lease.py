"""The cache's lease: what ``WithFixedSizeCache.lease`` returns, one class per cache.

A cache lease takes the inner layer's lease through the cache's lease steps
(the inner link's :class:`~modelmanager.link.LeaseSteps`; an inner layer
that offers none has its own ``lease`` wrapped) and, when it ends, does the
cache's part of ending it: the lease leaves the taking thread's count (with
``on_full="wait"``: a thread that holds a lease is never made to wait for
room, no hold-and-wait), the adds waiting for room are woken, and the cache
is brought back within its bounds.

Why :func:`lease_function` makes the lease's class once per cache: every
request of a server pays for a lease, five Python frames where a dict
under a lock takes two. Everything a lease reads that is the same for every lease
of one cache (the steps, the admission, the thread-local count, whether the
cache restores through an override) is read from the function's closure,
not through the cache's attributes, and ``cache.lease`` is a plain function
rather than a bound method (``benchmarks/README.md`` has the measurements).
A lease object carries only what is its own: its key, whether it is taken
and the taking thread's count.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager
from types import TracebackType
from typing import TYPE_CHECKING, Any

from modelmanager._validation import check_model_id
from modelmanager.decorators._cache_admission import AdmissionControl
from modelmanager.link import LeaseSteps
from modelmanager.protocols import Model

if TYPE_CHECKING:  # (threading only names a type here: the cache makes the local)
    import threading

__all__ = ["LeaseFunction", "lease_function"]

LeaseFunction = Callable[[str], AbstractContextManager[Model]]
"""``lease(model_id)``: the cache's lease of ``model_id`` (one use)."""


def lease_function(
    steps: LeaseSteps | None,
    inner_lease: LeaseFunction,
    admission: AdmissionControl,
    held: threading.local | None,
    restore: Callable[[], None] | None,
) -> LeaseFunction:
    """The cache's ``lease``, made once per cache.

    ``steps``: the inner layer's lease steps, or None to wrap ``inner_lease``
    (the inner layer's ``lease``: made with the cache's lease, entered by its
    ``__enter__``, exited with the block's exception info by its
    ``__exit__``). ``admission``: the cache's admission control (its
    full-waiters are woken and its bounds restored when a lease ends).
    ``held``: the thread-local whose ``leases`` deque counts the taking
    thread's leases (``on_full="wait"``), or None (not counted). ``restore``:
    called when a lease ends to restore the bounds when the cache restores
    through an override, or None for the admission's own restoration (only
    when it may be over: one lock-free read in the common case).

    The lease returned refuses a second ``__enter__`` (``RuntimeError``);
    an ``__exit__`` without an ``__enter__`` does nothing. Its ``__exit__``
    does the cache's part even when giving back the inner lease raises.
    """
    take = steps.take if steps is not None else _enter_inner
    give_back = steps.give_back if steps is not None else _no_give_back

    class _Lease:
        """A cache lease (``_key``: what the steps take, the resolved id or the inner lease)."""

        __slots__ = ("_held", "_key", "_taken")

        _key: Any
        _taken: bool
        _held: deque[None]  # the taking thread's leases, this one among them, once taken

        def __enter__(self) -> Model:
            if self._taken:
                raise RuntimeError("a lease cannot be entered twice")
            model = take(self._key)
            self._taken = True
            if held is not None:
                try:
                    leases = held.leases  # the one thread-local read of this lease
                except AttributeError:  # this thread's first lease
                    leases = held.leases = deque()
                leases.append(None)
                self._held = leases  # ended in any thread, it leaves this thread's count
            return model

        def __exit__(  # its arguments named, not *args: no tuple made per lease
            self,
            exc_type: type[BaseException] | None,
            exc: BaseException | None,
            traceback: TracebackType | None,
        ) -> None:
            if not self._taken:
                return
            self._taken = False
            try:
                give_back(self._key)
            finally:
                # The cache's part, written out (no frame): wake adds waiting for
                # room, then restore the bounds (one lock-free read each in the
                # common case: the lease path's whole extra cost).
                if held is not None:
                    # Off the taking thread's count, whichever thread ends the
                    # lease: deque.pop is atomic, so a concurrent append of the
                    # taker's is never lost (an integer count would lose updates).
                    self._held.pop()
                    if admission.full_waiters:
                        admission.wake_full_waiters()
                if restore is not None:
                    restore()
                elif admission.maybe_over:  # AdmissionControl.restore, inlined
                    admission.restore_over(None)

    class _WrappedLease(_Lease):
        """A cache lease over an inner layer that offers no lease steps: its key is the
        inner layer's lease, entered by the take step (:func:`_enter_inner`) and exited
        here, with the block's exception, before the cache's part."""

        __slots__ = ()

        def __exit__(self, *exc_info: Any) -> None:  # (exc_type, exc, traceback)
            if not self._taken:
                return
            try:
                self._key.__exit__(*exc_info)
            finally:
                super().__exit__(*exc_info)

    made_by = _Lease if steps is not None else _WrappedLease
    key_of = None if steps is not None else inner_lease

    def lease(model_id: str) -> AbstractContextManager[Model]:
        """The cache's lease of ``model_id`` (see ``WithFixedSizeCache.lease``)."""
        if type(model_id) is not str or not model_id:
            check_model_id(model_id)
        made = made_by()  # no __init__ frame: the slots are filled here
        made._key = model_id if key_of is None else key_of(model_id)
        made._taken = False
        return made

    return lease


def _enter_inner(inner: AbstractContextManager[Model]) -> Model:
    """The take step of a wrapped lease: enter the inner layer's lease."""
    return inner.__enter__()


def _no_give_back(inner: AbstractContextManager[Model]) -> None:
    """The give-back step of a wrapped lease (its ``__exit__`` exits the inner lease)."""

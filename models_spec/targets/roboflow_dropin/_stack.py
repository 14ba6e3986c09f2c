"""`DropinStack`: the suite's operations, each one call of the drop-in's public API.

The same vocabulary as the stock target's facade (``models_spec.targets.
roboflow_inference._stack``), on the drop-in classes
(``modelmanager.integrations.roboflow_inference``):

* ``add_model(id, api_key, alias)`` -> ``add_model(id, api_key,
  model_id_alias=alias)`` of the top layer; ``pin=True`` (scenario setup only,
  before any thread starts) adds, then ``pin_model`` (upstream's API has no
  atomic form);
* ``refresh(id)`` -> ``infer_from_request_sync(id, request)``: an inference
  request, which holds a lease on the model while it runs and marks it most
  recently used; "not found" (the id is not loaded) is the refresh's normal end;
* ``lease(id)`` -> ``lease(id)``, the lease every request holds;
  ``acquire(id, api_key, alias)`` -> ``acquire(...)`` (load and lease at once);
* ``remove``, ``clear``, ``pin_model``, ``unpin_model``, ``describe_models``,
  ``keys``, ``[id]``, ``in``, ``len`` -> the same names;
* ``lru_order``, ``statistics``, ``lease_counts``, ``lifecycle_snapshot`` ->
  the drop-in's ``core`` (its documented core layer).

The words that are one plain call of upstream's API (``add_model``, ``remove``,
``pin_model``, ``describe_models``, ``keys``, ``[id]``, ``in``, ``len``) are the
stock facade's own (`UpstreamCalls`). Upstream's errors are translated by the stock
target's `translated` (``InferenceModelNotFound`` -> ``ModelNotFound``,
``ModelManagerLockAcquisitionError`` -> ``UpstreamLockTimeout``), chained to
the original; every other exception passes through as raised.
"""

from __future__ import annotations

import contextlib
import weakref
from collections import Counter
from typing import Any

import inference.core.exceptions as upstream_errors

from models_spec.targets.roboflow_inference._fakes import InferenceRequest
from models_spec.targets.roboflow_inference._stack import UpstreamCalls, translated

__all__ = ["DropinStack"]

_RUNNING: weakref.WeakKeyDictionary[DropinStack, Counter[str]] = weakref.WeakKeyDictionary()
"""Requests in progress per stack (kept off the stack, so the suite's race watching,
which walks the stack's attributes, does not see the harness's own bookkeeping; one
thread runs at a time under lockstep, so the counts need no lock)."""

_NOT_FOUND = upstream_errors.InferenceModelNotFound


class _TranslatedLease:
    """A drop-in lease (or acquire) whose entry errors are the suite's."""

    def __init__(self, inner: contextlib.AbstractContextManager[Any]) -> None:
        self._inner = inner

    def __enter__(self) -> Any:
        with translated():
            return self._inner.__enter__()

    def __exit__(self, *exc_info: Any) -> bool | None:
        with translated():
            return self._inner.__exit__(*exc_info)


class DropinStack(UpstreamCalls):
    """The suite's view of one drop-in stack; `top` is its outermost layer."""

    def __init__(self, top: Any) -> None:
        self.top = top
        self.core = top.core
        # The layer the suite's default race watching walks into (models_spec._harness.watching):
        # the drop-in's state is its core's.
        self.manager = top.core

    def clear(self) -> None:
        """``top.clear()`` (tries every id); one failure is wrapped in the
        ``ExceptionGroup`` the suite's clear raises (several already are one)."""
        with translated():
            try:
                self.top.clear()
            except ExceptionGroup:
                raise
            except Exception as error:
                raise ExceptionGroup("clear() failed on 1 model", [error]) from None

    def refresh(self, model_id: str) -> None:
        """An inference request for `model_id` (lease, refresh, run the model).

        Counted in `requests_running` from before the call to after it returns, so
        the request's own lease (taken and given back within) is never reported
        as one of the suite's lease blocks (`request_leases`).
        """
        running = _RUNNING.setdefault(self, Counter())
        running[model_id] += 1
        try:
            with translated():
                try:
                    self.top.infer_from_request_sync(model_id, InferenceRequest())
                except _NOT_FOUND:
                    return
        finally:
            running[model_id] -= 1

    def requests_running(self) -> dict[str, int]:
        """Ids with requests (refreshes) in progress, and how many."""
        return {rid: count for rid, count in _RUNNING.get(self, Counter()).items() if count}

    def lease(self, model_id: str) -> _TranslatedLease:
        """``top.lease(model_id)``."""
        return _TranslatedLease(self.top.lease(model_id))

    def acquire(
        self, model_id: str, api_key: str | None = None, model_id_alias: str | None = None
    ) -> _TranslatedLease:
        """``top.acquire(model_id, api_key, model_id_alias)``."""
        return _TranslatedLease(self.top.acquire(model_id, api_key, model_id_alias))

    def unpin_model(self, model_id: str) -> None:
        """``top.unpin_model(model_id)``."""
        with translated():
            self.top.unpin_model(model_id)

    def lru_order(self) -> list[str]:
        """The core cache's LRU, least recent first."""
        return list(self.core.lru_order())

    def statistics(self) -> Any:
        """The core's counters."""
        return self.core.statistics()

    def lease_counts(self) -> dict[str, int]:
        """Ids with leases (the core's)."""
        return dict(self.core.lease_counts())

    def lifecycle_snapshot(self) -> Any:
        """The core's lifecycle table."""
        return self.core.lifecycle_snapshot()

    def __repr__(self) -> str:
        return f"DropinStack({type(self.top).__name__})"

"""`UpstreamStack`: the suite's operations, each one call of upstream's public API.

The scenarios drive a stack through a small vocabulary (``add_model``,
``remove``, ``refresh``, ``stack[id]``, ``pin_model``, ``describe_models``,
``keys``, ``lru_order``).  This facade maps each word to the upstream call a
server makes for it and adds no synchronisation of its own:

* ``add_model(id, api_key, alias)`` -> ``add_model(id, api_key,
  model_id_alias=alias)`` of the top layer; ``pin=True`` (scenario setup
  only, before any thread starts) adds, then ``pin_model`` (upstream has no
  atomic form);
* ``remove(id)`` -> ``remove(id)`` (``delete_from_disk`` at its default);
* ``refresh(id)`` -> ``infer_from_request_sync(id, request)``: an inference
  request, which is how upstream moves an id to the most-recent end (every
  inference entry point refreshes, then runs the model).  An inference on
  an id that is not loaded answers "not found"; the suite's refresh of an
  unregistered id is a no-op, so that answer is the refresh's normal end;
* ``stack[id]``, ``keys()``, ``len``, ``in``, ``pin_model``,
  ``describe_models`` -> the same names;
* ``lru_order()`` -> the cache's ``_key_queue`` (upstream's LRU deque),
  least recent first; ``_lru_lock`` -> its ``_queue_lock`` (read by the
  scenarios that watch whether the LRU lock is held, I14).

Upstream's error vocabulary is translated to the suite's, chained to the
original (``__cause__``): ``ModelManagerLockAcquisitionError`` (a lock wait
that timed out) -> `UpstreamLockTimeout` (a `TimeoutError`: the spec's
"LockTimeout"), ``InferenceModelNotFound`` -> `ModelNotFound` (a
`LookupError`).  Every other exception, the scripted load and unload
failures included, passes through as the very object upstream raised (I16
compares identities).  ``unpin_model`` raises `NotImplementedError`: 1.8.3
has no way to unpin.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from models_spec.targets.roboflow_inference import upstream
from models_spec.targets.roboflow_inference._fakes import InferenceRequest

__all__ = ["ModelNotFound", "UpstreamCalls", "UpstreamLockTimeout", "UpstreamStack", "translated"]


class UpstreamLockTimeout(TimeoutError):
    """Upstream's ``ModelManagerLockAcquisitionError``: a bounded lock wait gave up."""


class ModelNotFound(LookupError):
    """Upstream's ``InferenceModelNotFound``: no model is loaded under the id."""


@contextlib.contextmanager
def translated() -> Iterator[None]:
    """Upstream's lock timeout and "not found" as the suite's errors, chained to the
    original; every other exception passes through as raised."""
    try:
        yield
    except upstream.ModelManagerLockAcquisitionError as error:
        raise UpstreamLockTimeout(str(error)) from error
    except upstream.InferenceModelNotFound as error:
        raise ModelNotFound(str(error)) from error


class UpstreamCalls:
    """The suite's words that are one call of upstream's API on the stack's `top` layer,
    upstream's errors translated; the stock stack and the drop-in's stack (whose classes
    have upstream's API) both answer them so."""

    top: Any

    def add_model(
        self,
        model_id: str,
        api_key: str | None = None,
        model_id_alias: str | None = None,
        *,
        pin: bool = False,
    ) -> None:
        """``top.add_model(model_id, api_key, model_id_alias=...)``; then pin if asked."""
        with translated():
            self.top.add_model(model_id, api_key, model_id_alias=model_id_alias)
            if pin:
                self.top.pin_model(model_id_alias if model_id_alias is not None else model_id)

    def remove(self, model_id: str, delete_from_disk: bool = True) -> None:
        """``top.remove(model_id, delete_from_disk=...)``."""
        with translated():
            self.top.remove(model_id, delete_from_disk=delete_from_disk)

    def pin_model(self, model_id: str) -> None:
        """``top.pin_model(model_id)``."""
        with translated():
            self.top.pin_model(model_id)

    def describe_models(self) -> Any:
        """``top.describe_models()``."""
        with translated():
            return self.top.describe_models()

    def keys(self) -> list[str]:
        """The top layer's ids."""
        return list(self.top.keys())

    def __getitem__(self, model_id: str) -> Any:
        with translated():
            return self.top[model_id]

    def __contains__(self, model_id: object) -> bool:
        return model_id in self.top

    def __len__(self) -> int:
        return len(self.top)


class UpstreamStack(UpstreamCalls):
    """The suite's view of one upstream stack (see the module docstring).

    `top` is the outermost upstream object, `manager` the innermost
    ``ModelManager``, `cache` the ``WithFixedSizeCache`` layer (None for a
    bare manager), `ghost` the scenario's ghost (for in-flight loads).
    """

    def __init__(self, top: Any, manager: Any, cache: Any, ghost: Any) -> None:
        self.top = top
        self.manager = manager
        self.cache = cache
        self.ghost = ghost
        self._lru_lock = None if cache is None else cache._queue_lock

    def clear(self) -> None:
        """``top.clear()`` (1.8.3 removes the ids one by one and stops at the first failure)."""
        with translated():
            self.top.clear()

    def refresh(self, model_id: str) -> None:
        """An inference request for `model_id` (refreshes the LRU, runs the model)."""
        with translated():
            try:
                self.top.infer_from_request_sync(model_id, InferenceRequest())
            except upstream.InferenceModelNotFound:
                return

    def unpin_model(self, model_id: str) -> None:
        """Not in inference 1.8.3."""
        raise NotImplementedError(f"inference {upstream.VERSION} has no unpin_model")

    def lru_order(self) -> tuple[str, ...]:
        """Upstream's LRU deque, least recent first (duplicates and phantoms included)."""
        if self.cache is None:
            raise NotImplementedError("a bare ModelManager has no LRU")
        return tuple(self.cache._key_queue)

    def __repr__(self) -> str:
        return f"UpstreamStack({type(self.top).__name__}, inference {upstream.VERSION})"

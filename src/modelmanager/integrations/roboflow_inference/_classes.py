"""The drop-in classes: upstream's manager API on the core (imports ``inference``).

Imported lazily by the package (``modelmanager.integrations.roboflow_inference``)
the first time a class or `install` is asked for; importing it imports
``inference.core.managers``. The upstream classes are captured here, at this
module's first import, so `install` can replace the names in upstream's
modules while these classes keep subclassing the originals.

Where state lives. Every decision about models (loading, the per-id lifecycle,
the LRU, pins, the bound, memory-pressure eviction, unloading, leases) is the
core's: the manager holds a :class:`modelmanager.ModelManager` (``core``), the
cache a :class:`modelmanager.WithFixedSizeCache` over the inner layer's
``core``. What is kept here is translation only: the arguments of one load
(`_LoadArgs`), the request metadata ``describe_models`` reports (upstream's two
dicts, written by upstream's own ``record_request_metadata``), the lease of the
request running in this context (a context variable) and whether this thread
unloaded something it must reclaim memory for (a thread-local flag).

Settings are read where upstream reads them: the manager's module globals of
``inference.core.managers.base`` at call time (``MODELS_CACHE_AUTH_ENABLED``,
``OFFLINE_MODE``, ``USE_INFERENCE_MODELS``, ...) and at construction
(``MODEL_LOCK_ACQUIRE_TIMEOUT`` -> the core's ``lock_timeout``); the cache's of
``inference.core.managers.decorators.fixed_size_cache`` at construction
(``HOT_MODELS_QUEUE_LOCK_ACQUIRE_TIMEOUT`` -> ``queue_lock_timeout``,
``MEMORY_FREE_THRESHOLD`` -> ``memory_free_threshold`` with the core's torch
probe, ``DISK_CACHE_CLEANUP`` -> ``delete_evicted_from_disk`` and ``clear``'s
``delete_from_disk``) and at call time (its authorisation settings).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import gc
import threading
import time
import types
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

import attrs

import modelmanager
from modelmanager.errors import LockTimeout, ModelNotFound
from modelmanager.integrations.roboflow_inference._errors import IntegrationError, NotInstalled

try:
    import inference.core.exceptions as upstream_errors
    from inference.core.managers import base as upstream_base
    from inference.core.managers import entities as upstream_entities
    from inference.core.managers.decorators import base as upstream_decorators
    from inference.core.managers.decorators import fixed_size_cache as upstream_cache
except ImportError as error:  # pragma: no cover - exercised where inference is absent
    raise NotInstalled(error) from error

__all__ = [
    "UPSTREAM_CACHE",
    "UPSTREAM_DECORATOR",
    "UPSTREAM_MANAGER",
    "ModelManager",
    "ModelManagerDecorator",
    "WithFixedSizeCache",
]

UPSTREAM_MANAGER: Final[type] = upstream_base.ModelManager
UPSTREAM_DECORATOR: Final[type] = upstream_decorators.ModelManagerDecorator
UPSTREAM_CACHE: Final[type] = upstream_cache.WithFixedSizeCache


def _upstream(module: Any, name: str, default: Any = None) -> Any:
    """``module.name`` now (a setting or helper; monkeypatching upstream's module works)."""
    return getattr(module, name, default)


# --------------------------------------------------------------- translation


@contextlib.contextmanager
def _translated() -> Iterator[None]:
    """The core's errors as upstream names them, chained to the core's."""
    try:
        yield
    except LockTimeout as error:
        raise upstream_errors.ModelManagerLockAcquisitionError(str(error)) from error
    except ModelNotFound as error:
        model_id = error.model_id
        raise upstream_errors.InferenceModelNotFound(
            f"Model with id {model_id} not loaded."
        ) from error


def _cache_key(registry_id: str, capabilities: list[str] | None, output_type: str) -> str:
    """Upstream's key for an id loaded with ``required_capabilities`` (1.8.3+)."""
    if not capabilities:
        return registry_id
    key_of = _upstream(upstream_base, "model_cache_key")
    return registry_id if key_of is None else str(key_of(registry_id, capabilities, output_type))


@attrs.frozen
class _LoadArgs:
    """One ``add_model`` call's upstream arguments, passed through the core to the loader."""

    registry_id: str
    model_id_alias: str | None = None
    countinference: bool | None = None
    service_secret: str | None = None
    required_capabilities: list[str] | None = None
    output_type: str = "feature_vector"
    instance: Any = None  # an already-built model (``ModelManager(models=...)``)


def _authorize(module: Any, model_id: str, api_key: str | None, **kwargs: Any) -> None:
    """Upstream's model-cache authorisation, with ``module``'s settings and checker."""
    if _upstream(module, "MODELS_CACHE_AUTH_ENABLED") and not _upstream(module, "OFFLINE_MODE"):
        check = _upstream(module, "_check_if_api_key_has_access_to_model")
        if not check(api_key=api_key, model_id=model_id, **kwargs):
            raise upstream_errors.RoboflowAPINotAuthorizedError(
                f"API key {api_key} does not have access to model {model_id}"
            )


def _note_model_id(resolved_id: str) -> None:
    ids = _upstream(upstream_base, "request_model_ids")
    collector = ids.get(None) if ids is not None else None
    if collector is not None:
        collector.add(resolved_id)


@attrs.frozen
class _AddCall:
    """One upstream ``add_model`` call's arguments, passed along as one.

    Every layer's ``add_model`` is `ModelManager.add_model` (upstream's signature,
    stated once); what a layer does with the call is its ``_add_call``.
    """

    model_id: str
    api_key: str | None
    model_id_alias: str | None
    endpoint_type: Any
    countinference: bool | None
    service_secret: str | None
    required_capabilities: list[str] | None
    output_type: str


def _add(core: Any, owner: Any, auth_module: Any, call: _AddCall) -> None:
    """One upstream ``add_model`` call: authorised with ``auth_module``'s settings and
    checker, its request metadata recorded on ``owner`` (the manager that answers
    requests), then loaded (or hit) through the core layer ``core``."""
    model_id, model_id_alias = call.model_id, call.model_id_alias
    endpoint_type = call.endpoint_type
    if endpoint_type is None:
        endpoint_type = upstream_base.ModelEndpointType.ORT
    _authorize(
        auth_module,
        model_id,
        call.api_key,
        endpoint_type=endpoint_type,
        countinference=call.countinference,
        service_secret=call.service_secret,
    )
    registry_id = model_id if model_id_alias is None else model_id_alias
    resolved_id = _cache_key(registry_id, call.required_capabilities, call.output_type)
    _note_model_id(resolved_id)
    owner.record_request_metadata(
        model_id=resolved_id, original_model_id=model_id, model_id_alias=model_id_alias
    )
    load = _LoadArgs(
        registry_id,
        model_id_alias,
        call.countinference,
        call.service_secret,
        call.required_capabilities,
        call.output_type,
    )
    with _translated():
        core.add_model(
            model_id, call.api_key, None if resolved_id == model_id else resolved_id, load=load
        )


# -------------------------------------------------------------------- leases

_MISSING: Final = object()
_REQUEST_LEASES: contextvars.ContextVar[tuple[tuple[str, Any], ...]] = contextvars.ContextVar(
    "roboflow_dropin_request_leases", default=()
)
"""(resolved id, model or _MISSING) of the leases the running request holds."""


def _leased(model_id: str) -> Any:
    """The model this context's request holds a lease on, _MISSING, or None."""
    for leased_id, model in _REQUEST_LEASES.get():
        if leased_id == model_id:
            return model
    return None


@contextlib.contextmanager
def _request_lease(layer: Any, model_id: str) -> Iterator[None]:
    """Hold a lease on ``model_id`` at ``layer`` (a core layer) for the request's whole run.

    Nested uses in the same context (the decorators' call reaching the
    manager) reuse the outer lease. An id that is not loaded holds none: the
    request then answers upstream's "not found" through upstream's own path
    (telemetry and error caching included), never a model loaded meanwhile.
    """
    if _leased(model_id) is not None:
        yield
        return
    with contextlib.ExitStack() as stack:
        try:
            with _translated():
                model = stack.enter_context(layer.lease(model_id))
        except upstream_errors.InferenceModelNotFound:
            model = _MISSING
        token = _REQUEST_LEASES.set((*_REQUEST_LEASES.get(), (model_id, model)))
        try:
            yield
        finally:
            _REQUEST_LEASES.reset(token)


@contextlib.contextmanager
def _held_lease(layer: Any, model_id: str, lease: Any) -> Iterator[Any]:
    """Enter ``lease`` (a core lease or acquire of ``model_id`` at ``layer``) and publish
    it to this context's request path; yield the model."""
    with contextlib.ExitStack() as stack:
        with _translated():
            model = stack.enter_context(lease)
        token = _REQUEST_LEASES.set((*_REQUEST_LEASES.get(), (model_id, model)))
        try:
            yield model
        finally:
            _REQUEST_LEASES.reset(token)


# ------------------------------------------------------- memory reclamation

_RECLAIM = threading.local()
"""``pending``: this thread unloaded a model and has not reclaimed memory since;
``unloaded``: a weak reference to each model it unloaded since (None for a model
that cannot be weakly referenced)."""


def _note_unloaded(model: Any) -> None:
    """Mark this thread for reclamation and remember ``model`` weakly."""
    try:
        ref: weakref.ref[Any] | None = weakref.ref(model)
    except TypeError:
        ref = None
    _RECLAIM.pending = True
    unloaded = getattr(_RECLAIM, "unloaded", None)
    if unloaded is None:
        unloaded = _RECLAIM.unloaded = []
    unloaded.append(ref)


SURVIVOR_GRACE: Final = 1.0
"""Seconds an evicted model may stay alive before a collection is run for it."""

_SURVIVORS_LOCK = threading.Lock()
_SURVIVORS: list[tuple[float, weakref.ref[Any]]] = []
"""Guarded by _SURVIVORS_LOCK (a leaf lock): evicted models that were still alive at
their evicting request's reclamation, weakly, each with when that was (``_clock``)."""


def _clock() -> float:
    """Now, for the survivors' grace (``time`` by attribute, at call time; tests replace it)."""
    return time.monotonic()


def _reclaim(collect: bool) -> None:
    """After an unload, holding no lock: ``gc.collect()`` (evictions) and the CUDA cache.

    A full collection walks every object of the process (about 0.25 s in
    inference's server) with the GIL held, so it stalls every request, lock or
    no lock; it runs only where it can free an evicted model:

    * an evicted model that reference counting already freed needs none;
    * one still alive at its evicting request's end (other requests may hold
      it for a moment: ``describe_models`` holds every model, a thread waiting
      for the GIL holds what it was reading) is remembered, weakly; a later
      eviction's reclamation collects once one of them has stayed alive for
      `SURVIVOR_GRACE` seconds (a reference cycle, which only a collection
      frees), so at most one collection per `SURVIVOR_GRACE` is run for them;
    * a model that cannot be weakly referenced is collected for at once.
    """
    if not getattr(_RECLAIM, "pending", False):
        return
    _RECLAIM.pending = False
    unloaded: list[weakref.ref[Any] | None] = getattr(_RECLAIM, "unloaded", None) or []
    _RECLAIM.unloaded = []
    if collect:
        now = _clock()
        fresh = [(now, ref) for ref in unloaded if ref is not None and ref() is not None]
        with _SURVIVORS_LOCK:
            alive = [(noted, ref) for noted, ref in _SURVIVORS if ref() is not None]
            needed = None in unloaded or any(now - noted >= SURVIVOR_GRACE for noted, _ in alive)
            _SURVIVORS[:] = [] if needed else alive + fresh
        del unloaded, fresh, alive
        if needed:
            gc.collect()
    release = _upstream(upstream_base, "try_releasing_cuda_memory")
    if release is not None:
        release()


class _CoreManager(modelmanager.ModelManager):
    """The core manager with upstream's unload telemetry on every successful removal.

    Explicit removals and the cache's evictions both unload through ``remove``;
    after one succeeds (still under the id's lifecycle) it logs, records the
    unload and drops the id's request metadata, as upstream does, and marks
    this thread for memory reclamation, which runs outside every lock.
    """

    def __init__(self, owner: ModelManager, lock_timeout: float) -> None:
        super().__init__(_Registry(owner), lock_timeout=lock_timeout)
        self._owner = owner

    def remove(self, model_id: str, delete_from_disk: bool = True) -> None:
        with self.lifecycle(model_id):
            try:
                model = self[model_id]
            except (ModelNotFound, TypeError, ValueError):
                model = None
            super().remove(model_id, delete_from_disk=delete_from_disk)
            if model is not None and model_id not in self:
                self._owner._unloaded(model_id, model)


@attrs.frozen
class _Registry:
    """The core's registry protocol over upstream's: a factory running upstream's load."""

    owner: ModelManager

    def get_model(self, resolved_id: str) -> Callable[..., Any]:
        def factory(*, model_id: str, api_key: str | None = None, load: Any = None) -> Any:
            args = load if isinstance(load, _LoadArgs) else _LoadArgs(registry_id=resolved_id)
            if args.instance is not None:
                return args.instance
            return self.owner._construct(resolved_id, model_id, api_key, args)

        return factory


# ------------------------------------------------------------------ classes


class ModelManager(UPSTREAM_MANAGER):
    """``inference``'s ``ModelManager`` API with the core's state (see the module doc).

    Same constructor, methods and errors as upstream's; the request code
    (``infer_from_request`` and its telemetry, model monitoring, pingback) is
    upstream's own, run under a lease on the model. The differences are
    listed in docs/roboflow-dropin.md.
    """

    def __init__(
        self,
        model_registry: Any,
        models: dict[str, Any] | None = None,
        content_addressed_artifact_cache: Any = None,
    ) -> None:
        self.model_registry = model_registry
        self.pingback = None
        # Request metadata (translation: what describe_models reports), guarded by
        # _metadata_lock, a leaf lock held for single dict operations only.
        self._metadata_lock = threading.Lock()
        self._model_request_aliases: dict[str, set[str]] = {}
        self._model_request_paths: dict[str, set[str]] = {}
        self.torchscript_state_global_lock = threading.Lock()
        if (
            _upstream(upstream_base, "USE_INFERENCE_MODELS")
            and content_addressed_artifact_cache is None
        ):
            from inference_models.utils.model_blob_cache import (  # noqa: PLC0415
                get_shared_model_blob_cache,
            )

            content_addressed_artifact_cache = get_shared_model_blob_cache()
        self.content_addressed_artifact_cache = content_addressed_artifact_cache
        timeout = _upstream(upstream_base, "MODEL_LOCK_ACQUIRE_TIMEOUT", 60.0)
        self.core: Any = _CoreManager(self, float(timeout))
        for model_id, model in (models or {}).items():
            self.core.add_model(model_id, load=_LoadArgs(registry_id=model_id, instance=model))

    @property
    def _models(self) -> Mapping[str, Any]:
        """A read-only snapshot of the loaded models (upstream's private table, for readers)."""
        return types.MappingProxyType(self.models())

    @_models.setter
    def _models(self, value: object) -> None:
        raise AttributeError(
            "the drop-in keeps its models in the core; load them with add_model() "
            "(or ModelManager(registry, models={...}) at construction)"
        )

    # --------------------------------------------------------------- loading

    def add_model(  # noqa: PLR0917 - upstream's signature, positional arguments included
        self,
        model_id: str,
        api_key: str | None,
        model_id_alias: str | None = None,
        endpoint_type: Any = None,
        countinference: bool | None = None,
        service_secret: str | None = None,
        required_capabilities: list[str] | None = None,
        output_type: str = "feature_vector",
    ) -> None:
        """Load ``model_id`` under its key unless it is loaded (upstream's contract).

        Every layer of the drop-in answers with this method; its own part is its
        ``_add_call``.
        """
        self._add_call(
            _AddCall(
                model_id,
                api_key,
                model_id_alias,
                endpoint_type,
                countinference,
                service_secret,
                required_capabilities,
                output_type,
            )
        )

    def _add_call(self, call: _AddCall) -> None:
        """The bare manager's add: authorised, recorded on this manager, loaded by its core."""
        _add(self.core, self, upstream_base, call)

    def record_request_metadata(
        self,
        model_id: str,
        original_model_id: str | None = None,
        model_id_alias: str | None = None,
    ) -> None:
        """Note the aliases and request path ``describe_models`` reports for ``model_id``.

        Upstream's contract, under the metadata lock (upstream's unsynchronised
        check-then-insert raises ``KeyError`` when an unload pops the id between them).
        """
        aliases = {
            alias
            for alias in (original_model_id, model_id_alias)
            if alias is not None and alias != model_id
        }
        path_of = _upstream(upstream_base, "current_request_path")
        path = path_of.get(None) if path_of is not None else None
        with self._metadata_lock:
            self._model_request_aliases.setdefault(model_id, set()).update(aliases)
            if path:
                self._model_request_paths.setdefault(model_id, set()).add(path)

    def _construct(
        self, resolved_id: str, model_id: str, api_key: str | None, args: _LoadArgs
    ) -> Any:
        """Upstream's load of one model (called by the core under the id's lifecycle)."""
        base = upstream_base
        try:
            with base.start_span("model.load", {"model.id": resolved_id}):
                started = time.perf_counter()
                vram_of = _upstream(base, "_get_cuda_memory_allocated", lambda: None)
                vram_before = vram_of()
                model_class = self.model_registry.get_model(
                    args.registry_id,
                    api_key,
                    countinference=args.countinference,
                    service_secret=args.service_secret,
                )
                capabilities = args.required_capabilities
                if capabilities and not hasattr(model_class, "infer_embeddings_from_request"):
                    raise upstream_errors.ModelDeploymentNotSupportedError(
                        "Image embeddings require a ResNet, ViT or DINOv3 classifier."
                    )
                extra: dict[str, Any] = {}
                if capabilities:
                    extra["required_capabilities"] = capabilities
                if "image_embeddings" in (capabilities or []):
                    extra["output_type"] = args.output_type
                if _upstream(base, "USE_INFERENCE_MODELS"):
                    extra["torchscript_state_global_lock"] = self.torchscript_state_global_lock
                    extra["content_addressed_artifact_cache"] = (
                        self.content_addressed_artifact_cache
                    )
                model = model_class(
                    model_id=model_id,
                    api_key=api_key,
                    countinference=args.countinference,
                    service_secret=args.service_secret,
                    **extra,
                )
                bind = _upstream(base, "bind_usage_model_descriptor") or _upstream(
                    base, "bind_usage_model_identity"
                )
                if bind is not None:
                    bind(model, model_id, resolved_id, args.model_id_alias)
                vram_after = vram_of()
                if vram_before is not None and vram_after is not None:
                    model._vram_bytes = vram_after - vram_before
                _pass_serverless_arguments(model, args)
                load_time = time.perf_counter() - started
                base.set_span_attribute("model.load_time_seconds", load_time)
                base.record_model_loaded(resolved_id, load_time)
                base.logger.info(
                    "Model loaded: model_id=%s, load_time=%.2fs, task_type=%s, vram_bytes=%s",
                    resolved_id,
                    load_time,
                    getattr(model, "task_type", "unknown"),
                    getattr(model, "_vram_bytes", None),
                )
                info = _upstream(base, "model_load_info")
                collector = info.get(None) if info is not None else None
                if collector is not None:
                    collector.record(model_id=resolved_id, load_time=load_time)
                return model
        except Exception as error:
            base.record_error(error)
            raise

    def _unloaded(self, model_id: str, model: Any) -> None:
        """Upstream's bookkeeping after an unload (under the id's lifecycle; cheap)."""
        base = upstream_base
        base.logger.info(
            "Model unloaded: model_id=%s, task_type=%s, vram_bytes=%s, remaining_models=%d",
            model_id,
            getattr(model, "task_type", "unknown"),
            getattr(model, "_vram_bytes", None),
            len(self.core),
        )
        base.record_model_unloaded(model_id)
        with self._metadata_lock:
            self._model_request_aliases.pop(model_id, None)
            self._model_request_paths.pop(model_id, None)
        _note_unloaded(model)

    # -------------------------------------------------------------- removing

    def remove(self, model_id: str, delete_from_disk: bool = True) -> None:
        """Unload ``model_id`` once no request runs it; unknown ids are a no-op."""
        try:
            with _translated():
                self.core.remove(model_id, delete_from_disk=delete_from_disk)
        finally:
            _reclaim(collect=False)

    def clear(self) -> None:
        """Remove every model, trying each (one failure raised as is, several as a group)."""
        _clear(self, delete_from_disk=True)

    # --------------------------------------------------------------- reading

    def _get_model_reference(self, model_id: str) -> Any:
        leased = _leased(model_id)
        if leased is _MISSING:
            raise upstream_errors.InferenceModelNotFound(f"Model with id {model_id} not loaded.")
        if leased is not None:
            return leased
        with _translated():
            return self.core[model_id]

    def __getitem__(self, key: str) -> Any:
        return self._get_model_reference(key)

    def __contains__(self, model_id: object) -> bool:
        return model_id in self.core

    def __len__(self) -> int:
        return len(self.core)

    def keys(self) -> list[str]:
        """The loaded keys (a snapshot list; upstream returns its dict's live view)."""
        return list(self.core.keys())

    def models(self) -> dict[str, Any]:
        """The loaded models (a snapshot dict; upstream returns its live dict)."""
        loaded: dict[str, Any] = {}
        for model_id in list(self.core.keys()):
            with contextlib.suppress(ModelNotFound):
                loaded[model_id] = self.core[model_id]
        return loaded

    def describe_models(self) -> list[Any]:
        """Upstream's ``ModelDescription`` of each loaded model."""
        fields = {field.name for field in dataclasses.fields(upstream_entities.ModelDescription)}
        descriptions = []
        for model_id, model in self.models().items():
            with self._metadata_lock:
                aliases = sorted(self._model_request_aliases.get(model_id, ()))
                paths = sorted(self._model_request_paths.get(model_id, ()))
            values = {
                "model_id": model_id,
                "task_type": model.task_type,
                "batch_size": getattr(model, "batch_size", None),
                "input_width": getattr(model, "img_size_w", None),
                "input_height": getattr(model, "img_size_h", None),
                "vram_bytes": getattr(model, "_vram_bytes", None),
                "request_aliases": aliases,
                "request_paths": paths,
            }
            descriptions.append(
                upstream_entities.ModelDescription(
                    **{name: value for name, value in values.items() if name in fields}
                )
            )
        return descriptions

    # ---------------------------------------------------- leases (not upstream)

    def lease(self, model_id: str) -> contextlib.AbstractContextManager[Any]:
        """The lease every request holds, for code that runs a model itself.

        A context manager yielding the loaded model: while it is held the model
        is neither removed nor evicted (``remove`` waits, bounded by
        ``MODEL_LOCK_ACQUIRE_TIMEOUT``). Raises ``InferenceModelNotFound`` on
        entry when ``model_id`` is not loaded. Requests run inside it reuse it.
        """
        return _held_lease(self.core, model_id, self.core.lease(model_id))

    def acquire(
        self, model_id: str, api_key: str | None = None, model_id_alias: str | None = None
    ) -> contextlib.AbstractContextManager[Any]:
        """Load (or hit) and lease in one step: nothing can unload the model in between.

        Upstream's server adds, then infers, and an eviction can come between
        the two; this closes that window. Raises what ``add_model`` raises.
        """
        registry_id = model_id if model_id_alias is None else model_id_alias
        load = _LoadArgs(registry_id, model_id_alias)
        _note_model_id(registry_id)
        self.record_request_metadata(
            model_id=registry_id, original_model_id=model_id, model_id_alias=model_id_alias
        )
        return _held_lease(
            self.core, registry_id, self.core.acquire(model_id, api_key, model_id_alias, load=load)
        )

    # ------------------------------------------------------------- requests

    async def infer_from_request(self, model_id: str, request: Any, **kwargs: Any) -> Any:
        """Upstream's request path, holding a lease on the model until it returns."""
        with _request_lease(self.core, model_id):
            return await super().infer_from_request(model_id, request, **kwargs)

    def infer_from_request_sync(self, model_id: str, request: Any, **kwargs: Any) -> Any:
        """Upstream's request path, holding a lease on the model until it returns."""
        with _request_lease(self.core, model_id):
            return super().infer_from_request_sync(model_id, request, **kwargs)

    def run_tensor_native_inference(self, model_id: str, **kwargs: Any) -> Any:
        """Upstream's tensor path, holding a lease on the model until it returns."""
        with _request_lease(self.core, model_id):
            return super().run_tensor_native_inference(model_id, **kwargs)

    def run_tensor_native_embeddings(self, model_id: str, **kwargs: Any) -> Any:
        """Upstream's embeddings path (1.8.3+), holding a lease on the model until it returns."""
        with _request_lease(self.core, model_id):
            return super().run_tensor_native_embeddings(model_id, **kwargs)

    def predict(self, model_id: str, *args: Any, **kwargs: Any) -> Any:
        """Upstream's ``predict``, holding a lease on the model until it returns."""
        with _request_lease(self.core, model_id):
            return super().predict(model_id, *args, **kwargs)


def _pass_serverless_arguments(model: Any, args: _LoadArgs) -> None:
    """Upstream's serverless override of the artifact download (same condition)."""
    if not (
        hasattr(model, "download_model_artifacts_from_roboflow_api")
        and _upstream(upstream_base, "INTERNAL_WEIGHTS_URL_SUFFIX") == "serverless"
        and hasattr(model, "cache_model_artefacts")
        and not model.has_model_metadata
    ):
        return
    original = model.download_model_artifacts_from_roboflow_api

    def download() -> Any:
        return original(countinference=args.countinference, service_secret=args.service_secret)

    model.download_model_artifacts_from_roboflow_api = download


def _clear(manager: Any, *, delete_from_disk: bool) -> None:
    """Remove every id through ``manager.remove``, trying each.

    One failure is raised as it is (upstream's type, for upstream's handlers);
    several as an ``ExceptionGroup`` of them. Each failed model stays loaded.
    """
    errors: list[Exception] = []
    for model_id in list(manager.keys()):
        try:
            manager.remove(model_id, delete_from_disk=delete_from_disk)
        except Exception as error:
            errors.append(error)
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise ExceptionGroup(f"clear() failed on {len(errors)} models", errors)


def _core_of(manager: object) -> Any:
    core = getattr(manager, "core", None)
    if not isinstance(manager, ModelManager) or core is None:
        raise IntegrationError(
            "the drop-in decorators wrap drop-in managers only (got "
            f"{type(manager).__qualname__}); build the stack from "
            "modelmanager.integrations.roboflow_inference or call install() first"
        )
    return core


class ModelManagerDecorator(UPSTREAM_DECORATOR, ModelManager):
    """``inference``'s ``ModelManagerDecorator``: delegates to ``model_manager``.

    Shares the inner manager's core layer (``core``), so a cache above it
    keeps the core's whole protocol. A subclass overriding ``add_model``
    above a cache runs as upstream's does; beneath a cache, the cache's loads
    go to the core directly (docs/roboflow-dropin.md).
    """

    def __init__(self, model_manager: Any) -> None:
        self.model_manager = model_manager
        self.core = _core_of(model_manager)

    # Reads answer from this layer's core (a cache's committed view, not the inner
    # manager's registry, which lists a model before the cache commits it).
    __contains__ = ModelManager.__contains__
    __getitem__ = ModelManager.__getitem__
    __len__ = ModelManager.__len__
    keys = ModelManager.keys
    models = ModelManager.models
    _get_model_reference = ModelManager._get_model_reference
    # Upstream's signature, stated once (upstream's decorator comes first in the MRO).
    add_model = ModelManager.add_model

    def describe_models(self) -> list[Any]:
        """The inner manager's descriptions."""
        return list(self.model_manager.describe_models())

    def _add_call(self, call: _AddCall) -> None:
        """The inner manager's ``add_model`` (which answers a warm id itself, by its key).

        Upstream's decorator first tests ``model_id in self``, the canonical id
        rather than the key, so an alias whose model id is loaded was never
        loaded (B10); the inner layer's test is atomic with its load.
        """
        kwargs: dict[str, Any] = {}
        if call.endpoint_type is not None:
            kwargs["endpoint_type"] = call.endpoint_type
        if call.required_capabilities:
            kwargs["required_capabilities"] = call.required_capabilities
            kwargs["output_type"] = call.output_type
        self.model_manager.add_model(
            call.model_id,
            call.api_key,
            model_id_alias=call.model_id_alias,
            countinference=call.countinference,
            service_secret=call.service_secret,
            **kwargs,
        )

    def pin_model(self, model_id: str) -> None:
        """The inner layer's ``pin_model`` (a cache beneath this decorator)."""
        self.model_manager.pin_model(model_id)

    def unpin_model(self, model_id: str) -> None:
        """The inner layer's ``unpin_model`` (a cache beneath this decorator)."""
        self.model_manager.unpin_model(model_id)

    def clear(self) -> None:
        """Remove every model through this layer's ``remove``, trying each."""
        _clear(self, delete_from_disk=True)


class WithFixedSizeCache(ModelManagerDecorator):
    """``inference``'s ``WithFixedSizeCache`` on :class:`modelmanager.WithFixedSizeCache`.

    ``max_size`` models at most; least recently used first out, pinned and
    leased models never; a cold add when every other model is pinned or
    leased loads over the bound (upstream's "proceed"), and the bound comes
    back when a lease ends. Settings: see the module doc.
    """

    def __init__(self, model_manager: Any, max_size: int = 8, *, memory_probe: Any = None) -> None:
        """Upstream's constructor; ``memory_probe`` (not upstream's) replaces the core's
        torch probe (:class:`modelmanager.MemoryProbe`), e.g. for a non-CUDA device."""
        super().__init__(model_manager)
        module = upstream_cache
        threshold = float(_upstream(module, "MEMORY_FREE_THRESHOLD", 0.0) or 0.0)
        self._delete_on_clear = bool(_upstream(module, "DISK_CACHE_CLEANUP", True))
        self.core = modelmanager.WithFixedSizeCache(
            _core_of(model_manager),
            max_size,
            on_full="proceed",
            memory_probe=memory_probe,
            memory_free_threshold=threshold,
            queue_lock_timeout=float(
                _upstream(module, "HOT_MODELS_QUEUE_LOCK_ACQUIRE_TIMEOUT", 5.0)
            ),
            delete_evicted_from_disk=self._delete_on_clear,
        )

    @property
    def max_size(self) -> int:
        """The bound, in models."""
        size = self.core.max_size
        assert size is not None
        return int(size)

    # The bare manager's remove, on the cache's core (upstream's decorator comes first in
    # the MRO and would delegate to the inner manager).
    remove = ModelManager.remove

    def _add_call(self, call: _AddCall) -> None:
        """Load (or hit) the model and make it the most recently used; evicts for room."""
        try:
            _add(self.core, self.model_manager, upstream_cache, call)
        finally:
            _reclaim(collect=True)

    def clear(self) -> None:
        """Remove every model (``delete_from_disk=DISK_CACHE_CLEANUP``), trying each."""
        _clear(self, delete_from_disk=self._delete_on_clear)

    def pin_model(self, model_id: str) -> None:
        """Pin ``model_id`` (loaded or not): never evicted. Waits for its add/remove in flight."""
        with _translated():
            self.core.pin_model(model_id)

    def unpin_model(self, model_id: str) -> None:
        """Unpin ``model_id`` (not in upstream 1.8.3); the bound comes back if it was over."""
        try:
            with _translated():
                self.core.unpin_model(model_id)
        finally:
            _reclaim(collect=True)

    def memory_pressure_detected(self) -> bool:
        """Whether free memory is below ``MEMORY_FREE_THRESHOLD`` (the core's probe)."""
        threshold = self.core.memory_free_threshold
        if threshold <= 0:
            return False
        fraction = self.core.memory_probe.free_fraction()
        return fraction is not None and fraction < threshold

    def _refresh(self, model_id: str) -> None:
        with _translated():
            self.core.refresh(model_id)

    async def infer_from_request(self, model_id: str, request: Any, **kwargs: Any) -> Any:
        """A request: lease, mark most recently used, run upstream's path; lease ends after."""
        with _request_lease(self.core, model_id):
            self._refresh(model_id)
            return await super().infer_from_request(model_id, request, **kwargs)

    def infer_from_request_sync(self, model_id: str, request: Any, **kwargs: Any) -> Any:
        """A request: lease, mark most recently used, run upstream's path; lease ends after."""
        with _request_lease(self.core, model_id):
            self._refresh(model_id)
            return super().infer_from_request_sync(model_id, request, **kwargs)

    def run_tensor_native_inference(self, model_id: str, **kwargs: Any) -> Any:
        """The tensor path: lease, mark most recently used, run it."""
        with _request_lease(self.core, model_id):
            self._refresh(model_id)
            return super().run_tensor_native_inference(model_id, **kwargs)

    def infer_only(self, model_id: str, *args: Any, **kwargs: Any) -> Any:
        """Inference only: lease, mark most recently used, run it."""
        with _request_lease(self.core, model_id):
            self._refresh(model_id)
            return super().infer_only(model_id, *args, **kwargs)

    def run_tensor_native_embeddings(self, model_id: str, **kwargs: Any) -> Any:
        """The embeddings path (1.8.3+): lease, mark most recently used, run it."""
        with _request_lease(self.core, model_id):
            self._refresh(model_id)
            return super().run_tensor_native_embeddings(model_id, **kwargs)

    def preprocess(self, model_id: str, request: Any) -> Any:
        """Pre-processing: marks the model most recently used, as upstream does."""
        self._refresh(model_id)
        return super().preprocess(model_id, request)

"""The roboflow ``inference`` drop-in (``modelmanager.integrations.roboflow_inference``), checked.

``lockstep check --target models_spec.targets.roboflow_dropin`` runs every
scenario against the adapters named in `ADAPTERS`, built from the drop-in's
classes (upstream's API, the core's state) with the suite's scripted fakes,
shaped as upstream's registry and models are (the stock target's
`UpstreamRegistry`):

* ``stack`` (`dropin-stack`): ``WithFixedSizeCache(ModelManager(registry),
  max_size=N)``, how the server stacks them;
* ``nested`` (`dropin-nested`): ``ModelManagerDecorator(WithFixedSizeCache(
  ModelManagerDecorator(ModelManager(registry))))``: pass-through decorators
  above and beneath the cache.

Both declare every capability the drop-in has: ``lru``, ``pins`` (pin and
unpin), ``leases`` (the lease every request holds, ``lease``/``acquire``),
``lifecycle``, ``capacity``, ``memory`` (a probe given to the cache;
``MEMORY_FREE_THRESHOLD`` is the probe's threshold), ``aliases``, ``refresh``
(an inference request, ``infer_from_request_sync``), ``adopt`` (models
loaded into the manager before the cache is built) and ``statistics`` (the
core's counters). The full-cache policy is upstream's: ``proceed``.

`build` passes the suite's timeouts as upstream's settings
(``MODEL_LOCK_ACQUIRE_TIMEOUT``, ``HOT_MODELS_QUEUE_LOCK_ACQUIRE_TIMEOUT``,
``MEMORY_FREE_THRESHOLD`` in upstream's manager modules, read by the drop-in
at construction), restoring them after. The state watched for data races is
the core's (the drop-in keeps none of its own beyond upstream's request
metadata, which is not watched). Without ``inference`` an adapter raises
`TargetUnavailable` naming the install command, as the stock target does.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Any, Final, Unpack

import attrs

from models_spec.adapter import CAPABILITIES as ADAPTER_CAPABILITIES
from models_spec.adapter import (
    BuildKwargs,
    BuildOptions,
    Snapshot,
    core_adapters,
)
from models_spec.targets.roboflow_inference._environment import import_upstream

__all__ = ["ADAPTERS", "CAPABILITIES", "DropinAdapter", "nested", "stack"]

CAPABILITIES: Final = ADAPTER_CAPABILITIES
"""Every capability an adapter may declare, as the core's adapters declare: the drop-in
keeps its core's whole protocol (the module docstring says what each means here)."""

_SETTINGS: Final = (
    ("inference.core.managers.base", "MODEL_LOCK_ACQUIRE_TIMEOUT"),
    (
        "inference.core.managers.decorators.fixed_size_cache",
        "HOT_MODELS_QUEUE_LOCK_ACQUIRE_TIMEOUT",
    ),
    ("inference.core.managers.decorators.fixed_size_cache", "MEMORY_FREE_THRESHOLD"),
)


@contextmanager
def _settings(values: Sequence[float]) -> Iterator[None]:
    """Upstream's module settings set to ``values`` (in `_SETTINGS` order), restored after."""
    modules = [importlib.import_module(module) for module, _ in _SETTINGS]
    saved = [getattr(module, name) for module, (_, name) in zip(modules, _SETTINGS, strict=True)]
    try:
        for module, (_, name), value in zip(modules, _SETTINGS, values, strict=True):
            setattr(module, name, value)
        yield
    finally:
        for module, (_, name), value in zip(modules, _SETTINGS, saved, strict=True):
            setattr(module, name, value)


@attrs.define
class DropinAdapter:
    """A drop-in stack; `nested` adds a pass-through decorator above and beneath the cache."""

    name: str
    nested: bool = False
    capabilities: frozenset[str] = CAPABILITIES
    on_full: str = "proceed"

    def build(self, registry: Any, **options: Unpack[BuildKwargs]) -> Any:
        """A fresh drop-in stack loading from `registry` (a `fakes.ScriptedRegistry`)."""
        import modelmanager.integrations.roboflow_inference as dropin  # noqa: PLC0415
        from models_spec.targets.roboflow_dropin._stack import DropinStack  # noqa: PLC0415
        from models_spec.targets.roboflow_inference._fakes import (  # noqa: PLC0415
            ARTIFACT_CACHE,
            UpstreamRegistry,
        )

        settings = BuildOptions(**options)
        probe = settings.memory_probe
        threshold = settings.cache_kwargs().get("memory_free_threshold", 0.0)
        with _settings((settings.lock_timeout, settings.queue_lock_timeout, threshold)):
            manager = dropin.ModelManager(
                UpstreamRegistry(registry), content_addressed_artifact_cache=ARTIFACT_CACHE
            )
            for model_id in settings.inner_models:
                manager.add_model(model_id, None)
            inner: Any = dropin.ModelManagerDecorator(manager) if self.nested else manager
            top: Any = dropin.WithFixedSizeCache(inner, settings.max_size, memory_probe=probe)
            if self.nested:
                top = dropin.ModelManagerDecorator(top)
        return DropinStack(top)

    def snapshot(self, stack: Any) -> Snapshot:
        """The core's state, read as the core's own adapter reads it; the leases of
        requests in progress (refreshes) are left out, so ``leases`` counts the
        suite's lease blocks only (I18 bounds them by the blocks open)."""
        snap = core_adapters()[0].fresh_snapshot(stack.core)
        running = stack.requests_running()
        if not running or snap.leases is None:
            return snap
        leases = {
            rid: held - running.get(rid, 0)
            for rid, held in snap.leases.items()
            if held > running.get(rid, 0)
        }
        return attrs.evolve(snap, leases=leases)

    def patch_modules(self) -> Sequence[ModuleType]:
        """The stock target's import module first (it imports upstream with the target's
        settings when a schedule is replayed), the core's concurrency modules, and the
        drop-in's classes (its locks are created per instance, after patching)."""
        upstream = importlib.import_module("models_spec.targets.roboflow_inference.upstream")
        import modelmanager.integrations.roboflow_inference as integration  # noqa: PLC0415

        dropin = [importlib.import_module(name) for name in integration.CONCURRENCY_MODULES]
        return [upstream, *core_adapters()[0].patch_modules(), *dropin]

    def statistics(self, stack: Any) -> dict[str, int]:
        """The core's counters."""
        return dict(attrs.asdict(stack.statistics()))


def stack() -> DropinAdapter:
    """``WithFixedSizeCache(ModelManager(registry), max_size=N)`` from the drop-in."""
    import_upstream()
    return DropinAdapter("dropin-stack")


def nested() -> DropinAdapter:
    """``Decorator(WithFixedSizeCache(Decorator(ModelManager(registry))))`` from the drop-in."""
    import_upstream()
    return DropinAdapter("dropin-nested", nested=True)


ADAPTERS: Final = ("stack", "nested")
"""What ``--target models_spec.targets.roboflow_dropin`` checks, in table order."""

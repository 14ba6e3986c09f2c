"""The model manager of roboflow's `inference` server (1.8.3) under the suite.

``lockstep check --target models_spec.targets.roboflow_inference`` runs
every scenario against the adapters named in `ADAPTERS`, built on the real
``inference.core.managers`` classes with the suite's scripted fakes
(`UpstreamRegistry`: nothing goes to the network or the disk):

* ``stack`` (`inference-stack`): ``WithFixedSizeCache(ModelManager(registry),
  max_size=N)``, how the server stacks them.  Capabilities: ``lru`` (the
  ``_key_queue`` deque), ``pins`` (``pin_model``; there is no unpin),
  ``capacity`` (``max_size``; in-flight loads = constructors running),
  ``refresh`` (an inference request) and ``aliases`` (``model_id_alias``);
* ``manager`` (`inference-manager`): the bare ``ModelManager``, which shows
  the per-model lock generations without the cache's LRU bugs in front of
  them (on the stack, every split-generation schedule first puts the id
  twice into the LRU);
* ``manager_never_dispose`` (`inference-manager-never-dispose`): the
  control, the same manager with lock disposal taken out
  (`NeverDisposeModelManager`): what fails on ``manager`` and passes here
  fails because of the disposal.

Not declared, so the scenarios needing them are SKIP, never PASS:
``leases`` (upstream has no lease: inference holds no claim on a model),
``lifecycle`` (the per-model lock table has no reservation counts, and it
keeps one lock per loaded id by design, so the suite's I1/I9 would judge a
design, not a race), ``memory`` (memory pressure is read from
``torch.cuda`` directly, with no probe to inject, and is off by default).

The adapters ignore `build`'s ``lock_timeout``/``queue_lock_timeout``:
upstream reads its timeouts from the environment at import
(`_environment.ENVIRONMENT`: 60 s and 5 s, its defaults); lockstep offers
every timed wait's timeout as a scheduling choice whatever its length.

Creating an adapter imports upstream (`upstream`); without the package it
raises `TargetUnavailable` naming the install command.  A source checkout
named by ``ROBOFLOW_INFERENCE_TREE=/path/to/inference-checkout`` is checked
instead of the installed package, its sibling packages (``inference_models``)
included (`_environment`; docs/roboflow-inference.md); `report_header` heads
the check's report with the packages and files imported, and their versions.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Sequence
from types import ModuleType
from typing import Any, Final, Unpack

import attrs

from models_spec.adapter import BuildKwargs, BuildOptions, Snapshot
from models_spec.targets.roboflow_inference._environment import (
    ENVIRONMENT,
    REQUIREMENTS,
    SUPPORTED_VERSIONS,
    TREE_VARIABLE,
    import_upstream,
    install_command,
    report_header,
)

__all__ = [
    "ADAPTERS",
    "ENVIRONMENT",
    "REQUIREMENTS",
    "SUPPORTED_VERSIONS",
    "TREE_VARIABLE",
    "UpstreamAdapter",
    "install_command",
    "manager",
    "manager_never_dispose",
    "new_manager",
    "report_header",
    "stack",
]

STACK_CAPABILITIES: Final = frozenset({"lru", "pins", "capacity", "refresh", "aliases"})
MANAGER_CAPABILITIES: Final = frozenset({"aliases"})
STACK_SEMANTICS: Final = frozenset({"evicts-in-rounds-of-3", "clear-stops-at-first-failure"})
"""Upstream by design: ``WithFixedSizeCache.add_model`` evicts up to 3 models per round
"to prevent flapping around the threshold", and ``clear()`` removes the ids one by one,
so the first failing removal ends it and propagates alone."""
MANAGER_SEMANTICS: Final = frozenset({"clear-stops-at-first-failure"})


@attrs.define
class UpstreamAdapter:
    """An upstream stack: ``WithFixedSizeCache`` over the manager (`cache`) or the
    manager alone; the manager is ``ModelManager`` or, with `never_dispose`,
    the control `NeverDisposeModelManager`."""

    name: str
    capabilities: frozenset[str]
    cache: bool
    never_dispose: bool = False
    semantics: frozenset[str] = attrs.field(default=frozenset())
    """Upstream's deliberate differences from the chosen semantics
    (`models_spec.spec.DECLARABLE_SEMANTICS`), judged as upstream's own rules."""

    def build(self, registry: Any, **options: Unpack[BuildKwargs]) -> Any:
        """A fresh upstream stack loading from `registry` (a `fakes.ScriptedRegistry`);
        only `max_size` is used (see the module docstring)."""
        max_size = BuildOptions(**options).max_size
        from models_spec.targets.roboflow_inference import upstream  # noqa: PLC0415
        from models_spec.targets.roboflow_inference._stack import UpstreamStack  # noqa: PLC0415

        manager_class: Any = upstream.ModelManager
        if self.never_dispose:
            from models_spec.targets.roboflow_inference._controls import (  # noqa: PLC0415
                NeverDisposeModelManager,
            )

            manager_class = NeverDisposeModelManager
        manager_obj = new_manager(registry, manager_class)
        cache = upstream.WithFixedSizeCache(manager_obj, max_size=max_size) if self.cache else None
        top = cache if cache is not None else manager_obj
        return UpstreamStack(top, manager_obj, cache, registry.ghost)

    def snapshot(self, stack: Any) -> Snapshot:
        """Registered models; with the cache, its deque, pins, bound and loads in flight."""
        registered = dict(stack.manager._models)
        cache = stack.cache
        if cache is None:
            return Snapshot(registered=registered)
        return Snapshot(
            registered=registered,
            lru=tuple(cache._key_queue),
            pins=frozenset(cache._pinned_models),
            in_flight_loads=sum(stack.ghost.constructing.values()),
            max_size=cache.max_size,
        )

    def watched(self, stack: Any) -> tuple[object, ...]:
        """Nothing: upstream's state is not watched (the verdicts are over synchronisation
        only, and say so). Upstream reads and writes its tables outside its locks by
        design in places (the `if model_id in self` fast path, the alias table) without
        declaring which; until those are sorted into declared lock-free reads and real
        races (docs/roboflow-inference.md), watching would report every one of them
        and drown the invariant failures this target exists to show."""
        return ()

    def inert_control(self) -> str:
        """For the control: why it changed nothing since the last call ("" when it did;
        `_controls.inert_reason`); never inert for the others."""
        if not self.never_dispose:
            return ""
        from models_spec.targets.roboflow_inference._controls import inert_reason  # noqa: PLC0415

        return inert_reason()

    def patch_modules(self) -> Sequence[ModuleType]:
        """Upstream's manager modules (`upstream.PATCH_MODULES`)."""
        from models_spec.targets.roboflow_inference import upstream  # noqa: PLC0415

        return [importlib.import_module(name) for name in upstream.PATCH_MODULES]


def new_manager(registry: Any, manager_class: Any = None) -> Any:
    """Upstream's ``ModelManager`` (or `manager_class`) over the suite's `registry` (a
    `fakes.ScriptedRegistry`), passing the inert artifact cache only to a version whose
    constructor takes one (1.8.3 does; upstream main and pull request #2821 do not)."""
    from models_spec.targets.roboflow_inference import upstream  # noqa: PLC0415
    from models_spec.targets.roboflow_inference._fakes import (  # noqa: PLC0415
        ARTIFACT_CACHE,
        UpstreamRegistry,
    )

    cls = upstream.ModelManager if manager_class is None else manager_class
    kwargs: dict[str, Any] = {}
    if "content_addressed_artifact_cache" in inspect.signature(cls).parameters:
        kwargs["content_addressed_artifact_cache"] = ARTIFACT_CACHE
    return cls(UpstreamRegistry(registry), **kwargs)


def stack() -> UpstreamAdapter:
    """``WithFixedSizeCache(ModelManager(registry), max_size=N)``, as the server stacks them."""
    import_upstream()
    return UpstreamAdapter(
        "inference-stack", STACK_CAPABILITIES, cache=True, semantics=STACK_SEMANTICS
    )


def manager() -> UpstreamAdapter:
    """The bare ``ModelManager``."""
    import_upstream()
    return UpstreamAdapter(
        "inference-manager", MANAGER_CAPABILITIES, cache=False, semantics=MANAGER_SEMANTICS
    )


def manager_never_dispose() -> UpstreamAdapter:
    """The control: ``ModelManager`` that never disposes its per-model locks."""
    import_upstream()
    return UpstreamAdapter(
        "inference-manager-never-dispose",
        MANAGER_CAPABILITIES,
        cache=False,
        never_dispose=True,
        semantics=MANAGER_SEMANTICS,
    )


ADAPTERS: Final = ("stack", "manager", "manager_never_dispose")
"""What ``--target models_spec.targets.roboflow_inference`` checks, in table order."""

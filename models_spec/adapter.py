"""The conformance adapter: how any model-manager implementation is put under test.

An implementation provides a `ManagerAdapter`: a name, the capabilities it
has (invariants needing a missing capability are reported SKIPPED, never
passed), a `build` that stacks it on a registry, a `snapshot` of its
observable state and the modules lockstep must patch.  `CoreAdapter(depth)`
puts our own core under test at decorator depths 0-3; `BareManagerAdapter`
the plain `ModelManager` (no LRU); `load_adapter("module:factory")` loads a
user's adapter, and `target_specs("module")` names every adapter a module
lists in its ``ADAPTERS`` (a module target checks them all).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import ModuleType
from typing import Any, Final, Protocol, Required, TypedDict, Unpack, runtime_checkable

import attrs

import lockstep.lowlevel
from models_spec.spec import ON_FULL_POLICIES

__all__ = [
    "CAPABILITIES",
    "WEIGHTED_CORE",
    "AdapterError",
    "BareManagerAdapter",
    "BuildKwargs",
    "BuildOptions",
    "CoreAdapter",
    "ManagerAdapter",
    "Snapshot",
    "TargetUnavailable",
    "core_adapter_named",
    "core_adapters",
    "load_adapter",
    "loaded_from",
    "stack_statistics",
    "target_header",
    "target_specs",
    "weighted_core_adapter",
]

CAPABILITIES: Final = frozenset(
    {
        "lru",
        "pins",
        "leases",
        "lifecycle",
        "capacity",
        "memory",
        "aliases",
        "refresh",
        "adopt",
        "statistics",
    }
)
"""What an adapter may declare.  "adopt": `build` takes ``inner_models`` (ids the
innermost manager loads before the layers above it are built, which adopt them).
"statistics": the adapter has ``statistics(stack) -> Mapping[str, int]`` with at least
``loads``, ``load_failures``, ``removals``, ``removal_failures`` (``lock_timeouts``
optional), read at quiescence."""
DEFAULT_MEMORY_THRESHOLD: Final = 0.5  # used when a probe carries no `threshold`


class BuildKwargs(TypedDict, total=False):
    """The keywords `ManagerAdapter.build` takes besides the registry: the one
    statement of that signature.  The adapters of this package declare
    ``build(self, registry, **options: Unpack[BuildKwargs])`` and read the values
    through `BuildOptions`; a user's adapter may spell the keywords out instead
    (``*, max_size, memory_probe=None, lock_timeout=60.0, queue_lock_timeout=5.0``):
    the harness calls both alike.

    * `max_size`: the cache's bound in models (None only for an adapter that
      bounds by weight alone, `weighted_core_adapter`);
    * `memory_probe`: a probe (`fakes.ScriptedProbe`) or None; with one, the
      stack evicts while ``probe.free_fraction()`` is below its ``threshold``;
    * `lock_timeout`, `queue_lock_timeout`: the stack's bounded waits, seconds;
    * `inner_models`: passed only to an adapter with the "adopt" capability, and
      only when non-empty: ids the innermost manager loads before the layers
      above it are built.
    """

    max_size: Required[int | None]
    memory_probe: Any
    lock_timeout: float
    queue_lock_timeout: float
    inner_models: Sequence[str]


def _ids(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


@attrs.frozen(kw_only=True)
class BuildOptions:
    """`BuildKwargs` with the defaults filled in (``BuildOptions(**options)``): what
    one stack is built with.  The defaults live here and nowhere else."""

    max_size: int | None
    memory_probe: Any = None
    lock_timeout: float = 60.0
    queue_lock_timeout: float = 5.0
    inner_models: tuple[str, ...] = attrs.field(default=(), converter=_ids)

    def cache_kwargs(self, on_full: str = "proceed") -> dict[str, Any]:
        """The keywords of ``WithFixedSizeCache`` besides the inner layer and
        ``max_size``: the queue timeout, the full-cache policy `on_full` and, with a
        probe, the probe and its threshold."""
        kwargs: dict[str, Any] = {"queue_lock_timeout": self.queue_lock_timeout, "on_full": on_full}
        if self.memory_probe is not None:
            kwargs["memory_probe"] = self.memory_probe
            kwargs["memory_free_threshold"] = _probe_threshold(self.memory_probe)
        return kwargs


def _frozen_mapping(value: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    return None if value is None else dict(value)


def _lru(value: Sequence[str] | None) -> tuple[str, ...] | None:
    return None if value is None else tuple(value)


def _pins(value: Iterable[str] | None) -> frozenset[str] | None:
    return None if value is None else frozenset(value)


def _registered(value: Mapping[str, object]) -> dict[str, object]:
    return dict(value)


@attrs.frozen
class Snapshot:
    """The observable state of a stack at one instant (None = capability missing).

    * `registered`: resolved id -> model object;
    * `lru`: resolved ids, least recent first;
    * `lifecycle`: resolved id -> (generation, reservations, held);
    * `pins`: pinned resolved ids;
    * `leases`: resolved id -> lease count (ids with at least one);
    * `in_flight_loads`: capacity slots held by loads in progress;
    * `max_size`: the capacity bound in models (None: none, or not known);
    * `weights`: resolved id -> the weight the cache counts for the model
      (weighted caches only);
    * `max_weight`: the bound on the registered models' weight (None: none);
    * `lru_lock_held`: whether the LRU lock is held right now (for I14).
    """

    registered: Mapping[str, object] = attrs.field(converter=_registered)
    lru: tuple[str, ...] | None = attrs.field(default=None, converter=_lru)
    lifecycle: Mapping[str, tuple[int, int, bool]] | None = attrs.field(
        default=None, converter=_frozen_mapping
    )
    pins: frozenset[str] | None = attrs.field(default=None, converter=_pins)
    leases: Mapping[str, int] | None = attrs.field(default=None, converter=_frozen_mapping)
    in_flight_loads: int | None = None
    max_size: int | None = None
    lru_lock_held: bool | None = None
    weights: Mapping[str, int] | None = attrs.field(default=None, converter=_frozen_mapping)
    max_weight: int | None = None

    def observable(self) -> tuple[object, ...]:
        """What two conforming stacks must agree on (I8): keys, LRU, pins, leases."""
        return (
            tuple(sorted(self.registered)),
            self.lru,
            None if self.pins is None else tuple(sorted(self.pins)),
            None if self.leases is None else tuple(sorted(self.leases.items())),
        )


@runtime_checkable
class ManagerAdapter(Protocol):
    """What an implementation provides to be put under test.

    * `name`: shown in reports;
    * `capabilities`: a frozenset, subset of `CAPABILITIES`;
    * `build(registry, *, max_size, memory_probe=None, lock_timeout=60.0,
      queue_lock_timeout=5.0)`: a fresh stack loading from `registry`
      (a `fakes.ScriptedRegistry`); the keywords are `BuildKwargs` (with a
      probe, the stack evicts under memory pressure when
      `probe.free_fraction()` is below `getattr(probe, "threshold", 0.5)`;
      with the "adopt" capability also ``inner_models``);
    * `snapshot(stack)`: a `Snapshot` (must not switch threads: read
      without taking locks that could block);
    * `patch_modules()`: the modules lockstep must patch to control the
      stack's threading;
    * with the "statistics" capability, `statistics(stack)`: the stack's
      counters by name (see `CAPABILITIES`);
    * optionally `watched(stack) -> Iterable[object]`: the objects whose
      attributes are the stack's shared state, watched in every execution so
      data races on them are failures (default: the stack's own objects,
      found by `models_spec._harness.watching.default_watched`; return ``()`` to
      watch nothing). Intended lock-free reads are declared by the
      implementation in a ``__benign_races__`` class attribute;
    * optionally `inert_control() -> str`, for a *control* (an implementation
      that changes one thing of another to show cause): "" when what it
      changes took effect since the last call, else why not ("control is
      inert: ..."); the check asks before and after each cell, and a cell
      whose control was inert is an ERROR with that message.
    """

    name: str
    capabilities: frozenset[str]

    def build(self, registry: Any, **options: Unpack[BuildKwargs]) -> Any: ...

    def snapshot(self, stack: Any) -> Snapshot: ...

    def patch_modules(self) -> Sequence[ModuleType]: ...


class AdapterError(Exception):
    """`load_adapter` could not load a valid adapter (the message says why and what to do)."""


class TargetUnavailable(AdapterError, ImportError):
    """The implementation a target checks is not installed here.

    Raised by a target's module or adapter factory; the message is one line
    naming what is missing and the command that installs it.  `load_adapter`
    and `target_specs` pass it on unchanged (``lockstep check`` prints it and
    exits 2).  An `ImportError`, so importing a schedule's recorded module
    that needs the implementation fails the same way.
    """


def _core_modules() -> list[ModuleType]:
    import modelmanager  # noqa: PLC0415 - the core is imported only when an adapter needs it

    names = getattr(modelmanager, "CONCURRENCY_MODULES", None)
    if not names:
        names = [
            name
            for name in sys.modules
            if name == "modelmanager" or name.startswith("modelmanager.")
        ]
    modules: list[ModuleType] = []
    for item in names:
        modules.append(item if isinstance(item, ModuleType) else importlib.import_module(item))
    return modules


def _probe_threshold(memory_probe: Any) -> float:
    return float(getattr(memory_probe, "threshold", DEFAULT_MEMORY_THRESHOLD))


def _innermost(stack: Any) -> Any:
    layer = stack
    while hasattr(type(layer), "manager") or "manager" in getattr(layer, "__dict__", {}):
        inner = getattr(layer, "manager", None)
        if inner is None or inner is layer:
            break
        layer = inner
    return layer


def _find_cache(stack: Any) -> Any:
    from modelmanager import WithFixedSizeCache  # noqa: PLC0415

    layer = stack
    for _ in range(64):
        if isinstance(layer, WithFixedSizeCache):
            return layer
        layer = getattr(layer, "manager", None)
        if layer is None:
            break
    raise AdapterError(f"no WithFixedSizeCache layer in {stack!r}")


def _lifecycle(stack: Any) -> dict[str, tuple[int, int, bool]]:
    return {
        rid: (info.generation, info.reservations, info.held)
        for rid, info in stack.lifecycle_snapshot().items()
    }


@attrs.define
class CoreAdapter:
    """Our core: `WithFixedSizeCache(ModelManager)` with `depth` pass-through decorators.

    Depth 0: `Cache(Manager)`; 1: `Decorator(Cache(Manager))`;
    2: `Decorator(Cache(Decorator(Manager)))`; 3:
    `Decorator(Cache(Decorator(Decorator(Manager))))`: one decorator outside
    the cache (for depth >= 1), the rest between cache and manager.
    """

    depth: int = 0
    name: str = ""
    capabilities: frozenset[str] = CAPABILITIES
    # Opt-in: report whether the cache's LRU lock is held (I14).  Reads the
    # core's private lock and cannot tell *which* thread holds it, so it is
    # exact only for sequential drivers; concurrent runs would see false alarms.
    observe_lru_lock: bool = False
    # The cache's full-cache policy; the spec judges the run under the same one
    # (an adapter without this attribute is judged as "proceed").
    on_full: str = "proceed"
    # Weight-based capacity: `max_weight` (None: unweighted) bounds the sum of
    # the models' weights; the cache's weigher gives a model the weight of its
    # resolved id in `weights`, `default_weight` for ids not listed.  The spec
    # judges the run with the same weights (`weighting()`).
    max_weight: int | None = None
    weights: Mapping[str, int] = attrs.field(factory=dict, converter=dict)
    default_weight: int = 1
    # (stack, cache layer, innermost manager) of the last stack snapshotted; the stack
    # is held so its id cannot be reused while the entry exists.
    _last_layers: tuple[Any, Any, Any] | None = attrs.field(
        default=None, init=False, repr=False, eq=False
    )
    # (stack, lockstep.lowlevel.watched_writes(), snapshot) of the last full snapshot.
    _last_snapshot: tuple[Any, int, Snapshot] | None = attrs.field(
        default=None, init=False, repr=False, eq=False
    )

    def __attrs_post_init__(self) -> None:
        if isinstance(self.depth, bool) or not isinstance(self.depth, int) or self.depth < 0:
            raise ValueError(f"depth must be an int >= 0 (got {self.depth!r})")
        if self.on_full not in ON_FULL_POLICIES:
            raise ValueError(f"on_full must be one of {ON_FULL_POLICIES} (got {self.on_full!r})")
        if self.max_weight is not None and (
            isinstance(self.max_weight, bool)
            or not isinstance(self.max_weight, int)
            or self.max_weight < 1
        ):
            raise ValueError(f"max_weight must be an int >= 1 or None (got {self.max_weight!r})")
        if not self.name:
            policy = "" if self.on_full == "proceed" else f"-{self.on_full}"
            weighted = "" if self.max_weight is None else "-weighted"
            self.name = f"core-depth{self.depth}{policy}{weighted}"

    def weighting(self) -> dict[str, Any]:
        """The spec's weight settings for this adapter (`spec.initial_state` keywords)."""
        if self.max_weight is None:
            return {}
        return {
            "max_weight": self.max_weight,
            "weights": dict(self.weights),
            "default_weight": self.default_weight,
        }

    def weigh(self, resolved_id: str, model: object) -> int:
        """The weigher given to the cache: the weight of `resolved_id` in `weights`."""
        return self.weights.get(resolved_id, self.default_weight)

    def build(self, registry: Any, **options: Unpack[BuildKwargs]) -> Any:
        """`Decorator^a(Cache(Decorator^b(Manager)))` with a + b = depth, a = min(1, depth).

        `inner_models` are loaded into the manager before the cache adopts them.
        `max_size` None bounds a weighted adapter's cache by weight only.
        """
        from modelmanager import (  # noqa: PLC0415
            ModelManager,
            ModelManagerDecorator,
            WithFixedSizeCache,
        )

        settings = BuildOptions(**options)
        outer = min(1, self.depth)
        inner: Any = ModelManager(registry, lock_timeout=settings.lock_timeout)
        for model_id in settings.inner_models:
            inner.add_model(model_id)
        for _ in range(self.depth - outer):
            inner = ModelManagerDecorator(inner)
        cache_kwargs = settings.cache_kwargs(self.on_full)
        if self.max_weight is not None:
            cache_kwargs["max_weight"] = self.max_weight
            cache_kwargs["weigher"] = self.weigh
        stack: Any = WithFixedSizeCache(inner, max_size=settings.max_size, **cache_kwargs)
        cache = stack
        for _ in range(outer):
            stack = ModelManagerDecorator(stack)
        ghost = getattr(registry, "ghost", None)
        if self.observe_lru_lock and ghost is not None:
            ghost.lock_probe = lambda: _lru_lock_held(cache)
        return stack

    def snapshot(self, stack: Any) -> Snapshot:
        """Read the stack's state through its public introspection methods.

        Inside a lockstep run, what derives from watched state alone (the registry,
        pins, leases, loads in flight, weights) is reused while no watched state was
        written since it was read (``lockstep.lowlevel.watched_writes``); what reads
        objects that are not watched (the lifecycle table's entries, the LRU's marks,
        which are ``__slots__`` objects, and the LRU lock) is read every time.
        ``tests/spec/test_snapshot_reuse.py`` compares it with a fresh snapshot at
        every step of every known-bug scenario.
        """
        writes = lockstep.lowlevel.watched_writes()
        last = self._last_snapshot
        if writes is None:
            self._last_snapshot = None
            return self.fresh_snapshot(stack)
        if last is None or last[0] is not stack or last[1] != writes:
            snap = self.fresh_snapshot(stack)
            self._last_snapshot = (stack, writes, snap)
            return snap
        cache, _ = self._layers(stack)
        kept = last[2]
        lifecycle = _lifecycle(stack)
        lru = tuple(cache.lru_order())
        lock = _lru_lock_held(cache) if self.observe_lru_lock else None
        if lifecycle == kept.lifecycle and lru == kept.lru and lock == kept.lru_lock_held:
            return kept
        snap = attrs.evolve(kept, lifecycle=lifecycle, lru=lru, lru_lock_held=lock)
        self._last_snapshot = (stack, writes, snap)
        return snap

    def fresh_snapshot(self, stack: Any) -> Snapshot:
        """:meth:`snapshot`, every part read now."""
        cache, inner = self._layers(stack)
        registered = {rid: inner[rid] for rid in list(inner.keys()) if rid in inner}
        return Snapshot(
            registered=registered,
            lru=cache.lru_order(),
            lifecycle=_lifecycle(stack),
            pins=cache.pinned(),
            leases=stack.lease_counts(),
            in_flight_loads=cache.in_flight_loads(),
            max_size=getattr(cache, "max_size", None),
            lru_lock_held=_lru_lock_held(cache) if self.observe_lru_lock else None,
            weights=None if self.max_weight is None else cache.weights(),
            max_weight=self.max_weight,
        )

    def _layers(self, stack: Any) -> tuple[Any, Any]:
        """The stack's cache layer and innermost manager (looked up once per stack: the
        layers `build` stacked never change; the snapshot runs at every step)."""
        last = self._last_layers
        if last is not None and last[0] is stack:
            return last[1], last[2]
        cache, inner = _find_cache(stack), _innermost(stack)
        self._last_layers = (stack, cache, inner)
        return cache, inner

    def patch_modules(self) -> Sequence[ModuleType]:
        """The core's `CONCURRENCY_MODULES`."""
        return _core_modules()

    def statistics(self, stack: Any) -> Mapping[str, int]:
        """The stack's `statistics()` as a mapping."""
        return stack_statistics(stack)


def stack_statistics(stack: Any) -> dict[str, int]:
    """``stack.statistics()`` (a ``ManagerStatistics``) as a dict of its fields."""
    return attrs.asdict(stack.statistics())


def _lru_lock_held(cache: Any) -> bool | None:
    lock = getattr(cache, "_lru_lock", None)  # our own core's private lock, read-only
    locked: Callable[[], bool] | None = getattr(lock, "locked", None)
    return bool(locked()) if callable(locked) else None


@attrs.define
class BareManagerAdapter:
    """A plain `ModelManager` (no LRU, pins, capacity, memory or refresh)."""

    name: str = "core-bare-manager"
    capabilities: frozenset[str] = frozenset({"leases", "lifecycle", "aliases", "statistics"})

    def build(self, registry: Any, **options: Unpack[BuildKwargs]) -> Any:
        """A `ModelManager`; `max_size`, the probe and the queue timeout are ignored."""
        from modelmanager import ModelManager  # noqa: PLC0415

        return ModelManager(registry, lock_timeout=BuildOptions(**options).lock_timeout)

    def snapshot(self, stack: Any) -> Snapshot:
        """Registered models, lifecycle table and leases."""
        return Snapshot(
            registered={rid: stack[rid] for rid in list(stack.keys()) if rid in stack},
            lifecycle=_lifecycle(stack),
            leases=stack.lease_counts(),
        )

    def patch_modules(self) -> Sequence[ModuleType]:
        """The core's `CONCURRENCY_MODULES`."""
        return _core_modules()

    def statistics(self, stack: Any) -> Mapping[str, int]:
        """The manager's `statistics()` as a mapping."""
        return stack_statistics(stack)


def core_adapters() -> tuple[CoreAdapter, ...]:
    """Our core at decorator depths 0-3."""
    return tuple(CoreAdapter(depth) for depth in range(4))


def core_adapter_named(name: str) -> CoreAdapter | None:
    """The `CoreAdapter` whose default name is `name`, or None.

    Names: "core-depth<N>[-<on_full>][-weighted]"; "-weighted" is the
    `WEIGHTED_CORE` setting (see `weighted_core_adapter`).
    """
    if not name.startswith("core-depth"):
        return None
    rest = name.removeprefix("core-depth")
    weighted = rest.endswith("-weighted")
    depth, _, policy = rest.removesuffix("-weighted").partition("-")
    if not depth.isdigit() or (policy and policy not in ON_FULL_POLICIES):
        return None
    if weighted:
        return weighted_core_adapter(int(depth), on_full=policy or "proceed")
    return CoreAdapter(int(depth), on_full=policy or "proceed")


WEIGHTED_CORE: Final = {
    "max_weight": 4,
    "weights": {"A": 1, "B": 2, "C": 2, "P": 1, "X": 3, "Y": 2, "Z": 2, "a": 1, "b": 2, "c": 3},
}
"""The weighted check cells' setting: the ids the scenarios use weigh 1 to 3 (others 1)
under a bound of 4, so two models often do not fit where the count bound would let them."""


def weighted_core_adapter(depth: int = 0, *, on_full: str = "proceed") -> CoreAdapter:
    """Our core with weight-based capacity (`WEIGHTED_CORE`) besides its count bound."""
    return CoreAdapter(depth, on_full=on_full, **WEIGHTED_CORE)  # type: ignore[arg-type]


def _validate(candidate: object, target: str) -> ManagerAdapter:
    problems: list[str] = []
    name = getattr(candidate, "name", None)
    if not isinstance(name, str) or not name:
        problems.append("`name` must be a non-empty str")
    caps = getattr(candidate, "capabilities", None)
    if not isinstance(caps, frozenset):
        problems.append("`capabilities` must be a frozenset")
    elif not caps <= CAPABILITIES:
        problems.append(
            f"`capabilities` has unknown names {sorted(caps - CAPABILITIES)}; "
            f"allowed: {sorted(CAPABILITIES)}"
        )
    problems.extend(
        f"`{method}` must be a method"
        for method in ("build", "snapshot", "patch_modules")
        if not callable(getattr(candidate, method, None))
    )
    if (
        isinstance(caps, frozenset)
        and "statistics" in caps
        and not callable(getattr(candidate, "statistics", None))
    ):
        problems.append("the 'statistics' capability needs a `statistics(stack)` method")
    if problems:
        raise AdapterError(
            f"{target!r} does not satisfy models_spec.adapter.ManagerAdapter: "
            + "; ".join(problems)
        )
    return candidate  # type: ignore[return-value]


def load_adapter(target: str) -> ManagerAdapter:
    """Load `"module:factory"`: the attribute (an adapter, or a zero-argument factory of one).

    Raises `AdapterError` naming the problem: a malformed target, a module
    that cannot be imported, a missing attribute, a factory that fails, or
    an object that does not satisfy `ManagerAdapter`.
    """
    if not isinstance(target, str) or target.count(":") != 1:
        raise AdapterError(
            f"adapter target must look like 'package.module:factory' (got {target!r})"
        )
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise AdapterError(
            f"adapter target must look like 'package.module:factory' (got {target!r})"
        )
    module = _import_target_module(module_name, target)
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise AdapterError(f"module {module_name!r} has no attribute {attr!r} ({target!r})")
        obj = getattr(obj, part)
    if isinstance(obj, type) or (
        callable(obj) and not hasattr(obj, "build") and not hasattr(obj, "snapshot")
    ):
        obj = _call_target_code(obj, f"calling adapter factory {target!r}")
    adapter = _validate(obj, target)
    _LOADED_FROM[id(adapter)] = (adapter, target)
    return adapter


def _call_target_code(function: Callable[[], Any], what: str) -> Any:
    """``function()``, code of the target's own: `TargetUnavailable` passes through
    unchanged, any other exception is an `AdapterError` saying ``what`` failed."""
    try:
        return function()
    except TargetUnavailable:
        raise
    except Exception as error:
        raise AdapterError(f"{what} failed: {error!r}") from error


def _import_target_module(module_name: str, target: str) -> ModuleType:
    try:
        return importlib.import_module(module_name)
    except TargetUnavailable:
        raise
    except ImportError as error:
        raise AdapterError(
            f"cannot import module {module_name!r} of adapter target {target!r}: {error}"
        ) from error


def target_specs(target: str) -> tuple[str, ...]:
    """The ``"module:factory"`` targets `target` stands for.

    ``"module:factory"`` stands for itself; a bare ``"module"`` for
    ``"module:<name>"`` for every name in the module's ``ADAPTERS`` (a
    sequence of attribute names, in table order).  Raises `AdapterError`
    naming the problem (`TargetUnavailable` passes through unchanged).
    """
    if isinstance(target, str) and ":" not in target and target:
        try:
            module = importlib.import_module(target)
        except TargetUnavailable:
            raise
        except ImportError as error:
            raise AdapterError(
                f"adapter target must look like 'package.module:factory', or name a module "
                f"listing its adapters in ADAPTERS; cannot import {target!r}: {error}"
            ) from error
        names = getattr(module, "ADAPTERS", None)
        if (
            isinstance(names, str)
            or not isinstance(names, Sequence)
            or not names
            or not all(isinstance(n, str) and n for n in names)
        ):
            raise AdapterError(
                f"module target {target!r} must list its adapters' attribute names in a "
                f"non-empty ADAPTERS sequence of str (got {names!r}); or name one adapter "
                f"as '{target}:factory'"
            )
        return tuple(f"{target}:{name}" for name in names)
    return (target,)  # `load_adapter` validates it


def target_header(target: str) -> tuple[str, ...]:
    """The lines a target's module asks to head the check's report with: what its
    ``report_header()`` returns (e.g. which files of the code under test were imported
    and their versions), or nothing when it defines none.  Raises `AdapterError` when
    it raises (`TargetUnavailable` passes through unchanged)."""
    module_name = target.partition(":")[0]
    module = _import_target_module(module_name, target)
    header = getattr(module, "report_header", None)
    if not callable(header):
        return ()
    lines = _call_target_code(header, f"{module_name}.report_header()")
    return tuple(str(line) for line in lines)


# Adapters `load_adapter` returned, by identity, with the target they came
# from, so schedules recorded against them can name a replayable scenario
# (`models_spec.replayable`). The adapter is kept alive with its entry, so an
# id is never reused while the entry exists.
_LOADED_FROM: dict[int, tuple[object, str]] = {}


def loaded_from(adapter: object) -> str | None:
    """The ``"module:factory"`` target `adapter` was loaded from, or None."""
    entry = _LOADED_FROM.get(id(adapter))
    return entry[1] if entry is not None and entry[0] is adapter else None

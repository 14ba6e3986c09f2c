"""Validate an adapter before any search: one sequential add and remove through it.

A search over a misconfigured adapter proves nothing, and its failures are
confusing (a raw ``AttributeError`` deep inside an interleaving). So
`validate_adapter` drives the adapter once, on the calling thread, outside
lockstep, and checks every piece the suite relies on:

* the adapter protocol (docs/contract.md, "The adapter"): ``name``,
  ``capabilities``, ``patch_modules()`` returning modules, ``build(registry,
  max_size=...)`` returning a stack with the operations its capabilities need,
  ``snapshot(stack)`` returning a `Snapshot`;
* the call shapes (``docs/contract.md``, ``models_spec.contract``): every method the
  adapter's scenarios call, in the exact shape they call it (``add_model(model_id,
  api_key, model_id_alias)``, ...), is first checked against its signature (the
  first mismatch is named with what the method takes), then called once on the
  scratch stack;
* the model protocol (README, "The model protocol"): ``add_model(id, None, None)`` calls
  the registry's factory for ``id`` once and registers the model object the
  factory returned; ``remove(id)`` calls that model's
  ``clear_cache(delete_from_disk=...)`` once and unregisters it;
  ``remove(id, delete_from_disk=False)`` (and ``=True``) passes that flag on;
  ``add_model`` returns None;
* the snapshot (``docs/contract.md#snapshot-fields``): every declared capability
  finds the `Snapshot` fields its invariants read (``capacity`` without ``max_size``
  would make I11 skip in every execution);
* ``clear()``, where the stack has one (``docs/contract.md#clear``): with two loaded
  models whose ``clear_cache`` fails, it attempts both, raises an ``ExceptionGroup``
  holding both failures and leaves both loaded (unless the adapter declares
  clear-stops-at-first-failure).

It raises `AdapterValidationError` naming the first missing piece and the
README section that describes it; nothing is left registered by it (it uses
its own stack).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, Final

from lockstep.report import abbreviate
from models_spec._harness.driver import Op
from models_spec._harness.scenario_index import default_scenarios
from models_spec.adapter import AdapterError, ManagerAdapter, Snapshot
from models_spec.contract import (
    CALLS,
    CONTRACT_DOC,
    Call,
    calls_for,
    missing_snapshot_fields,
    shape_mismatch,
)
from models_spec.fakes import UNLOAD, FakeModel, ScriptedRegistry, ScriptedUnloadError
from models_spec.spec import CLEAR_STOPS

__all__ = ["ADAPTER_DOC", "MODEL_DOC", "AdapterValidationError", "validate_adapter"]

ADAPTER_DOC: Final = f"{CONTRACT_DOC}#the-adapter"
MODEL_DOC: Final = "README.md, section 'The model protocol'"
_PROBE_ID: Final = "lockstep-validate-model"
_ADD_OP: Final = Op("add", _PROBE_ID)
_PIN_OP: Final = Op("pin", _PROBE_ID)
#: The ids whose unloads fail when the validation calls ``clear()``.
_CLEAR_IDS: Final = ("lockstep-validate-clear-1", "lockstep-validate-clear-2")
_SNAPSHOT_DOC: Final = f"{CONTRACT_DOC}#snapshot-fields"

#: The stack methods the scenarios call: always (""), and per capability.
_METHODS: Final = {
    "": ("add_model", "remove", "keys", "__getitem__"),
    "lru": ("lru_order",),
    "pins": ("pin_model", "unpin_model"),
    "leases": ("lease", "acquire"),
    "refresh": ("refresh",),
}


def _check_delete_flag(label: str, stack: Any, registry: ScriptedRegistry) -> None:
    """``remove(id, delete_from_disk=...)`` passes its flag on to ``clear_cache``: a
    manager that always deletes would wipe a persistent model cache it was told to keep.
    """
    for flag in (False, True):
        _add(label, stack)
        model = [m for m in registry.ghost.models if isinstance(m, FakeModel)][-1]
        call = f"remove({_PROBE_ID!r}, delete_from_disk={flag})"
        _call(
            label,
            call,
            lambda flag=flag: stack.remove(_PROBE_ID, delete_from_disk=flag),  # type: ignore[misc]
            MODEL_DOC,
        )
        if model.delete_from_disk != [flag]:
            made = ", ".join(f"clear_cache(delete_from_disk={f!r})" for f in model.delete_from_disk)
            raise _fail(
                label,
                f"{call} called {made} (expected clear_cache(delete_from_disk={flag})): "
                "remove must pass delete_from_disk on to clear_cache",
                MODEL_DOC,
            )


def _add(label: str, stack: Any, model_id: str = _PROBE_ID) -> None:
    """``add_model(model_id, None, None)``, which must return None (docs/contract.md)."""
    shown = f"add_model({model_id!r}, None, None)"
    returned = _call(label, shown, lambda: stack.add_model(model_id, None, None), MODEL_DOC)
    if returned is not None:
        raise _fail(
            label,
            f"{shown} returned {abbreviate(repr(returned), 80)}; add_model must return None "
            "(the model is read with stack[model_id])",
            CALLS["add"].doc,
        )


def _check_snapshot_fields(label: str, adapter: ManagerAdapter, snap: Snapshot) -> None:
    """Every declared capability's invariants find the `Snapshot` fields they read: a
    field left None would make them skip (never pass) in every execution."""
    for capability in sorted(adapter.capabilities):
        missing = missing_snapshot_fields(capability, snap)
        if missing is not None:
            raise _fail(
                label,
                f"declared capability {capability!r} needs the Snapshot field {missing}, "
                f"which snapshot(stack) leaves None: set it, or do not declare {capability!r}",
                _SNAPSHOT_DOC,
            )


def _check_clear(label: str, adapter: ManagerAdapter, stack: Any, registry: Any) -> None:
    """``clear()`` with the probe and two models whose unloads fail: it must attempt
    every loaded model, raise an ExceptionGroup holding both failures, and leave the
    two failed models loaded (docs/contract.md#clear).  An adapter declaring
    clear-stops-at-first-failure is only called (the spec judges it by its own rule)."""
    doc = CALLS["clear"].doc
    _add(label, stack)
    if CLEAR_STOPS in (getattr(adapter, "semantics", ()) or ()):
        _call(label, "clear()", stack.clear, doc)
        return
    for model_id in _CLEAR_IDS:
        _add(label, stack, model_id)
        attempt = registry.ghost.clear_attempts.get(model_id, 0) + 1
        registry.script.set_outcome(UNLOAD, model_id, attempt, fail=True)
    both = " and ".join(repr(m) for m in _CLEAR_IDS)
    setup = f"with {both} loaded and both of their clear_cache calls failing, clear()"
    try:
        stack.clear()
    except BaseExceptionGroup as group:
        failed = sorted(
            {e.resolved_id for e in _leaves(group) if isinstance(e, ScriptedUnloadError)}
        )
        if failed != sorted(_CLEAR_IDS):
            held = " and ".join(repr(m) for m in failed) or "neither"
            raise _fail(
                label,
                f"{setup} raised an ExceptionGroup holding the failure of {held} only; "
                "clear() must attempt every loaded model and raise each failure",
                doc,
            ) from group
    except Exception as error:
        raise _fail(
            label,
            f"{setup} raised {type(error).__name__}: {abbreviate(str(error), 120)}; it must "
            "attempt every loaded model and raise an ExceptionGroup of all the failures",
            doc,
        ) from error
    else:
        raise _fail(label, f"{setup} returned normally; it must raise an ExceptionGroup", doc)
    after = _snapshot(label, adapter, stack, "after a failed clear()")
    gone = [m for m in _CLEAR_IDS if m not in after.registered]
    if gone:
        raise _fail(
            label,
            f"{setup} raised, but {' and '.join(map(repr, gone))} "
            f"{'is' if len(gone) == 1 else 'are'} no longer registered; a model whose "
            "clear_cache failed stays loaded",
            doc,
        )


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    found: list[BaseException] = []
    for error in group.exceptions:
        found.extend(_leaves(error) if isinstance(error, BaseExceptionGroup) else [error])
    return found


class AdapterValidationError(AdapterError):
    """An adapter (or the manager behind it) does not do what the suite needs."""


def _fail(target: str, piece: str, doc: str = ADAPTER_DOC) -> AdapterValidationError:
    return AdapterValidationError(
        f"{abbreviate(target)} failed validation before any search: {piece} (see {doc})"
    )


def _call(target: str, what: str, fn: Callable[[], Any], doc: str = ADAPTER_DOC) -> Any:
    try:
        return fn()
    except Exception as error:
        raise _fail(
            target, f"{what} raised {type(error).__name__}: {abbreviate(str(error), 200)}", doc
        ) from error


def _method_doc(method: str) -> str:
    """The section of docs/contract.md that states the stack method ``method``."""
    docs = [call.doc for call in CALLS.values() if call.method == method]
    return docs[0] if docs else ADAPTER_DOC


def _check_modules(target: str, adapter: ManagerAdapter) -> None:
    modules = _call(target, "patch_modules()", adapter.patch_modules)
    if isinstance(modules, str | bytes) or not isinstance(modules, Sequence):
        raise _fail(target, f"patch_modules() must return a list of modules, got {modules!r}")
    for item in modules:
        if isinstance(item, ModuleType):
            continue
        if isinstance(item, str):
            try:
                importlib.import_module(item)
            except ImportError as error:
                raise _fail(
                    target, f"patch_modules() names {item!r}, which cannot be imported: {error}"
                ) from error
            continue
        raise _fail(
            target,
            f"patch_modules() must return modules (or their names), got {abbreviate(repr(item))}",
        )


def _snapshot(target: str, adapter: ManagerAdapter, stack: Any, when: str) -> Snapshot:
    snap = _call(target, f"snapshot(stack) {when}", lambda: adapter.snapshot(stack))
    if not isinstance(snap, Snapshot):
        raise _fail(
            target,
            f"snapshot(stack) must return a models_spec.adapter.Snapshot, got "
            f"{abbreviate(repr(snap))}",
        )
    return snap


def validate_adapter(adapter: ManagerAdapter, target: str | None = None) -> None:
    """Drive ``adapter`` through one sequential add/remove; raise on the first problem.

    ``target`` names it in messages (default: its ``name``). Raises
    `AdapterValidationError` (an `AdapterError`).
    """
    label = target or str(getattr(adapter, "name", type(adapter).__name__))
    _check_modules(label, adapter)
    registry = ScriptedRegistry()
    stack = _call(
        label,
        "build(registry, max_size=4)",
        lambda: adapter.build(registry, max_size=4, lock_timeout=5.0, queue_lock_timeout=5.0),
    )
    if stack is None:
        raise _fail(label, "build(registry, max_size=...) returned None instead of the stack")
    for capability in ("", *sorted(adapter.capabilities)):
        missing = [m for m in _METHODS.get(capability, ()) if not callable(getattr(stack, m, None))]
        if missing:
            why = (
                f"declared capability {capability!r} needs it"
                if capability
                else "every scenario calls it"
            )
            raise _fail(
                label,
                f"the stack build() returned ({type(stack).__name__}) has no "
                f"{', '.join(missing)} ({why})",
                _method_doc(missing[0]),
            )
    before = _snapshot(label, adapter, stack, "of a fresh stack")
    if before.registered:
        raise _fail(
            label,
            f"snapshot(stack) of a fresh stack shows registered ids "
            f"{abbreviate(repr(sorted(before.registered)))}; build() must start empty",
        )
    _check_snapshot_fields(label, adapter, before)
    calls = _needed_calls(adapter, stack)
    for call in calls:
        mismatch = shape_mismatch(stack, call)
        if mismatch is not None:
            raise _fail(label, mismatch, call.doc)
    _add(label, stack)
    constructed = [m for m in registry.ghost.models if isinstance(m, FakeModel)]
    if len(constructed) != 1:
        raise _fail(
            label,
            f"add_model({_PROBE_ID!r}) called the registry's factory {len(constructed)} "
            "times (expected once): build() must stack the manager on the registry it is "
            "given, and add_model must call registry.get_model(id)(model_id=id, ...)",
            MODEL_DOC,
        )
    model = constructed[0]
    after_add = _snapshot(label, adapter, stack, f"after add_model({_PROBE_ID!r})")
    held = after_add.registered.get(_PROBE_ID)
    if held is not model:
        raise _fail(
            label,
            f"after add_model({_PROBE_ID!r}) snapshot(stack).registered maps it to "
            f"{abbreviate(repr(held))}, not to the model object the factory returned: "
            "the manager must keep what the factory returns and the snapshot must show it",
            MODEL_DOC,
        )
    keys = _call(label, "keys()", lambda: list(stack.keys()))
    if _PROBE_ID not in keys:
        raise _fail(label, f"keys() does not list {_PROBE_ID!r} after add_model", MODEL_DOC)
    _exercise(label, stack, calls)
    _call(label, f"remove({_PROBE_ID!r})", lambda: stack.remove(_PROBE_ID), MODEL_DOC)
    if model.clear_calls != 1:
        raise _fail(
            label,
            f"remove({_PROBE_ID!r}) called the model's clear_cache {model.clear_calls} "
            "times (expected once, as clear_cache(delete_from_disk=...))",
            MODEL_DOC,
        )
    after_remove = _snapshot(label, adapter, stack, f"after remove({_PROBE_ID!r})")
    if _PROBE_ID in after_remove.registered:
        raise _fail(
            label,
            f"snapshot(stack) still shows {_PROBE_ID!r} registered after remove()",
            MODEL_DOC,
        )
    _check_delete_flag(label, stack, registry)
    if CALLS["clear"] in calls:
        _check_clear(label, adapter, stack, registry)


def _needed_calls(adapter: ManagerAdapter, stack: Any) -> tuple[Call, ...]:
    """The calls the default scenarios this adapter runs make (a final ``clear()`` only
    where the stack has one, as the scenarios do)."""
    ops: list[Any] = []
    for scenario in default_scenarios().values():
        if not scenario.supported_by(adapter):
            continue
        ops.extend(op for _, thread in scenario.threads for op in thread)
        ops.extend(scenario.final)
        if scenario.setup.preload:
            ops.append(_ADD_OP)
        if scenario.setup.pins:
            ops.append(_PIN_OP)
    calls = calls_for(ops)
    if not callable(getattr(stack, "clear", None)):
        calls = tuple(call for call in calls if call != CALLS["clear"])
    return calls


def _exercise(label: str, stack: Any, calls: Sequence[Call]) -> None:
    """Call each of ``calls`` once in its exact shape, with the probe model loaded (the
    removes, the adds and ``clear()`` are made by the rest of the validation)."""
    pid = _PROBE_ID
    actions: dict[Call, Callable[[], Any]] = {
        CALLS["getitem"]: lambda: stack[pid],
        CALLS["contains"]: lambda: pid in stack,
        CALLS["len"]: lambda: len(stack),
        CALLS["keys"]: lambda: list(stack.keys()),
        CALLS["lru"]: lambda: list(stack.lru_order()),
        CALLS["refresh"]: lambda: stack.refresh(pid),
        CALLS["describe"]: lambda: stack.describe_models(),  # noqa: PLW0108 - looked up late
        CALLS["pin"]: lambda: stack.pin_model(pid),
        CALLS["unpin"]: lambda: stack.unpin_model(pid),
        CALLS["pinned add"]: lambda: stack.add_model(pid, None, None, pin=True),
        CALLS["lease"]: lambda: _enter_exit(stack.lease(pid)),
        CALLS["acquire"]: lambda: _enter_exit(stack.acquire(pid, None, None)),
    }
    for call in calls:
        action = actions.get(call)
        if action is not None:
            shown = call.shape.replace("model_id_alias", "None").replace("api_key", "None")
            _call(label, shown.replace("model_id", repr(pid)), action, call.doc)
    if CALLS["pinned add"] in calls and callable(getattr(stack, "unpin_model", None)):
        stack.unpin_model(pid)


def _enter_exit(manager: Any) -> None:
    with manager:
        pass

"""The call shapes of docs/contract.md are the ones the driver makes, and checked first."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from models_spec._harness.driver import OP_KINDS, Driver, Op
from models_spec._harness.validate import AdapterValidationError, validate_adapter
from models_spec.adapter import Snapshot
from models_spec.contract import CALLS, Call, calls_for, missing_snapshot_fields, shape_mismatch
from models_spec.fakes import Script, ScriptedRegistry
from models_spec.spec import encode_outcome


class _Model:
    token = "m#1"
    torn_down = False

    def infer(self) -> None:
        pass


class _Recording:
    """A stack that records every call as (method, number of positional args, kwargs)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, tuple[str, ...]]] = []

    def _note(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.calls.append((method, len(args), tuple(sorted(kwargs))))

    def __getattr__(self, method: str) -> Any:
        def record(*args: Any, **kwargs: Any) -> Any:
            self._note(method, args, kwargs)
            if method in ("lease", "acquire"):
                return self._held()
            return [] if method in ("keys", "lru_order") else None

        return record

    @contextlib.contextmanager
    def _held(self) -> Iterator[_Model]:
        yield _Model()

    def __getitem__(self, *args: Any) -> _Model:
        self._note("__getitem__", args, {})
        return _Model()

    def __contains__(self, *args: Any) -> bool:
        self._note("__contains__", args, {})
        return False

    def __len__(self) -> int:
        self._note("__len__", (), {})
        return 0


class _RecordingAdapter:
    name = "recording"
    capabilities = frozenset({"lru", "pins", "leases", "aliases", "refresh"})


def _op(kind: str) -> Op:
    if kind in ("clear", "describe", "keys", "len", "lru"):
        return Op(kind)
    return Op(kind, "a")


def _matches(call: Call, recorded: tuple[str, int, tuple[str, ...]]) -> bool:
    return recorded == (call.method, len(call.args), tuple(sorted(call.kwargs)))


def _refusal(adapter: Any, name: str) -> str:
    """What ``validate_adapter(adapter, name)`` raises; it must refuse the adapter."""
    with pytest.raises(AdapterValidationError) as caught:
        validate_adapter(adapter, name)
    return str(caught.value)


@pytest.mark.parametrize("op", [*(_op(k) for k in sorted(OP_KINDS)), Op("add", "a", pin=True)])
def test_the_driver_makes_exactly_the_documented_call(op: Op) -> None:
    """Each op kind reaches the stack as the call `models_spec.contract.CALLS` states
    (same method, same number of positional arguments, same keywords)."""
    stack = _Recording()
    registry = ScriptedRegistry(Script())
    driver = Driver(_RecordingAdapter(), stack, registry.ghost, registry.script, bound=2)
    with contextlib.suppress(AssertionError):  # postconditions on a stack that does nothing
        driver._call(op, "T")
    call = CALLS["pinned add" if op.pin else op.kind]
    assert len(stack.calls) == 1, stack.calls
    assert _matches(call, stack.calls[0]), (call, stack.calls)


def test_calls_for_names_the_shapes_of_a_scenario() -> None:
    """Pinned adds, ops inside a lease, and the model protocol's remove are all listed."""
    ops = [Op("add", "a", pin=True), Op("lease", "a", inside=(Op("refresh", "b"),))]
    assert calls_for(ops) == (
        CALLS["pinned add"],
        CALLS["remove keeping files"],
        CALLS["refresh"],
        CALLS["lease"],
    )


class _TwoArgs:
    def add_model(self, model_id: str, api_key: str | None = None) -> None:
        pass


class _KeywordAlias:
    def add_model(self, model_id: str, *, api_key: str | None = None, alias: Any = None) -> None:
        pass


class _Flexible:
    def add_model(self, *args: Any, **kwargs: Any) -> None:
        pass


def test_a_signature_that_cannot_take_the_shape_is_named() -> None:
    """The message says what the method takes and how the scenarios call it."""
    assert shape_mismatch(_TwoArgs(), CALLS["add"]) == (
        "your `add_model` takes (model_id, api_key); the scenarios call "
        "add_model(model_id, api_key, model_id_alias)"
    )
    assert shape_mismatch(_KeywordAlias(), CALLS["add"]) == (
        "your `add_model` takes (model_id, api_key (keyword only), alias (keyword only)); "
        "the scenarios call add_model(model_id, api_key, model_id_alias)"
    )
    assert shape_mismatch(_Flexible(), CALLS["pinned add"]) is None
    assert shape_mismatch(_TwoArgs(), CALLS["lru"]) == (
        "your stack (_TwoArgs) has no `lru_order`; the scenarios call lru_order()"
    )
    assert CALLS["add"].doc == "docs/contract.md#add_model"


class _Manager:
    """Correct except for the shape of `add_model` (a subclass changes it)."""

    def __init__(self, registry: ScriptedRegistry) -> None:
        self.registry = registry
        self.models: dict[str, Any] = {}

    def add_model(self, model_id: str, api_key: Any = None, alias: Any = None) -> None:
        if model_id not in self.models:
            self.models[model_id] = self.registry.get_model(model_id)(model_id=model_id)

    def remove(self, model_id: str, delete_from_disk: bool = True) -> None:
        model = self.models.pop(model_id, None)
        if model is not None:
            model.clear_cache(delete_from_disk=delete_from_disk)

    def keys(self) -> list[str]:
        return list(self.models)

    def __getitem__(self, model_id: str) -> Any:
        return self.models[model_id]


class _NoAliasManager(_Manager):
    def add_model(self, model_id: str, api_key: Any = None) -> None:  # type: ignore[override]
        super().add_model(model_id, api_key)


class _Adapter:
    name = "mine"
    capabilities: frozenset[str] = frozenset()
    manager: type[_Manager] = _Manager

    def build(self, registry: ScriptedRegistry, **options: Any) -> _Manager:
        return self.manager(registry)

    def snapshot(self, stack: _Manager) -> Snapshot:
        return Snapshot(registered=dict(stack.models))

    def patch_modules(self) -> list[Any]:
        return []


class _NoAliasAdapter(_Adapter):
    manager = _NoAliasManager


def test_validation_refuses_an_add_model_without_the_alias_argument() -> None:
    """Even a manager that declares no "aliases" is called add_model(id, None, None): the
    validation names the mismatch before any search (else every scenario fails, I8)."""
    validate_adapter(_Adapter(), "mine:Adapter")
    assert _refusal(_NoAliasAdapter(), "mine:NoAliasAdapter") == (
        "mine:NoAliasAdapter failed validation before any search: your `add_model` takes "
        "(model_id, api_key); the scenarios call add_model(model_id, api_key, model_id_alias) "
        "(see docs/contract.md#add_model)"
    )


def test_a_builtin_key_error_means_not_loaded() -> None:
    """`self.models[model_id]` in a user's manager answers as the core's ModelNotFound."""
    assert encode_outcome(error=KeyError("a")) == ("raise", "ModelNotFound")


class _CapacityAdapter(_Adapter):
    capabilities = frozenset({"capacity"})

    def snapshot(self, stack: _Manager) -> Snapshot:
        return Snapshot(registered=dict(stack.models))


class _BoundedAdapter(_CapacityAdapter):
    def snapshot(self, stack: _Manager) -> Snapshot:
        return Snapshot(registered=dict(stack.models), max_size=4)


def test_a_declared_capability_needs_its_snapshot_fields() -> None:
    """ "capacity" with no ``max_size`` in the snapshot would make I11 skip in every
    execution (and a failure say "I11 broken ... I11 skipped"): refused up front."""
    validate_adapter(_BoundedAdapter(), "mine:Bounded")
    assert _refusal(_CapacityAdapter(), "mine:Capacity") == (
        "mine:Capacity failed validation before any search: declared capability 'capacity' "
        "needs the Snapshot field max_size (or max_weight and weights), which snapshot(stack) "
        "leaves None: set it, or do not declare 'capacity' (see docs/contract.md#snapshot-fields)"
    )


def test_missing_snapshot_fields_per_capability() -> None:
    bare = Snapshot(registered={})
    assert missing_snapshot_fields("lru", bare) == "lru"
    assert missing_snapshot_fields("lru", Snapshot(registered={}, lru=())) is None
    assert missing_snapshot_fields("capacity", Snapshot(registered={}, max_weight=3)) == (
        "max_size (or max_weight and weights)"
    )
    assert missing_snapshot_fields("capacity", Snapshot({}, max_weight=3, weights={})) is None
    assert missing_snapshot_fields("aliases", bare) is None


class _ReturnsModel(_Manager):
    def add_model(self, model_id: str, api_key: Any = None, alias: Any = None) -> Any:  # type: ignore[override]
        super().add_model(model_id, api_key, alias)
        return self.models[model_id]


class _ReturnsModelAdapter(_Adapter):
    manager = _ReturnsModel


def test_add_model_must_return_none() -> None:
    """The scenarios never read add_model's value, so a manager returning the model
    passed every cell: the contract (and upstream's API) says None."""
    message = _refusal(_ReturnsModelAdapter(), "mine:ReturnsModel")
    assert message.startswith(
        "mine:ReturnsModel failed validation before any search: "
        "add_model('lockstep-validate-model', None, None) returned FakeModel("
    )
    assert message.endswith(
        "add_model must return None (the model is read with stack[model_id]) "
        "(see docs/contract.md#add_model)"
    )


class _ClearsAll(_Manager):
    """clear() as the contract says: every model attempted, the failed ones kept."""

    def clear(self) -> None:
        failures = []
        for model_id in list(self.models):
            try:
                self.models[model_id].clear_cache(delete_from_disk=True)
            except Exception as error:
                failures.append(error)
            else:
                del self.models[model_id]
        if failures:
            raise ExceptionGroup("clear", failures)


class _StopsAtFirst(_Manager):
    """Raises a group, but of the first failure only: the rest are never attempted."""

    def clear(self) -> None:
        for model_id in list(self.models):
            try:
                self.models[model_id].clear_cache(delete_from_disk=True)
            except Exception as error:
                raise ExceptionGroup("clear", [error]) from None
            del self.models[model_id]


class _RaisesFirst(_ClearsAll):
    def clear(self) -> None:
        try:
            super().clear()
        except ExceptionGroup as group:
            raise group.exceptions[0] from None


class _DropsFailed(_ClearsAll):
    def clear(self) -> None:
        try:
            super().clear()
        finally:
            self.models.clear()


def _clear_adapter(manager: type[_Manager]) -> _Adapter:
    adapter = _Adapter()
    adapter.manager = manager
    return adapter


_SETUP = (
    "mine:Clear failed validation before any search: with 'lockstep-validate-clear-1' and "
    "'lockstep-validate-clear-2' loaded and both of their clear_cache calls failing, clear() "
)


@pytest.mark.parametrize(
    ("manager", "says"),
    [
        (
            _StopsAtFirst,
            "raised an ExceptionGroup holding the failure of 'lockstep-validate-clear-1' only; "
            "clear() must attempt every loaded model and raise each failure",
        ),
        (
            _RaisesFirst,
            "raised ScriptedUnloadError: scripted clear_cache failure of "
            "'lockstep-validate-clear-1' (attempt 1); it must attempt every loaded model and "
            "raise an ExceptionGroup of all the failures",
        ),
        (
            _DropsFailed,
            "raised, but 'lockstep-validate-clear-1' and 'lockstep-validate-clear-2' are no "
            "longer registered; a model whose clear_cache failed stays loaded",
        ),
    ],
)
def test_clear_must_attempt_every_model_and_keep_the_failed(
    manager: type[_Manager], says: str
) -> None:
    """Two loaded models whose unloads fail: clear() raises a group of both and keeps
    both (a clear() stopping at the first failure escaped a budget-5 search)."""
    validate_adapter(_clear_adapter(_ClearsAll), "mine:Clear")
    assert (
        _refusal(_clear_adapter(manager), "mine:Clear")
        == _SETUP + says + " (see docs/contract.md#clear)"
    )


def test_a_declared_clear_that_stops_is_only_called() -> None:
    """An adapter declaring clear-stops-at-first-failure is judged by that rule."""
    adapter = _clear_adapter(_StopsAtFirst)
    adapter.semantics = frozenset({"clear-stops-at-first-failure"})  # type: ignore[attr-defined]
    validate_adapter(adapter, "mine:Clear")


def test_every_call_points_at_a_heading_of_the_contract() -> None:
    """A validation message ends "(see docs/contract.md#<anchor>)": each anchor is a
    section a reader finds (``unpin_model``, ``acquire`` and ``describe_models`` are
    stated under ``pin_model`` and ``lease``, which have headings; they did not)."""
    text = (Path(__file__).parents[2] / "docs" / "contract.md").read_text(encoding="utf-8")
    headings = {
        re.sub(r"[^a-z0-9_ -]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        for line in text.splitlines()
        if line.startswith("#")
    }
    for kind, call in CALLS.items():
        assert call.doc.startswith("docs/contract.md#"), kind
        assert call.doc.removeprefix("docs/contract.md#") in headings, (kind, call.doc)


class _NoKeysManager(_Manager):
    keys = None  # type: ignore[assignment]


class _NoKeysAdapter(_Adapter):
    manager = _NoKeysManager


def test_a_missing_method_points_at_its_section_of_the_contract() -> None:
    """The README's section names no stack method; docs/contract.md states each one."""
    assert _refusal(_NoKeysAdapter(), "mine:NoKeys") == (
        "mine:NoKeys failed validation before any search: the stack build() returned "
        "(_NoKeysManager) has no keys (every scenario calls it) (see docs/contract.md#keys)"
    )


class _AlwaysDeletesManager(_Manager):
    def remove(self, model_id: str, delete_from_disk: bool = True) -> None:
        super().remove(model_id)


class _AlwaysDeletesAdapter(_Adapter):
    manager = _AlwaysDeletesManager


def test_a_dropped_delete_flag_is_said_as_the_call_made() -> None:
    """The flags are said as the calls made, not as the fake model's list of them."""
    assert _refusal(_AlwaysDeletesAdapter(), "mine:AlwaysDeletes") == (
        "mine:AlwaysDeletes failed validation before any search: "
        "remove('lockstep-validate-model', delete_from_disk=False) called "
        "clear_cache(delete_from_disk=True) (expected clear_cache(delete_from_disk=False)): "
        "remove must pass delete_from_disk on to clear_cache (see README.md, section "
        "'The model protocol')"
    )


def test_a_snapshot_that_is_not_a_snapshot_points_at_the_adapter_table() -> None:
    class _DictSnapshot(_Adapter):
        def snapshot(self, stack: _Manager) -> Any:
            return dict(stack.models)

    assert _refusal(_DictSnapshot(), "mine:DictSnapshot").endswith(
        "got {} (see docs/contract.md#the-adapter)"
    )

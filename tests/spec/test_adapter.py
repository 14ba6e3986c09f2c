"""Unit tests of models_spec.adapter: core adapters at every depth and load_adapter errors."""

from __future__ import annotations

import pytest

from models_spec.adapter import (
    CAPABILITIES,
    AdapterError,
    BareManagerAdapter,
    CoreAdapter,
    ManagerAdapter,
    Snapshot,
    core_adapters,
    load_adapter,
)
from models_spec.fakes import Script, ScriptedProbe, ScriptedRegistry

TARGETS = "tests.spec._adapter_targets"


def layers(stack: object) -> list[str]:
    names = []
    while stack is not None:
        names.append(type(stack).__name__)
        stack = getattr(stack, "manager", None)
    return names


@pytest.mark.parametrize(
    ("depth", "expected"),
    [
        (0, ["WithFixedSizeCache", "ModelManager"]),
        (1, ["ModelManagerDecorator", "WithFixedSizeCache", "ModelManager"]),
        (
            2,
            [
                "ModelManagerDecorator",
                "WithFixedSizeCache",
                "ModelManagerDecorator",
                "ModelManager",
            ],
        ),
        (
            3,
            [
                "ModelManagerDecorator",
                "WithFixedSizeCache",
                "ModelManagerDecorator",
                "ModelManagerDecorator",
                "ModelManager",
            ],
        ),
    ],
)
def test_core_adapter_stacks(depth: int, expected: list[str]) -> None:
    """CoreAdapter(depth) builds the documented stack and snapshots it."""
    adapter = CoreAdapter(depth)
    assert isinstance(adapter, ManagerAdapter)
    assert adapter.name == f"core-depth{depth}"
    assert adapter.capabilities == CAPABILITIES
    stack = adapter.build(ScriptedRegistry(), max_size=2)
    assert layers(stack) == expected
    stack.add_model("a")
    stack.add_model("c", model_id_alias="b")
    stack.add_model("d")
    snap = adapter.snapshot(stack)
    assert list(snap.registered) == ["b", "d"]
    assert snap.lru == ("b", "d")
    assert (snap.pins, snap.leases, snap.lifecycle) == (frozenset(), {}, {})
    assert (snap.in_flight_loads, snap.max_size, snap.lru_lock_held) == (0, 2, None)


def test_core_adapters_and_patch_modules() -> None:
    """Depths 0-3; patch_modules are the core's concurrency modules as module objects."""
    assert [a.depth for a in core_adapters()] == [0, 1, 2, 3]
    names = [m.__name__ for m in CoreAdapter().patch_modules()]
    assert "modelmanager.lifecycle" in names
    with pytest.raises(ValueError, match="depth"):
        CoreAdapter(-1)


def test_memory_probe_threshold_and_lock_probe() -> None:
    """A ScriptedProbe's threshold configures memory eviction; the LRU-lock probe is opt-in."""
    script = Script(memory=[1.0, 0.1, 0.9])
    registry = ScriptedRegistry(script)
    adapter = CoreAdapter(0, observe_lru_lock=True)
    stack = adapter.build(registry, max_size=5, memory_probe=ScriptedProbe(script, threshold=0.5))
    stack.add_model("a")
    stack.add_model("b")
    assert stack.keys() == ["b"]
    assert adapter.snapshot(stack).lru_lock_held is False
    assert registry.ghost.lock_probe is not None
    assert registry.ghost.lock_held_in_callback == []


def test_bare_manager_adapter_lacks_lru() -> None:
    """The bare manager has no lru capability and snapshots None for it."""
    adapter = BareManagerAdapter()
    assert "lru" not in adapter.capabilities
    stack = adapter.build(ScriptedRegistry(), max_size=1)
    stack.add_model("a")
    stack.add_model("b")
    snap = adapter.snapshot(stack)
    assert sorted(snap.registered) == ["a", "b"]
    assert (snap.lru, snap.pins, snap.max_size) == (None, None, None)


def test_snapshot_observable() -> None:
    """observable() is what stacks must agree on, order-insensitive for keys and pins."""
    one = Snapshot(registered={"a": 1, "b": 2}, lru=["a", "b"], pins={"b"}, leases={})
    two = Snapshot(registered={"b": 2, "a": 1}, lru=("a", "b"), pins=frozenset({"b"}), leases={})
    assert one.observable() == two.observable()


def test_load_adapter_accepts_factories_and_instances() -> None:
    """'module:factory' may name a zero-argument factory, a class or an instance."""
    assert load_adapter(f"{TARGETS}:good_factory").name == "core-depth1"
    assert load_adapter(f"{TARGETS}:GOOD_INSTANCE").name == "core-depth0"
    assert load_adapter("models_spec.adapter:BareManagerAdapter").name == "core-bare-manager"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("no_colon", "must look like"),
        (":x", "must look like"),
        ("a:b:c", "must look like"),
        ("no_such_module_xyz:f", "cannot import module"),
        (f"{TARGETS}:missing", "has no attribute"),
        (f"{TARGETS}:failing_factory", "failed: RuntimeError"),
        (f"{TARGETS}:NotAnAdapter", "unknown names \\['teleport'\\]"),
    ],
)
def test_load_adapter_errors(target: str, message: str) -> None:
    """Every way a target can be wrong raises AdapterError saying which."""
    with pytest.raises(AdapterError, match=message):
        load_adapter(target)


def test_package_reexports_are_sorted_and_resolve() -> None:
    """models_spec/__init__ only re-exports, with a sorted __all__."""
    import models_spec

    assert models_spec.__all__ == sorted(models_spec.__all__, key=lambda n: (not n.isupper(), n))
    for name in models_spec.__all__:
        assert getattr(models_spec, name) is not None

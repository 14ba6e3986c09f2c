"""The torch example model under the core: unloads free the module, no CUDA means no pressure.

These run with the CPU build of torch; the CUDA-only checks skip themselves
when CUDA is present (and the CUDA path is asserted instead).
"""

from __future__ import annotations

import gc
import pathlib
import weakref
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from examples.torch_model import (  # noqa: E402 - after the importorskip on purpose
    TinyMLP,
    TorchModel,
    TorchModelRegistry,
    checkpoint_path,
    main,
    save_checkpoint,
)
from modelmanager import (  # noqa: E402
    ModelManager,
    WithFixedSizeCache,
    default_memory_probe,
)

pytestmark = pytest.mark.torch

IDS = ("mlp/1", "mlp/2", "mlp/3")


@pytest.fixture
def registry(tmp_path: pathlib.Path) -> TorchModelRegistry:
    """Three checkpoints in a store, a separate local cache directory."""
    store = tmp_path / "store"
    store.mkdir()
    for seed, model_id in enumerate(IDS):
        save_checkpoint(store, model_id, seed=seed)
    return TorchModelRegistry(tmp_path / "local", source_dir=store)


def _refs(stack: Any, model_id: str) -> tuple[weakref.ref[Any], weakref.ref[Any]]:
    """Weak references to the loaded model object and its nn.Module."""
    model = stack[model_id]
    return weakref.ref(model), weakref.ref(model.module)


def _assert_dead(*refs: weakref.ref[Any]) -> None:
    gc.collect()
    alive = [ref() for ref in refs if ref() is not None]
    assert not alive, f"still alive after gc.collect(): {alive}"


def test_remove_frees_the_module(registry: TorchModelRegistry) -> None:
    """After remove, neither the model object nor its nn.Module is reachable."""
    stack = WithFixedSizeCache(ModelManager(registry), max_size=2)
    stack.add_model("mlp/1")
    with stack.lease("mlp/1") as model:
        assert model.infer(torch.ones(3, 4)).shape == (3, 3)
        del model
    model_ref, module_ref = _refs(stack, "mlp/1")
    assert isinstance(module_ref(), TinyMLP)
    stack.remove("mlp/1", delete_from_disk=True)
    _assert_dead(model_ref, module_ref)
    assert stack.keys() == []
    assert registry.local_ids() == [], "delete_from_disk=True must delete the local checkpoint"


def test_eviction_frees_the_module(registry: TorchModelRegistry) -> None:
    """An evicted model is unloaded and collectable; its checkpoint file stays."""
    stack = WithFixedSizeCache(ModelManager(registry), max_size=2)
    stack.add_model("mlp/1")
    stack.add_model("mlp/2")
    model_ref, module_ref = _refs(stack, "mlp/1")
    stack.add_model("mlp/3")
    assert sorted(stack.keys()) == ["mlp/2", "mlp/3"]
    assert stack.statistics().evictions_capacity == 1
    _assert_dead(model_ref, module_ref)
    assert "mlp/1" in registry.local_ids(), "eviction unloads with delete_from_disk=False"


def test_clear_frees_every_module(registry: TorchModelRegistry) -> None:
    """After clear(), no model object and no nn.Module is alive (I9)."""
    stack = WithFixedSizeCache(ModelManager(registry), max_size=3)
    refs = []
    for model_id in IDS:
        stack.add_model(model_id)
        refs.extend(_refs(stack, model_id))
    stack.clear()
    _assert_dead(*refs)


def test_clear_cache_is_idempotent_and_unloads(tmp_path: pathlib.Path) -> None:
    """clear_cache drops the module (infer then raises) and deletes only when asked."""
    save_checkpoint(tmp_path, "mlp/1")
    model = TorchModel(model_id="mlp/1", checkpoint_dir=tmp_path)
    model.clear_cache(delete_from_disk=False)
    assert checkpoint_path(tmp_path, "mlp/1").exists()
    with pytest.raises(RuntimeError, match="unloaded"):
        model.infer(torch.ones(1, 4))
    model.clear_cache(delete_from_disk=True)
    model.clear_cache(delete_from_disk=True)
    assert not checkpoint_path(tmp_path, "mlp/1").exists()


def test_missing_checkpoint_registers_nothing(tmp_path: pathlib.Path) -> None:
    """A constructor that cannot find its checkpoint fails the add and leaves no trace."""
    stack = WithFixedSizeCache(ModelManager(TorchModelRegistry(tmp_path)), max_size=2)
    with pytest.raises(FileNotFoundError):
        stack.add_model("mlp/9")
    assert stack.keys() == []
    assert stack.lru_order() == []
    assert stack.lifecycle_snapshot() == {}
    assert stack.in_flight_loads() == 0


@pytest.mark.parametrize("bad", ["", "../x", "a b", "/abs", "mlp//1"])
def test_bad_checkpoint_ids_are_rejected(tmp_path: pathlib.Path, bad: str) -> None:
    """Ids that do not map to exactly one file in the directory are a ValueError."""
    with pytest.raises(ValueError, match="not a valid checkpoint id"):
        checkpoint_path(tmp_path, bad)


def test_default_probe_reports_no_pressure_without_cuda() -> None:
    """Without CUDA the default probe answers None: "no pressure"."""
    if torch.cuda.is_available():
        pytest.skip("CUDA is available: the CUDA path is tested below")
    probe = default_memory_probe()
    assert probe.free_fraction() is None
    probe.release_cache()  # a no-op without CUDA, must not raise


def test_default_probe_measures_with_cuda() -> None:
    """With CUDA the default probe reports a fraction in [0, 1]."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    fraction = default_memory_probe().free_fraction()
    assert fraction is not None
    assert 0.0 <= fraction <= 1.0


def test_cache_with_default_probe_never_evicts_for_memory(registry: TorchModelRegistry) -> None:
    """Even with a threshold of 1.0 the default probe causes no memory eviction without CUDA."""
    if torch.cuda.is_available():
        pytest.skip("CUDA is available: the probe may report real pressure")
    stack = WithFixedSizeCache(ModelManager(registry), max_size=3, memory_free_threshold=1.0)
    for model_id in IDS:
        stack.add_model(model_id)
    assert sorted(stack.keys()) == sorted(IDS)
    statistics = stack.statistics()
    assert statistics.evictions_memory == 0
    assert statistics.memory_probe_errors == 0
    stack.clear()


def test_demo_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """``python3 -m examples.torch_model`` runs end to end and reports an eviction."""
    assert main() == 0
    output = capsys.readouterr().out
    assert "after loading mlp/3 while mlp/1 is leased: loaded=['mlp/1', 'mlp/3']" in output
    assert "evictions_capacity=2" in output
    assert "after clear(): loaded=[]" in output


# ------------------------------------------------------------------ weights


def _module_bytes(module: Any) -> int:
    """Parameter and buffer bytes, computed independently of the core."""
    tensors = {id(t): t for t in [*module.parameters(), *module.buffers()]}
    return sum(t.numel() * t.element_size() for t in tensors.values())


def test_torch_parameter_bytes_counts_parameters_and_buffers_once() -> None:
    """A module's bytes; a shared tensor once; a wrapper's .module found; others refused."""
    from modelmanager import InvalidArgumentType, torch_parameter_bytes

    mlp = TinyMLP(4, 16, 3)
    assert torch_parameter_bytes("m", mlp) == _module_bytes(mlp) == (4 * 16 + 16 + 16 * 3 + 3) * 4
    norm = torch.nn.BatchNorm1d(8)  # buffers: running mean/var and a counter
    assert torch_parameter_bytes("n", norm) == _module_bytes(norm)
    shared = torch.nn.Linear(8, 8)
    twice = torch.nn.Sequential(shared, shared)
    assert torch_parameter_bytes("s", twice) == _module_bytes(shared)
    half = TinyMLP(4, 16, 3).to(torch.float16)
    assert torch_parameter_bytes("h", half) == _module_bytes(mlp) // 2

    class Wrapper:
        def __init__(self) -> None:
            self.module = mlp

    assert torch_parameter_bytes("w", Wrapper()) == _module_bytes(mlp)
    with pytest.raises(InvalidArgumentType, match="cannot weigh model 'x'"):
        torch_parameter_bytes("x", object())


def test_a_weighted_cache_of_torch_modules_keeps_its_byte_budget(tmp_path: pathlib.Path) -> None:
    """Modules of sizes over three orders of magnitude, in a fixed shuffled order, with
    leases: once no lease holds a model over the budget, the loaded modules' bytes
    (measured here, not by the cache) are within it."""
    import random

    from modelmanager import torch_parameter_bytes

    widths = {f"mlp/{w}": w for w in (8, 64, 512, 4096, 16384)}
    for seed, (model_id, hidden) in enumerate(widths.items()):
        save_checkpoint(tmp_path, model_id, hidden=hidden, seed=seed)
    budget = 400_000
    cache = WithFixedSizeCache(
        ModelManager(TorchModelRegistry(tmp_path)),
        max_size=None,
        max_weight=budget,
        weigher=torch_parameter_bytes,
    )
    rng = random.Random(7)
    ids = list(widths)
    for step in range(60):
        model_id = rng.choice(ids)
        if step % 3 == 0:
            with cache.acquire(model_id) as model:
                model.infer(torch.ones(1, 4))
        else:
            cache.add_model(model_id)
        keys = cache.keys()
        loaded = {rid: _module_bytes(cache[rid].module) for rid in keys}
        assert loaded == cache.weights()
        # The model an add just loaded is kept even when it is over the budget alone.
        assert sum(loaded.values()) <= budget or list(loaded) == [model_id]
    assert cache.statistics().evictions > 0
    cache.clear()


def test_weighted_demo_keeps_the_budget() -> None:
    """The example's byte-bounded demo ends within its budget, evicting by bytes."""
    from examples.torch_model import weighted_demo

    lines = weighted_demo(byte_budget=600_000)
    assert lines[-1] == "evictions: capacity=0 restore=2"
    assert "after the lease on mid: loaded=['mlp/big'] bytes=524300" in lines[2]

"""The core against a real CUDA device: the probe, memory-pressure eviction, weights.

Every test here needs a CUDA device and skips itself without one (CI has
none; these run where a GPU is lent, see CONTRIBUTING.md). Sizes are
fractions of the device's total memory, so they mean the same on any card,
and every test gives back what it allocated (the fixture checks that).

What they establish that the CPU tests cannot:

* :class:`~modelmanager.TorchCudaMemoryProbe` follows real allocations and
  ``release_cache()`` really returns the caching allocator's blocks;
* a cache with ``memory_free_threshold`` keeps the device's free fraction
  within one model of the threshold, evicts least recent first, never a
  leased model, and an evicted model's memory is really freed;
* :func:`~modelmanager.torch_parameter_bytes` agrees with the allocator, so a
  ``max_weight`` budget bounds the device memory the models hold;
* under real threads, every constructed model's memory is either held by a
  loaded model or given back: nothing leaks.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

torch = pytest.importorskip("torch")

from modelmanager import (  # noqa: E402 - after the importorskip on purpose
    ModelManager,
    TorchCudaMemoryProbe,
    WithFixedSizeCache,
    torch_parameter_bytes,
)

pytestmark = [
    pytest.mark.torch,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

_GRAIN = 2 * 2**20
"""Model sizes are multiples of 2 MiB, the caching allocator's large-block grain."""


class GpuBlob:
    """A model whose weights are one uninitialised CUDA buffer of ``nbytes``."""

    constructed: ClassVar[list[GpuBlob]] = []
    _constructed_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, model_id: str, api_key: str | None = None, *, nbytes: int) -> None:
        self.model_id = model_id
        module = torch.nn.Module()
        module.register_buffer("blob", torch.empty(nbytes, dtype=torch.uint8, device="cuda"))
        self.module: Any = module
        self.cleared = 0
        with GpuBlob._constructed_lock:
            GpuBlob.constructed.append(self)

    def touch(self) -> int:
        """A tiny kernel on the weights (inference stands in)."""
        return int(self.module.blob[:16].sum().item())

    def clear_cache(self, delete_from_disk: bool = True) -> None:
        self.cleared += 1
        self.module = None


class _Registry:
    """Every id is a ``GpuBlob`` of the same size."""

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes

    def get_model(self, model_id: str) -> Any:
        def factory(model_id: str, api_key: str | None = None) -> GpuBlob:
            return GpuBlob(model_id, api_key, nbytes=self.nbytes)

        return factory


@pytest.fixture
def stacks() -> list[WithFixedSizeCache]:
    """The stacks a test built (the probe fixture clears them)."""
    return []


def _unit(fraction: float) -> int:
    """``fraction`` of the device's total memory, rounded down to the grain."""
    _, total = torch.cuda.mem_get_info()
    return max(_GRAIN, int(total * fraction) // _GRAIN * _GRAIN)


def _settled_free_fraction(probe: TorchCudaMemoryProbe) -> float:
    """The free fraction after the allocator has given back its unused blocks."""
    gc.collect()
    probe.release_cache()
    fraction = probe.free_fraction()
    assert fraction is not None
    return float(fraction)


def _pressure_stack(
    probe: TorchCudaMemoryProbe,
    stacks: list[WithFixedSizeCache],
    *,
    model_fraction: float,
    models_below_now: float,
) -> tuple[WithFixedSizeCache, int, float, float]:
    """A cache of models of ``model_fraction`` of the device each, whose memory
    threshold is ``models_below_now`` models' worth below the free fraction now.

    Returns the stack (registered in ``stacks``), a model's bytes, its fraction of
    the device and the threshold.
    """
    unit = _unit(model_fraction)
    unit_fraction = unit / torch.cuda.mem_get_info()[1]
    threshold = _settled_free_fraction(probe) - models_below_now * unit_fraction
    stack = WithFixedSizeCache(
        ModelManager(_Registry(unit)),
        max_size=32,
        memory_probe=probe,
        memory_free_threshold=threshold,
    )
    stacks.append(stack)
    return stack, unit, unit_fraction, threshold


@pytest.fixture
def device_alone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The device for this test alone among the suite's processes (pytest-xdist workers).

    Free memory is a property of the whole device: another worker's test
    allocating or freeing meanwhile would move the fractions these tests read.
    """
    fcntl = pytest.importorskip("fcntl")
    path = tmp_path_factory.getbasetemp().parent / "cuda-device.lock"
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


@pytest.fixture
def probe(device_alone: None, stacks: list[WithFixedSizeCache]) -> Iterator[TorchCudaMemoryProbe]:
    """The default probe, on a device with room; checks the test freed what it took.

    Stacks a test appends to ``stacks`` are cleared first, also when it failed,
    so that one failure does not leave its models to the next test.
    """
    torch.cuda.init()
    torch.empty(1, device="cuda")  # the context and the allocator exist from here on
    GpuBlob.constructed.clear()
    probe = TorchCudaMemoryProbe()
    allocated = torch.cuda.memory_allocated()
    if _settled_free_fraction(probe) < 0.6:
        pytest.skip("the device has less than 60% of its memory free")
    yield probe
    for stack in stacks:
        stack.clear()
    GpuBlob.constructed.clear()
    gc.collect()
    assert torch.cuda.memory_allocated() == allocated, "the test leaked device memory"
    probe.release_cache()


def test_probe_follows_a_real_allocation(probe: TorchCudaMemoryProbe) -> None:
    """10% allocated shows as ~10% less free; freed and released, it comes back."""
    before = _settled_free_fraction(probe)
    block = torch.empty(_unit(0.10), dtype=torch.uint8, device="cuda")
    during = probe.free_fraction()
    assert during is not None
    assert 0.09 <= before - during <= 0.11, (before, during)
    del block
    assert abs(_settled_free_fraction(probe) - before) <= 0.01


def test_memory_pressure_keeps_free_memory_near_the_threshold(
    probe: TorchCudaMemoryProbe, stacks: list[WithFixedSizeCache]
) -> None:
    """Adds one by one: least recent evicted first, freed for real, within one model."""
    base = torch.cuda.memory_allocated()
    stack, unit, unit_fraction, threshold = _pressure_stack(
        probe, stacks, model_fraction=0.05, models_below_now=3.4
    )
    order = [f"blob/{i}" for i in range(8)]
    for model_id in order:
        stack.add_model(model_id)
        free = probe.free_fraction()
        assert free is not None
        assert free >= threshold - unit_fraction - 0.01, (model_id, free, threshold)
        loaded = sorted(stack.keys(), key=order.index)
        assert loaded == order[order.index(loaded[0]) : order.index(model_id) + 1], (
            "sequential adds: what is loaded is the most recent suffix"
        )
    statistics = stack.statistics()
    assert statistics.evictions_memory > 0
    assert statistics.evictions_capacity == 0
    evicted = [blob for blob in GpuBlob.constructed if blob.cleared]
    assert [blob.model_id for blob in evicted] == order[: len(evicted)]
    assert [blob.cleared for blob in evicted] == [1] * len(evicted), "unloaded once each"
    assert len(GpuBlob.constructed) == len(order), "no model was loaded twice"
    gc.collect()
    assert torch.cuda.memory_allocated() - base == len(stack.keys()) * unit


def test_memory_pressure_never_evicts_a_leased_model(
    probe: TorchCudaMemoryProbe, stacks: list[WithFixedSizeCache]
) -> None:
    """The least recent model, leased, survives every round; it goes once given back."""
    stack, *_ = _pressure_stack(probe, stacks, model_fraction=0.05, models_below_now=2.4)
    stack.add_model("blob/leased")
    with stack.lease("blob/leased") as model:
        leased = model
        for i in range(5):
            stack.add_model(f"blob/{i}")
            assert "blob/leased" in stack
            assert isinstance(model, GpuBlob)
            assert model.touch() == model.touch()  # its buffer is still on the device
        del model
    assert stack.statistics().evictions_memory >= 3
    for i in range(5, 8):
        stack.add_model(f"blob/{i}")
    assert "blob/leased" not in stack, "given back, it is the least recent"
    assert isinstance(leased, GpuBlob)
    assert leased.cleared == 1
    assert leased.module is None, "its buffer is released"


def test_weight_budget_bounds_device_memory(
    probe: TorchCudaMemoryProbe, stacks: list[WithFixedSizeCache]
) -> None:
    """torch_parameter_bytes is what the allocator holds; max_weight bounds it."""
    unit = _unit(0.03)
    base = torch.cuda.memory_allocated()
    stack = WithFixedSizeCache(
        ModelManager(_Registry(unit)),
        max_size=None,
        max_weight=3 * unit,
        weigher=torch_parameter_bytes,
    )
    stacks.append(stack)
    for i in range(7):
        stack.add_model(f"blob/{i}")
        gc.collect()
        weights = stack.weights()
        assert set(weights.values()) == {unit}
        assert torch.cuda.memory_allocated() - base == sum(weights.values()) <= 3 * unit
    assert len(stack.keys()) == 3


@pytest.mark.stress
def test_concurrent_adds_under_pressure_leak_nothing(
    probe: TorchCudaMemoryProbe, stacks: list[WithFixedSizeCache]
) -> None:
    """Real threads add, lease and use models under pressure; no memory is lost.

    Holds on every schedule: each constructed model is either loaded (and
    holds its buffer) or was cleared exactly once (and holds none), and the
    allocator holds exactly the loaded models' bytes.
    """
    base = torch.cuda.memory_allocated()
    stack, unit, _, _ = _pressure_stack(probe, stacks, model_fraction=0.02, models_below_now=6.5)
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def worker(n: int) -> None:
        try:
            start.wait()
            for round_ in range(6):
                model_id = f"blob/{n}/{round_ % 4}"
                with stack.acquire(model_id) as model:  # add and lease, atomic
                    assert isinstance(model, GpuBlob)
                    model.touch()
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads)
    assert not errors, errors
    gc.collect()
    loaded = {id(stack[model_id]) for model_id in list(stack.keys())}
    for blob in GpuBlob.constructed:
        if id(blob) in loaded:
            assert blob.cleared == 0
            assert blob.module is not None
        else:
            assert blob.cleared == 1
            assert blob.module is None
    assert torch.cuda.memory_allocated() - base == len(loaded) * unit
    assert stack.statistics().evictions_memory > 0

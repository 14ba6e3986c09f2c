"""Memory probes: scripted and torch-backed."""

from __future__ import annotations

import pytest

from modelmanager import (
    InvalidArgument,
    InvalidArgumentType,
    MemoryProbe,
    ScriptedMemoryProbe,
    TorchCudaMemoryProbe,
    default_memory_probe,
)


def test_scripted_probe_replays_script_then_default() -> None:
    """Values come in order, exceptions are raised, then ``then`` repeats."""
    boom = RuntimeError("probe down")
    probe = ScriptedMemoryProbe([0.1, None, boom, 1], then=0.5)
    assert probe.remaining == 4
    assert probe.free_fraction() == 0.1
    assert probe.free_fraction() is None
    with pytest.raises(RuntimeError, match="probe down"):
        probe.free_fraction()
    assert probe.free_fraction() == 1.0
    assert probe.free_fraction() == 0.5
    assert probe.free_fraction() == 0.5
    assert probe.measurements == 6
    assert probe.remaining == 0
    assert "measurements=6" in repr(probe)


def test_scripted_probe_records_release_calls_and_errors() -> None:
    """release_cache counts calls and raises release_error if given."""
    probe = ScriptedMemoryProbe()
    probe.release_cache()
    assert probe.release_calls == 1
    assert probe.free_fraction() is None
    failing = ScriptedMemoryProbe(release_error=OSError("driver"))
    with pytest.raises(OSError, match="driver"):
        failing.release_cache()
    assert failing.release_calls == 1


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"values": [1.5]}, InvalidArgument),
        ({"values": [-0.1]}, InvalidArgument),
        ({"values": ["0.5"]}, InvalidArgumentType),
        ({"values": [True]}, InvalidArgumentType),
        ({"then": 2.0}, InvalidArgument),
        ({"release_error": "boom"}, InvalidArgumentType),
    ],
)
def test_scripted_probe_rejects_bad_script(kwargs: dict[str, object], error: type) -> None:
    """Bad script steps raise a precise error naming the value."""
    with pytest.raises(error):
        ScriptedMemoryProbe(**kwargs)  # type: ignore[arg-type]


def test_probes_satisfy_protocol() -> None:
    """Both probes are MemoryProbes."""
    assert isinstance(ScriptedMemoryProbe(), MemoryProbe)
    assert isinstance(TorchCudaMemoryProbe(), MemoryProbe)


def test_default_probe_is_torch_probe() -> None:
    """The default probe is a TorchCudaMemoryProbe; constructing it is cheap."""
    probe = default_memory_probe()
    assert isinstance(probe, TorchCudaMemoryProbe)
    assert repr(probe) == "TorchCudaMemoryProbe(device=None)"


@pytest.mark.torch
def test_torch_probe_without_cuda_reports_no_pressure() -> None:
    """On a machine without CUDA the probe says None and release is a no-op."""
    torch = pytest.importorskip("torch")
    probe = TorchCudaMemoryProbe()
    if torch.cuda.is_available():
        fraction = probe.free_fraction()
        assert fraction is not None
        assert 0.0 <= fraction <= 1.0
    else:
        assert probe.free_fraction() is None
    probe.release_cache()


@pytest.mark.parametrize("device", [True, 1.5, b"cuda"])
def test_torch_probe_rejects_bad_device(device: object) -> None:
    """device must be None, an int or a str."""
    with pytest.raises(InvalidArgumentType, match="device"):
        TorchCudaMemoryProbe(device)  # type: ignore[arg-type]

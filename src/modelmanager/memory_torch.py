"""torch for the core: free GPU memory (``TorchCudaMemoryProbe``) and model weights.

This is the only module of the core that touches torch, and it imports torch
lazily, on the first measurement, so ``import modelmanager`` stays cheap and
works without torch installed. :func:`torch_parameter_bytes` needs no import
at all: it asks the module for its tensors.
"""

from __future__ import annotations

import importlib
import threading
from typing import Any

from modelmanager.errors import InvalidArgumentType

__all__ = ["TorchCudaMemoryProbe", "torch_parameter_bytes"]

_MODULE_ATTRIBUTES = ("module", "model", "net", "network")


def torch_parameter_bytes(resolved_id: str, model: object) -> int:
    """A weigher for ``WithFixedSizeCache``: the bytes of a model's torch tensors.

    Sums ``numel() * element_size()`` over the parameters and buffers of the
    ``torch.nn.Module`` behind ``model``: the model itself when it has
    ``parameters()``, else its first attribute among ``module``, ``model``,
    ``net``, ``network`` that has. A tensor shared by two submodules counts
    once. Raises :class:`InvalidArgumentType` naming the id when no module
    is found (the cache then unloads the model again and the add fails).
    """
    module = model if callable(getattr(model, "parameters", None)) else None
    for name in _MODULE_ATTRIBUTES:
        if module is not None:
            break
        candidate = getattr(model, name, None)
        if callable(getattr(candidate, "parameters", None)):
            module = candidate
    if module is None:
        raise InvalidArgumentType(
            f"torch_parameter_bytes cannot weigh model {resolved_id!r}: {type(model).__name__} "
            f"is no torch module and has none as .{', .'.join(_MODULE_ATTRIBUTES)}; pass a "
            "weigher that knows the model's size"
        )
    tensors: Any = module
    seen: set[int] = set()
    total = 0
    buffers = tensors.buffers() if callable(getattr(tensors, "buffers", None)) else ()
    for tensor in (*tensors.parameters(), *buffers):
        pointer = tensor.data_ptr()
        if pointer and pointer in seen:
            continue
        seen.add(pointer)
        total += int(tensor.numel()) * int(tensor.element_size())
    return total


_UNSET: Any = object()


class TorchCudaMemoryProbe:
    """Measures free/total memory of one CUDA device with ``torch.cuda.mem_get_info``.

    Reports None (no pressure) when torch is not installed or CUDA is not
    available. ``release_cache()`` calls ``torch.cuda.empty_cache()`` when
    CUDA is available and does nothing otherwise. ``device`` is passed to
    ``mem_get_info`` (None: the current device). Thread-safe.
    """

    def __init__(self, device: int | str | None = None) -> None:
        if device is not None and (isinstance(device, bool) or not isinstance(device, int | str)):
            raise InvalidArgumentType(
                f"device must be None, an int index or a str such as 'cuda:0' (got {device!r})"
            )
        self._device = device
        self._lock = threading.Lock()
        self._torch: Any = _UNSET

    def _cuda_torch(self) -> Any:
        """The torch module if CUDA is usable, else None (imported once, lazily)."""
        with self._lock:
            if self._torch is _UNSET:
                try:
                    self._torch = importlib.import_module("torch")
                except ImportError:
                    self._torch = None
        torch = self._torch
        if torch is None or not torch.cuda.is_available():
            return None
        return torch

    def free_fraction(self) -> float | None:
        """free/total of the device, or None when torch or CUDA is unavailable."""
        torch = self._cuda_torch()
        if torch is None:
            return None
        free, total = torch.cuda.mem_get_info(self._device)
        if not total:
            return None
        return float(free) / float(total)

    def release_cache(self) -> None:
        """Return the caching allocator's unused memory to the device."""
        torch = self._cuda_torch()
        if torch is not None:
            torch.cuda.empty_cache()

    def __repr__(self) -> str:
        return f"TorchCudaMemoryProbe(device={self._device!r})"

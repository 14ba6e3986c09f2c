"""Memory probes: how the cache measures and releases accelerator memory.

* :class:`ScriptedMemoryProbe` — returns scripted free fractions (or raises
  scripted exceptions) and records every call; for tests and simulations.
* :class:`~modelmanager.memory_torch.TorchCudaMemoryProbe` — asks
  ``torch.cuda``; lives in :mod:`modelmanager.memory_torch`, the only module of
  the core that imports torch (lazily, on first measurement; importing that
  module does not import torch).
* :func:`default_memory_probe` — what a cache uses when given no probe.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from modelmanager._validation import check_fraction
from modelmanager.errors import InvalidArgumentType
from modelmanager.memory_torch import TorchCudaMemoryProbe
from modelmanager.protocols import MemoryProbe

__all__ = ["MemoryProbe", "ScriptedMemoryProbe", "TorchCudaMemoryProbe", "default_memory_probe"]

ScriptStep = float | None | BaseException


class ScriptedMemoryProbe:
    """A probe that replays a script. Thread-safe.

    Each ``free_fraction()`` call consumes the next step of ``values``: a
    number in [0, 1] is returned, None is returned (unknown: no pressure), an
    exception instance is raised. Once the script is exhausted, ``then`` is
    returned forever (default None: no pressure). ``release_cache()`` raises
    ``release_error`` if given. ``measurements`` and ``release_calls`` count
    the calls.
    """

    def __init__(
        self,
        values: Iterable[ScriptStep] = (),
        *,
        then: float | None = None,
        release_error: BaseException | None = None,
    ) -> None:
        steps: list[ScriptStep] = []
        for index, value in enumerate(values):
            if value is None or isinstance(value, BaseException):
                steps.append(value)
            else:
                steps.append(check_fraction(value, f"values[{index}]"))
        if then is not None:
            then = check_fraction(then, "then")
        if release_error is not None and not isinstance(release_error, BaseException):
            raise InvalidArgumentType(
                f"release_error must be None or an exception instance (got {release_error!r})"
            )
        self._lock = threading.Lock()
        self._steps = steps
        self._position = 0
        self._then = then
        self._release_error = release_error
        self.measurements = 0
        self.release_calls = 0

    def free_fraction(self) -> float | None:
        """The next scripted fraction (or raise the next scripted exception)."""
        with self._lock:
            self.measurements += 1
            if self._position < len(self._steps):
                step = self._steps[self._position]
                self._position += 1
            else:
                step = self._then
        if isinstance(step, BaseException):
            raise step
        return step

    def release_cache(self) -> None:
        """Count the call (and raise ``release_error`` if one was given)."""
        with self._lock:
            self.release_calls += 1
        if self._release_error is not None:
            raise self._release_error

    @property
    def remaining(self) -> int:
        """Script steps not consumed yet."""
        with self._lock:
            return len(self._steps) - self._position

    def __repr__(self) -> str:
        return (
            f"ScriptedMemoryProbe(remaining={self.remaining}, measurements={self.measurements}, "
            f"release_calls={self.release_calls})"
        )


def default_memory_probe() -> MemoryProbe:
    """The probe used when a cache is given none: a :class:`TorchCudaMemoryProbe`.

    Cheap: torch is imported only when the probe first measures; without torch
    or CUDA it reports no pressure.
    """
    return TorchCudaMemoryProbe()

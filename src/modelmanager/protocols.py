"""The structural types the core talks to.

* :class:`Model` — anything with ``clear_cache(delete_from_disk)``.
* :class:`ModelRegistry` — ``get_model(resolved_id)`` returns a factory, called as
  ``factory(model_id=<canonical id>, api_key=..., **load_kwargs)``. A plain
  ``Mapping[str, factory]`` is accepted wherever a registry is.
* :class:`MemoryProbe` — how free accelerator memory is measured and released.
* :class:`ManagerLike` — what every layer of a stack (the manager and every
  decorator) provides; decorators wrap any ``ManagerLike``. Its
  ``inner_link()`` is the seam between two layers
  (:class:`~modelmanager.link.InnerLink`, in :mod:`modelmanager.link`).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from modelmanager.link import InnerLink
    from modelmanager.records import LifecycleEntryInfo, ModelDescription
    from modelmanager.statistics import ManagerStatistics

__all__ = ["ManagerLike", "MemoryProbe", "Model", "ModelFactory", "ModelRegistry"]


@runtime_checkable
class Model(Protocol):
    """A loaded model. ``clear_cache`` releases it (and its files if asked).

    The manager calls ``clear_cache`` at most once per constructed model, and
    never while a lease on it is held (I13).
    """

    def clear_cache(self, delete_from_disk: bool) -> None: ...


ModelFactory = Callable[..., Model]
"""Called as ``factory(model_id=<canonical id>, api_key=api_key, **load_kwargs)``."""


@runtime_checkable
class ModelRegistry(Protocol):
    """Maps a resolved id to the factory that constructs its model."""

    def get_model(self, model_id: str) -> ModelFactory: ...


@runtime_checkable
class MemoryProbe(Protocol):
    """Measures and releases accelerator memory.

    ``free_fraction()`` returns free/total in [0, 1], or None when unknown (no
    pressure). ``release_cache()`` returns cached allocator memory to the
    device. Either may raise; the cache counts and logs that as "no pressure".
    """

    def free_fraction(self) -> float | None: ...

    def release_cache(self) -> None: ...


class ManagerLike(Protocol):
    """The interface every layer of a manager stack provides."""

    def add_model(
        self,
        model_id: str,
        api_key: str | None = None,
        model_id_alias: str | None = None,
        **load_kwargs: Any,
    ) -> None: ...

    def remove(self, model_id: str, delete_from_disk: bool = True) -> None: ...

    def clear(self) -> None: ...

    def keys(self) -> list[str]: ...

    def __contains__(self, model_id: object) -> bool: ...

    def __getitem__(self, model_id: str) -> Model: ...

    def __len__(self) -> int: ...

    def describe_models(self) -> list[ModelDescription]: ...

    def lease(self, model_id: str) -> AbstractContextManager[Model]: ...

    def acquire(
        self,
        model_id: str,
        api_key: str | None = None,
        model_id_alias: str | None = None,
        **load_kwargs: Any,
    ) -> AbstractContextManager[Model]: ...

    def statistics(self) -> ManagerStatistics: ...

    def lifecycle_snapshot(self) -> dict[str, LifecycleEntryInfo]: ...

    def lease_counts(self) -> dict[str, int]: ...

    def lifecycle(self, resolved_id: str) -> AbstractContextManager[None]: ...

    def inner_link(self) -> InnerLink: ...

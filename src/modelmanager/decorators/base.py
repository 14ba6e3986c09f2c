"""ModelManagerDecorator: the pass-through layer every decorator builds on.

It delegates every public method of the core API explicitly, so any depth of
decorators composes (B11), and it has no "already loaded?" fast path of its
own: every call goes to the inner layer, which answers a warm add only under
its own lock and only for a model that is not being unloaded, else under the
id's lifecycle (B4). Its :meth:`~ModelManagerDecorator.inner_link` forwards
that inner warm step (and the non-waiting lifecycle take) to an outer cache,
so a stack of pass-through layers costs nothing on the warm path.
Methods that only some layers provide (the cache's ``pin_model``,
``unpin_model``, ``pinned``, ``lru_order``, ``in_flight_loads``, ``refresh``,
``weights``)
are delegated by name through class attributes (descriptors) — only those
names (:data:`OPTIONAL_METHODS`); if no inner layer has one, reading it
raises :class:`UnsupportedOperation` (also an AttributeError, so ``hasattr``
answers False). Not ``__getattr__``: on CPython a class with ``__getattr__``
gets no specialised attribute loads, which made every ``self.x`` of every
decorator (the cache's warm path included) several times slower.

A subclass that overrides ``add_model`` should override ``acquire`` too, since
the base delegates ``acquire`` to the inner layer as a whole.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, ClassVar

from modelmanager.errors import InvalidArgumentType, UnsupportedOperation
from modelmanager.link import InnerLink, LayerLink
from modelmanager.protocols import ManagerLike, Model
from modelmanager.records import LifecycleEntryInfo, ModelDescription
from modelmanager.statistics import ManagerStatistics

__all__ = ["OPTIONAL_METHODS", "ModelManagerDecorator"]

OPTIONAL_METHODS: frozenset[str] = frozenset(
    {"in_flight_loads", "lru_order", "pin_model", "pinned", "refresh", "unpin_model", "weights"}
)

_REQUIRED_METHODS = (
    "add_model",
    "remove",
    "clear",
    "keys",
    "describe_models",
    "lease",
    "acquire",
    "statistics",
    "lifecycle_snapshot",
    "lease_counts",
    "lifecycle",
    "inner_link",
)


def check_manager(value: object) -> ManagerLike:
    """Return ``value`` if it provides the whole :class:`ManagerLike` interface."""
    missing = [name for name in _REQUIRED_METHODS if not callable(getattr(value, name, None))]
    if missing:
        raise InvalidArgumentType(
            "manager must be a ModelManager or a decorator of one "
            f"(got {value!r} of type {type(value).__name__}, missing {', '.join(missing)})"
        )
    return value  # type: ignore[return-value]


class _OptionalMethod:
    """Stands for an optional method on a decorator: the inner layer's, or unsupported.

    A non-data descriptor, so a subclass that defines the method (the cache)
    simply overrides it.
    """

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        if instance is None:
            return self
        name = self._name
        manager = instance.__dict__.get("_manager")
        if manager is not None:
            try:
                return getattr(manager, name)
            except AttributeError:
                pass
        raise UnsupportedOperation(
            f"{name}() needs a layer that provides it (e.g. WithFixedSizeCache) "
            f"in this stack: {instance!r}"
        )


class ModelManagerDecorator:
    """Wraps a manager (or another decorator) and delegates everything to it.

    Thread-safe as the wrapped layer is. ``manager`` is the wrapped layer.
    """

    EXTENSION_POINTS: ClassVar[frozenset[str]] = frozenset()
    """The private names a subclass may override: none (override public methods)."""
    EXTENSION_HELPERS: ClassVar[frozenset[str]] = frozenset()
    """The private names a subclass may use: none (the wrapped layer is :attr:`manager`)."""

    def __init__(self, manager: ManagerLike) -> None:
        self._manager = check_manager(manager)

    @property
    def manager(self) -> ManagerLike:
        """The wrapped layer."""
        return self._manager

    def add_model(
        self,
        model_id: str,
        api_key: str | None = None,
        model_id_alias: str | None = None,
        **load_kwargs: Any,
    ) -> None:
        """See :meth:`ModelManager.add_model`."""
        self._manager.add_model(model_id, api_key, model_id_alias, **load_kwargs)

    def remove(self, model_id: str, delete_from_disk: bool = True) -> None:
        """See :meth:`ModelManager.remove`; ``delete_from_disk`` is forwarded."""
        self._manager.remove(model_id, delete_from_disk=delete_from_disk)

    def clear(self) -> None:
        """See :meth:`ModelManager.clear`."""
        self._manager.clear()

    def keys(self) -> list[str]:
        """See :meth:`ModelManager.keys`."""
        return self._manager.keys()

    def __contains__(self, model_id: object) -> bool:
        return model_id in self._manager

    def __getitem__(self, model_id: str) -> Model:
        return self._manager[model_id]

    def __len__(self) -> int:
        return len(self._manager)

    def describe_models(self) -> list[ModelDescription]:
        """See :meth:`ModelManager.describe_models`."""
        return self._manager.describe_models()

    def lease(self, model_id: str) -> AbstractContextManager[Model]:
        """See :meth:`ModelManager.lease`."""
        return self._manager.lease(model_id)

    def acquire(
        self,
        model_id: str,
        api_key: str | None = None,
        model_id_alias: str | None = None,
        **load_kwargs: Any,
    ) -> AbstractContextManager[Model]:
        """See :meth:`ModelManager.acquire`."""
        return self._manager.acquire(model_id, api_key, model_id_alias, **load_kwargs)

    def statistics(self) -> ManagerStatistics:
        """See :meth:`ModelManager.statistics`."""
        return self._manager.statistics()

    def lifecycle_snapshot(self) -> dict[str, LifecycleEntryInfo]:
        """See :meth:`ModelManager.lifecycle_snapshot`."""
        return self._manager.lifecycle_snapshot()

    def lease_counts(self) -> dict[str, int]:
        """See :meth:`ModelManager.lease_counts`."""
        return self._manager.lease_counts()

    def lifecycle(self, resolved_id: str) -> AbstractContextManager[None]:
        """See :meth:`ModelManager.lifecycle` (reaches the innermost manager)."""
        return self._manager.lifecycle(resolved_id)

    def inner_link(self) -> InnerLink:
        """The inner layer's link, forwarded as far as this layer passes through.

        ``warm_hit`` while this class keeps :meth:`add_model` (an override must
        see every add), ``try_lifecycle`` while it keeps :meth:`lifecycle`,
        ``lease_steps`` while it keeps :meth:`lease`;
        never ``warm_view``: the records are the inner layer's, for the layer
        directly above it (:mod:`modelmanager.link`).
        """
        link = self._manager.inner_link()
        cls, base = type(self), ModelManagerDecorator
        return LayerLink(
            warm_hit=link.warm_hit if cls.add_model is base.add_model else None,
            try_lifecycle=link.try_lifecycle if cls.lifecycle is base.lifecycle else None,
            lease_steps=link.lease_steps if cls.lease is base.lease else None,
        )

    # The optional methods (OPTIONAL_METHODS), delegated by name.
    in_flight_loads: Any = _OptionalMethod("in_flight_loads")
    lru_order: Any = _OptionalMethod("lru_order")
    pin_model: Any = _OptionalMethod("pin_model")
    pinned: Any = _OptionalMethod("pinned")
    refresh: Any = _OptionalMethod("refresh")
    unpin_model: Any = _OptionalMethod("unpin_model")
    weights: Any = _OptionalMethod("weights")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._manager!r})"

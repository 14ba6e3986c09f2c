"""roboflow ``inference``'s manager classes on this project's core: the drop-in.

``ModelManager``, ``ModelManagerDecorator`` and ``WithFixedSizeCache`` have
upstream's public API, errors and settings (``inference.core.managers``),
and every state decision is the core's: loading, the per-model lifecycle,
the LRU, pins, the bound, memory-pressure eviction, unloading, and a lease
held by every request while its model runs. Two ways in (docs/roboflow-dropin.md)::

    from modelmanager.integrations.roboflow_inference import ModelManager, WithFixedSizeCache
    model_manager = WithFixedSizeCache(ModelManager(model_registry), max_size=MAX_ACTIVE_MODELS)

or ``install()`` at start-up, before the server's modules are imported, for
code that imports upstream's classes by module path.

Importing this package does not import ``inference``; the first use of a
class or of :func:`install` does, and raises :class:`NotInstalled` (an
``ImportError``) naming the install command when it is missing. The core
never imports this package.
"""

from __future__ import annotations

import importlib
from typing import Any

from modelmanager.integrations.roboflow_inference._errors import (
    INSTALL_COMMAND,
    IntegrationError,
    NotInstalled,
)
from modelmanager.integrations.roboflow_inference._install import (
    SUBCLASS_MODULES,
    install,
    installed,
    uninstall,
)

__all__ = [
    "CONCURRENCY_MODULES",
    "INSTALL_COMMAND",
    "SUBCLASS_MODULES",
    "IntegrationError",
    "ModelManager",
    "ModelManagerDecorator",
    "NotInstalled",
    "WithFixedSizeCache",
    "install",
    "installed",
    "uninstall",
]

CONCURRENCY_MODULES: tuple[str, ...] = ("modelmanager.integrations.roboflow_inference._classes",)
"""The drop-in's modules that create locks (``threading`` by attribute, at call time):
what lockstep patches besides ``modelmanager.CONCURRENCY_MODULES`` to control it."""

_CLASSES = frozenset({"ModelManager", "ModelManagerDecorator", "WithFixedSizeCache"})


def __getattr__(name: str) -> Any:
    if name in _CLASSES:
        classes = importlib.import_module("modelmanager.integrations.roboflow_inference._classes")
        return getattr(classes, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

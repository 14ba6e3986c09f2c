"""`install`: make code that imports upstream's manager classes by module path get the drop-in.

Replaces the names ``ModelManager``, ``ModelManagerDecorator`` and
``WithFixedSizeCache`` in upstream's three manager modules (and the copies
those modules imported of each other's), so ``from
inference.core.managers.base import ModelManager`` run afterwards yields the
drop-in, and classes defined afterwards on those names (the active-learning
managers, upstream's logging and locked-load decorators, a server's own)
subclass it. It cannot reach what was bound before: a module that already
subclassed or imported the stock classes keeps them, so `install` refuses to
run when one of upstream's known subclass modules is already imported.
Not thread-safe: call it once, at start-up, before the server's app is imported.
"""

from __future__ import annotations

import sys
from typing import Final

from modelmanager.integrations.roboflow_inference._errors import IntegrationError

__all__ = ["SUBCLASS_MODULES", "install", "installed", "uninstall"]

SUBCLASS_MODULES: Final = (
    "inference.core.managers.active_learning",
    "inference.core.managers.decorators.locked_load",
    "inference.core.managers.decorators.logger",
    "inference.core.managers.stub_loader",
    "inference.core.interfaces.http.http_api",
)
"""Upstream modules that bind the manager classes at import (subclass or import them)."""

_NAMES: Final = (
    ("inference.core.managers.base", "ModelManager", "UPSTREAM_MANAGER", "ModelManager"),
    ("inference.core.managers.decorators.base", "ModelManager", "UPSTREAM_MANAGER", "ModelManager"),
    (
        "inference.core.managers.decorators.base",
        "ModelManagerDecorator",
        "UPSTREAM_DECORATOR",
        "ModelManagerDecorator",
    ),
    (
        "inference.core.managers.decorators.fixed_size_cache",
        "ModelManager",
        "UPSTREAM_MANAGER",
        "ModelManager",
    ),
    (
        "inference.core.managers.decorators.fixed_size_cache",
        "ModelManagerDecorator",
        "UPSTREAM_DECORATOR",
        "ModelManagerDecorator",
    ),
    (
        "inference.core.managers.decorators.fixed_size_cache",
        "WithFixedSizeCache",
        "UPSTREAM_CACHE",
        "WithFixedSizeCache",
    ),
)
"""(upstream module, name there, the original's name in _classes, the drop-in's name)."""


def installed() -> bool:
    """Whether upstream's module paths currently yield the drop-in classes."""
    module = sys.modules.get("inference.core.managers.base")
    classes = sys.modules.get("modelmanager.integrations.roboflow_inference._classes")
    return (
        module is not None
        and classes is not None
        and getattr(module, "ModelManager", None) is getattr(classes, "ModelManager", None)
    )


def install() -> None:
    """Point upstream's module paths at the drop-in classes (idempotent).

    Raises :class:`NotInstalled` without ``inference``, and
    :class:`IntegrationError`, changing nothing, when a module of
    `SUBCLASS_MODULES` was imported before (its classes keep the stock
    manager; import it after ``install()``).
    """
    from modelmanager.integrations.roboflow_inference import _classes  # noqa: PLC0415

    if installed():
        return
    early = [name for name in SUBCLASS_MODULES if name in sys.modules]
    if early:
        raise IntegrationError(
            "install() must run before these modules are imported, or they keep the stock "
            f"manager classes: {', '.join(early)}"
        )
    for module_name, name, _original, replacement in _NAMES:
        setattr(sys.modules[module_name], name, getattr(_classes, replacement))


def uninstall() -> None:
    """Restore upstream's classes under their module paths (a no-op when not installed)."""
    if not installed():
        return
    from modelmanager.integrations.roboflow_inference import _classes  # noqa: PLC0415

    for module_name, name, original, _replacement in _NAMES:
        setattr(sys.modules[module_name], name, getattr(_classes, original))

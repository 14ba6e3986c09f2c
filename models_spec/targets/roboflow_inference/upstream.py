"""roboflow `inference`'s model-manager modules, imported with the target's settings.

Importing this module imports `inference` once per process, as
`_environment.import_upstream` describes (explicit settings, no ``.env``,
the torchvision stand-in where needed), and raises `TargetUnavailable` (an
`ImportError` whose message names the install command) when the package or
a dependency is missing.  Schedules recorded against the target list this
module first among the modules to patch, so that replaying one imports
upstream this way even if the replayer imports the recorded modules before
the scenario.  It uses no `threading`, so patching it swaps nothing.

`PATCH_MODULES` names the modules lockstep patches: upstream's
``managers/base.py`` (``from threading import Lock``, ``import time``) and
``managers/decorators/fixed_size_cache.py`` (``from threading import
Lock``); every lock they use is created in ``__init__``, after patching
(``_state_lock``, the per-model locks, ``torchscript_state_global_lock``,
``_queue_lock``).  ``decorators/base.py`` has no threading names; it is
listed so a future version that adds some is patched too.
"""

from __future__ import annotations

from typing import Any, Final

from models_spec.targets.roboflow_inference._environment import import_upstream

__all__ = [
    "LOCATION",
    "PATCH_MODULES",
    "TORCHVISION_STAND_IN",
    "VERSION",
    "InferenceModelNotFound",
    "ModelManager",
    "ModelManagerDecorator",
    "ModelManagerLockAcquisitionError",
    "WithFixedSizeCache",
]

_UPSTREAM: Final = import_upstream()

VERSION: Final = _UPSTREAM.version
"""``inference.core.version.__version__`` of the imported package or checkout."""
LOCATION: Final = _UPSTREAM.location
"""The directory the ``inference`` package was imported from."""
TORCHVISION_STAND_IN: Final = _UPSTREAM.torchvision_stand_in

ModelManager: Any = _UPSTREAM.base.ModelManager
ModelManagerDecorator: Any = _UPSTREAM.decorators.ModelManagerDecorator
WithFixedSizeCache: Any = _UPSTREAM.fixed_size_cache.WithFixedSizeCache
ModelManagerLockAcquisitionError: Any = _UPSTREAM.base.ModelManagerLockAcquisitionError
InferenceModelNotFound: Any = _UPSTREAM.base.InferenceModelNotFound

PATCH_MODULES: Final = (
    __name__,
    _UPSTREAM.base.__name__,
    _UPSTREAM.decorators.__name__,
    _UPSTREAM.fixed_size_cache.__name__,
)

"""modelmanager: a model manager that is correct under concurrency.

Only re-exports live here; see the modules for the contracts.
"""

from modelmanager.decorators.base import ModelManagerDecorator as ModelManagerDecorator
from modelmanager.decorators.fixed_size_cache import WithFixedSizeCache as WithFixedSizeCache
from modelmanager.errors import CacheFull as CacheFull
from modelmanager.errors import InvalidArgument as InvalidArgument
from modelmanager.errors import InvalidArgumentType as InvalidArgumentType
from modelmanager.errors import LockTimeout as LockTimeout
from modelmanager.errors import ModelManagerError as ModelManagerError
from modelmanager.errors import (
    ModelManagerLockAcquisitionError as ModelManagerLockAcquisitionError,
)
from modelmanager.errors import ModelNotFound as ModelNotFound
from modelmanager.errors import UnsupportedOperation as UnsupportedOperation
from modelmanager.link import InnerLink as InnerLink
from modelmanager.link import LayerLink as LayerLink
from modelmanager.link import LeaseSteps as LeaseSteps
from modelmanager.link import TryLifecycle as TryLifecycle
from modelmanager.link import WarmHit as WarmHit
from modelmanager.link import WarmRecord as WarmRecord
from modelmanager.link import WarmView as WarmView
from modelmanager.link import clear_each as clear_each
from modelmanager.manager import ModelManager as ModelManager
from modelmanager.memory import ScriptedMemoryProbe as ScriptedMemoryProbe
from modelmanager.memory import default_memory_probe as default_memory_probe
from modelmanager.memory_torch import TorchCudaMemoryProbe as TorchCudaMemoryProbe
from modelmanager.memory_torch import torch_parameter_bytes as torch_parameter_bytes
from modelmanager.protocols import ManagerLike as ManagerLike
from modelmanager.protocols import MemoryProbe as MemoryProbe
from modelmanager.protocols import Model as Model
from modelmanager.protocols import ModelFactory as ModelFactory
from modelmanager.protocols import ModelRegistry as ModelRegistry
from modelmanager.records import LifecycleEntryInfo as LifecycleEntryInfo
from modelmanager.records import ModelDescription as ModelDescription
from modelmanager.statistics import ManagerStatistics as ManagerStatistics

CONCURRENCY_MODULES: tuple[str, ...] = (
    "modelmanager._quiet_log",
    "modelmanager.decorators._cache_admission",
    "modelmanager.decorators.fixed_size_cache",
    "modelmanager.leases",
    "modelmanager.lifecycle",
    "modelmanager.memory",
    "modelmanager.memory_torch",
    "modelmanager.statistics",
)
"""Modules that use ``threading``/``time``: patch these to run the core under lockstep."""

__all__ = [
    "CONCURRENCY_MODULES",
    "CacheFull",
    "InnerLink",
    "InvalidArgument",
    "InvalidArgumentType",
    "LayerLink",
    "LeaseSteps",
    "LifecycleEntryInfo",
    "LockTimeout",
    "ManagerLike",
    "ManagerStatistics",
    "MemoryProbe",
    "Model",
    "ModelDescription",
    "ModelFactory",
    "ModelManager",
    "ModelManagerDecorator",
    "ModelManagerError",
    "ModelManagerLockAcquisitionError",
    "ModelNotFound",
    "ModelRegistry",
    "ScriptedMemoryProbe",
    "TorchCudaMemoryProbe",
    "TryLifecycle",
    "UnsupportedOperation",
    "WarmHit",
    "WarmRecord",
    "WarmView",
    "WithFixedSizeCache",
    "clear_each",
    "default_memory_probe",
    "torch_parameter_bytes",
]

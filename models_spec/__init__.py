"""models_spec: the executable specification of a model manager.

The sequential reference model (`spec`), the numbered invariants
(`invariants`), scripted fakes with ghost state (`fakes`) and the adapter
through which any implementation is put under test (`adapter`).  Only
re-exports live here; README.md lists the public surface (these names, the
public modules' ``__all__``, the targets) and the modules state the contracts.
The harness (`models_spec._harness`) and the ``lockstep check`` application
(`models_spec._check`) are internal.
"""

from models_spec.adapter import CAPABILITIES as CAPABILITIES
from models_spec.adapter import AdapterError as AdapterError
from models_spec.adapter import BareManagerAdapter as BareManagerAdapter
from models_spec.adapter import CoreAdapter as CoreAdapter
from models_spec.adapter import ManagerAdapter as ManagerAdapter
from models_spec.adapter import Snapshot as Snapshot
from models_spec.adapter import TargetUnavailable as TargetUnavailable
from models_spec.adapter import core_adapters as core_adapters
from models_spec.adapter import load_adapter as load_adapter
from models_spec.fakes import FakeModel as FakeModel
from models_spec.fakes import Ghost as Ghost
from models_spec.fakes import Script as Script
from models_spec.fakes import ScriptedLoadError as ScriptedLoadError
from models_spec.fakes import ScriptedProbe as ScriptedProbe
from models_spec.fakes import ScriptedRegistry as ScriptedRegistry
from models_spec.fakes import ScriptedUnloadError as ScriptedUnloadError
from models_spec.invariants import CATALOGUE as CATALOGUE
from models_spec.invariants import InvariantReport as InvariantReport
from models_spec.invariants import InvariantSkipped as InvariantSkipped
from models_spec.invariants import InvariantViolation as InvariantViolation
from models_spec.invariants import check_all as check_all
from models_spec.invariants import check_linearizable as check_linearizable
from models_spec.spec import Spec as Spec
from models_spec.spec import SpecState as SpecState
from models_spec.spec import apply as apply
from models_spec.spec import initial_state as initial_state
from models_spec.spec import step as step

__all__ = [
    "CAPABILITIES",
    "CATALOGUE",
    "AdapterError",
    "BareManagerAdapter",
    "CoreAdapter",
    "FakeModel",
    "Ghost",
    "InvariantReport",
    "InvariantSkipped",
    "InvariantViolation",
    "ManagerAdapter",
    "Script",
    "ScriptedLoadError",
    "ScriptedProbe",
    "ScriptedRegistry",
    "ScriptedUnloadError",
    "Snapshot",
    "Spec",
    "SpecState",
    "TargetUnavailable",
    "apply",
    "check_all",
    "check_linearizable",
    "core_adapters",
    "initial_state",
    "load_adapter",
    "step",
]

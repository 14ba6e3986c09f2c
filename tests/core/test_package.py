"""The package surface: __all__, lazy torch, concurrency-module hygiene."""

from __future__ import annotations

import importlib
import pathlib
import re
import subprocess
import sys

import modelmanager

DOCUMENTED_ALL = [
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

SOURCE = pathlib.Path(modelmanager.__file__).parent


def test_all_is_sorted_and_documented() -> None:
    """__all__ is sorted and exactly the documented list; every name resolves."""
    assert sorted(modelmanager.__all__) == modelmanager.__all__
    assert modelmanager.__all__ == DOCUMENTED_ALL
    for name in modelmanager.__all__:
        assert getattr(modelmanager, name) is not None


def test_import_does_not_import_torch() -> None:
    """`import modelmanager` (and building a cache) leaves torch unimported."""
    code = (
        "import sys, modelmanager\n"
        "c = modelmanager.WithFixedSizeCache(modelmanager.ModelManager({}))\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_torch_is_named_in_exactly_one_module() -> None:
    """Only memory_torch.py mentions importing torch."""
    mentions = sorted(
        path.relative_to(SOURCE).as_posix()
        for path in SOURCE.rglob("*.py")
        if re.search(r"import_module\(\"torch\"\)|^\s*(import|from) torch", path.read_text(), re.M)
    )
    assert mentions == ["memory_torch.py"]


def test_concurrency_modules_use_module_attributes() -> None:
    """Listed modules import, use threading/time by attribute, and never sleep."""
    for name in modelmanager.CONCURRENCY_MODULES:
        module = importlib.import_module(name)
        assert hasattr(module, "threading") or hasattr(module, "time"), name
    for path in SOURCE.rglob("*.py"):
        text = path.read_text()
        assert not re.search(r"^\s*from (threading|time) import", text, re.M), path
        assert "time.sleep" not in text, path
        uses = re.search(r"^import (threading|time)$", text, re.M)
        if uses:
            parts = path.relative_to(SOURCE).with_suffix("").parts
            module_name = "modelmanager." + ".".join(parts)
            if parts[0] == "integrations":
                # An integration imports its server lazily, so the core's tuple cannot
                # list it: its package lists its own (imported without the server).
                package = importlib.import_module("modelmanager." + ".".join(parts[:2]))
                assert module_name in package.CONCURRENCY_MODULES, module_name
                continue
            assert module_name in modelmanager.CONCURRENCY_MODULES, module_name


def test_concurrency_modules_is_sorted_tuple_of_str() -> None:
    """CONCURRENCY_MODULES is a tuple of module-name strings."""
    assert isinstance(modelmanager.CONCURRENCY_MODULES, tuple)
    assert all(isinstance(name, str) for name in modelmanager.CONCURRENCY_MODULES)
    assert list(modelmanager.CONCURRENCY_MODULES) == sorted(modelmanager.CONCURRENCY_MODULES)

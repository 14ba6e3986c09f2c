"""How roboflow's `inference` package is imported for checking: settings, stand-ins, errors.

Upstream reads its configuration from environment variables once, at import
time, into module constants (``from inference.core.env import
MODEL_LOCK_ACQUIRE_TIMEOUT``); some also decide what happens at import (a
thread asking GitHub for the latest release).  So `import_upstream` sets
`ENVIRONMENT` explicitly, overriding whatever the process has, before the
first import, then checks that the imported constants carry those values
(an earlier import with other settings is refused, not silently used).

Three more things make the import the same from any directory and on any
machine, and are documented in ``docs/roboflow-inference.md``:

* ``inference.core.env`` calls ``load_dotenv(os.getcwd() + "/.env")``: the
  import runs with an empty temporary directory as the working directory,
  so a ``.env`` where the check is started cannot change the settings;
* roboflow-workflows imports ``torchvision.io`` at import time (workflow
  image decoding; the manager never calls it).  PyPI's Linux torchvision
  wheels are built against the CUDA torch and cannot load with the CPU
  build this project pins, so when no working torchvision is importable an
  inert stand-in is registered for it in this process (every use raises);
* import-time warnings (pydantic field shadowing, deprecations) are
  silenced during the import, since the test suite turns warnings into
  errors.

A source checkout of roboflow/inference (a fix branch) is checked instead of
the installed package when `TREE_VARIABLE` (``ROBOFLOW_INFERENCE_TREE``) names
it: its ``inference*`` packages are imported from the tree, each top-level one
(``inference/``, ``inference_sdk/``, ...) and each nested project's
(``inference_models/inference_models/``: the repository keeps that package in a
project directory of its own), before anything installed.  Nothing else of the
tree is importable through it, so the tree's ``tests/`` package never shadows
another one.  A tree that is not a checkout, or whose code does not import
(its ``inference`` needing a sibling package the tree lacks, say), is
`TargetUnavailable`: one line saying which tree and why.  `report_header` is
what was imported: each upstream package's version and directory, and the
manager's three files.

Not thread-safe: import from one thread (the CLI or a test session does).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import importlib.util
import os
import sys
import tempfile
import tomllib
import types
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import attrs

from models_spec.adapter import AdapterError, TargetUnavailable

__all__ = [
    "ENVIRONMENT",
    "EXPECTED_CONSTANTS",
    "REQUIREMENTS",
    "SUPPORTED_VERSIONS",
    "TREE_VARIABLE",
    "ImportedPackage",
    "Setting",
    "Upstream",
    "import_upstream",
    "install_command",
    "report_header",
    "torchvision_stand_in_active",
    "tree_packages",
]

SUPPORTED_VERSIONS: Final = ("1.8.3",)
"""Versions of `inference` whose manager this target was verified against
(the checked-in table and schedules were recorded on them).  Others run, with
a note on stderr: a fix branch is the point of running on a checkout."""

REQUIREMENTS: Final = Path(__file__).with_name("requirements.txt")

TREE_VARIABLE: Final = "ROBOFLOW_INFERENCE_TREE"
"""The environment variable naming a source checkout to check instead of the installed
package (see the module docstring)."""

UPSTREAM_PREFIX: Final = "inference"
"""Upstream's packages are the top-level ones whose name starts with this."""

MANAGER_MODULES: Final = (
    "inference.core.managers.base",
    "inference.core.managers.decorators.base",
    "inference.core.managers.decorators.fixed_size_cache",
)


@attrs.frozen
class Setting:
    """One environment variable set before upstream is imported, and why."""

    name: str
    value: str
    why: str


ENVIRONMENT: Final[tuple[Setting, ...]] = (
    Setting(
        "OFFLINE_MODE",
        "True",
        "nothing goes to the network: no release check, no OpenTelemetry spans, "
        "no model-monitoring cache writes after an inference",
    ),
    Setting(
        "DISABLE_VERSION_CHECK",
        "True",
        "no thread is started at import to ask GitHub for the latest release",
    ),
    Setting("METRICS_ENABLED", "False", "no pingback thread, no metrics in the inference path"),
    Setting("DISABLE_INFERENCE_CACHE", "True", "inference writes no model-monitoring entries"),
    Setting(
        "MODELS_CACHE_AUTH_ENABLED",
        "False",
        "upstream default: add_model does not ask the Roboflow API whether the key may load",
    ),
    Setting(
        "MEMORY_FREE_THRESHOLD",
        "0.0",
        "upstream default: memory-pressure eviction is off (it reads torch.cuda directly, "
        "with no probe to inject, so the `memory` capability is not declared)",
    ),
    Setting(
        "MODEL_LOCK_ACQUIRE_TIMEOUT",
        "60.0",
        "upstream default per-model and state lock timeout; under lockstep every timed "
        "wait may time out as a scheduling choice whatever its length",
    ),
    Setting(
        "HOT_MODELS_QUEUE_LOCK_ACQUIRE_TIMEOUT", "5.0", "upstream default LRU-queue lock timeout"
    ),
    Setting(
        "USE_INFERENCE_MODELS",
        "True",
        "upstream default on Linux and macOS: constructors also receive the TorchScript "
        "lock and the artifact cache (an inert stand-in here: nothing touches the disk)",
    ),
    Setting("DISK_CACHE_CLEANUP", "True", "upstream default: evictions pass delete_from_disk=True"),
    Setting(
        "LOG_LEVEL",
        "ERROR",
        "keeps upstream's per-eviction warnings out of the report; logging does not change "
        "control flow",
    ),
    Setting("INFERENCE_WARNINGS_DISABLED", "True", "no configuration warnings at import"),
    Setting(
        "TELEMETRY_USE_PERSISTENT_QUEUE",
        "False",
        "the usage collector that importing inference starts keeps its queue in memory "
        "instead of an SQLite file in MODEL_CACHE_DIR (nothing is written to disk)",
    ),
)

EXPECTED_CONSTANTS: Final[Mapping[str, Mapping[str, object]]] = {
    "inference.core.managers.base": {
        "OFFLINE_MODE": True,
        "METRICS_ENABLED": False,
        "DISABLE_INFERENCE_CACHE": True,
        "MODELS_CACHE_AUTH_ENABLED": False,
        "MODEL_LOCK_ACQUIRE_TIMEOUT": 60.0,
        "USE_INFERENCE_MODELS": True,
        "DISK_CACHE_CLEANUP": True,
    },
    "inference.core.managers.decorators.fixed_size_cache": {
        "OFFLINE_MODE": True,
        "MODELS_CACHE_AUTH_ENABLED": False,
        "MEMORY_FREE_THRESHOLD": 0.0,
        "HOT_MODELS_QUEUE_LOCK_ACQUIRE_TIMEOUT": 5.0,
        "USE_INFERENCE_MODELS": True,
        "DISK_CACHE_CLEANUP": True,
    },
}
"""Module constants upstream binds from `ENVIRONMENT` (names a version lacks are skipped)."""


def install_command() -> str:
    """The one command that installs what this target imports (after the project itself)."""
    return f"python3 -m pip install --no-deps -r {REQUIREMENTS}"


@attrs.frozen
class ImportedPackage:
    """One upstream package as imported: its name, version and directory."""

    name: str
    version: str
    location: str


@attrs.frozen
class Upstream:
    """The imported manager modules and where they came from (`tree`: the checkout named
    by `TREE_VARIABLE`, None for the installed package; `packages`: every upstream
    package imported, `inference` first)."""

    base: types.ModuleType
    decorators: types.ModuleType
    fixed_size_cache: types.ModuleType
    version: str
    location: str
    torchvision_stand_in: bool
    tree: str | None = None
    packages: tuple[ImportedPackage, ...] = ()


# -- the torchvision stand-in -------------------------------------------------------


class _InertCallable:
    """What every attribute of the stand-in is: raises when used."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __call__(self, *args: object, **kwargs: object) -> Any:
        raise RuntimeError(
            f"{self._name} is an inert stand-in: no working torchvision is installed "
            "(models_spec.targets.roboflow_inference registers it so that inference "
            "imports; the model manager never uses torchvision)"
        )

    def __getattr__(self, attr: str) -> _InertCallable:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _InertCallable(f"{self._name}.{attr}")

    def __repr__(self) -> str:
        return f"<inert stand-in {self._name}>"


class _InertModule(types.ModuleType):
    def __getattr__(self, attr: str) -> _InertCallable:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _InertCallable(f"{self.__name__}.{attr}")


class _TorchvisionStandIn(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves ``torchvision`` and its submodules as inert modules."""

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == "torchvision" or fullname.startswith("torchvision."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _InertModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run: every attribute is inert."""


def torchvision_stand_in_active() -> bool:
    """Whether this process uses the inert torchvision stand-in."""
    return any(isinstance(finder, _TorchvisionStandIn) for finder in sys.meta_path)


def _ensure_torchvision() -> bool:
    """Import the real torchvision if it works, else register the stand-in (True)."""
    if torchvision_stand_in_active():
        return True
    if importlib.util.find_spec("torchvision") is not None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                importlib.import_module("torchvision.io")
        except Exception:  # a wheel built for another torch: fails while registering its ops
            for name in [n for n in sys.modules if n.split(".")[0] == "torchvision"]:
                del sys.modules[name]
        else:
            return False
    sys.meta_path.insert(0, _TorchvisionStandIn())
    return True


# -- the import -------------------------------------------------------------------


@contextlib.contextmanager
def _in_empty_directory() -> Iterator[None]:
    previous = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="roboflow-inference-import-") as empty:
        os.chdir(empty)
        try:
            yield
        finally:
            os.chdir(previous)


def _unavailable(error: ImportError) -> TargetUnavailable:
    missing = getattr(error, "name", None) or str(error)
    if missing.split(".")[0] == "inference":
        versions = " or ".join(SUPPORTED_VERSIONS)
        what = f"roboflow's `inference` package ({versions}) is not installed"
    else:
        what = f"`inference` is installed but imports {missing!r}, which is missing"
    return TargetUnavailable(
        f"models_spec.targets.roboflow_inference: {what}; install it with: {install_command()}"
    )


def _check_constants() -> None:
    wrong: list[str] = []
    for module_name, expected in EXPECTED_CONSTANTS.items():
        module = sys.modules[module_name]
        for name, value in expected.items():
            actual = getattr(module, name, value)
            if actual != value:
                wrong.append(f"{module_name}.{name} = {actual!r} (expected {value!r})")
    if wrong:
        raise AdapterError(
            "inference was imported in this process before the target could apply its "
            "settings: " + "; ".join(wrong) + ". Run the check in a fresh process."
        )


# -- a source checkout ---------------------------------------------------------------


def tree_packages(tree: Path) -> dict[str, Path]:
    """The upstream packages of a checkout: name -> the directory that holds the package.

    Top-level ``inference*/__init__.py`` packages, and ``X/X/__init__.py`` for a nested
    project ``X`` (``inference_models/inference_models``); the nested one wins where both
    exist (a project directory is not itself a package).
    """
    found: dict[str, Path] = {}
    for child in sorted(tree.iterdir()):
        if not child.name.startswith(UPSTREAM_PREFIX) or not child.is_dir():
            continue
        if (child / child.name / "__init__.py").is_file():
            found[child.name] = child
        elif (child / "__init__.py").is_file():
            found[child.name] = tree
    return found


class _TreeFinder(importlib.abc.MetaPathFinder):
    """Finds the checkout's upstream packages (and only those) before anything installed."""

    def __init__(self, packages: Mapping[str, Path]) -> None:
        self.packages = {name: str(directory) for name, directory in packages.items()}

    def find_spec(
        self, fullname: str, path: object = None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        directory = self.packages.get(fullname)
        if directory is None:
            return None
        return importlib.machinery.PathFinder.find_spec(fullname, [directory])


def _tree_from_environment() -> Path | None:
    """The checkout `TREE_VARIABLE` names (validated), or None when it is not set."""
    value = os.environ.get(TREE_VARIABLE, "").strip()
    if not value:
        return None
    tree = Path(value).expanduser().resolve()
    if not (tree / "inference" / "core" / "managers" / "base.py").is_file():
        raise TargetUnavailable(
            f"models_spec.targets.roboflow_inference: {TREE_VARIABLE}={value} is not a "
            "checkout of roboflow/inference (no inference/core/managers/base.py in it)"
        )
    return tree


def _use_tree(tree: Path) -> None:
    if not any(isinstance(finder, _TreeFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _TreeFinder(tree_packages(tree)))


def _tree_failure(tree: Path, error: BaseException) -> TargetUnavailable:
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    cause = f"{type(error).__name__}: {text}" if text else type(error).__name__
    siblings = ", ".join(sorted(tree_packages(tree))) or "none"
    return TargetUnavailable(
        f"models_spec.targets.roboflow_inference: inference from {TREE_VARIABLE}={tree} "
        f"does not import: {cause[:300]} (the tree's packages used: {siblings}; a fix branch "
        "needs its own sibling packages, e.g. inference_models/, in the tree)"
    )


def _project_version(directory: Path) -> str | None:
    """``[project] version`` of the pyproject.toml in `directory`, if there is one."""
    pyproject = directory / "pyproject.toml"
    if not pyproject.is_file():
        return None
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return None
    version = data.get("project", {}).get("version")
    return str(version) if version is not None else None


def _imported_packages(inference_version: str, tree: Path | None) -> tuple[ImportedPackage, ...]:
    """Every upstream package in sys.modules: name, version, directory (`inference` first).

    From a checkout, a package's version is its nested project's ``pyproject.toml``
    version, else its ``__version__`` (never the installed distribution's, which
    describes other files); installed, the distribution's version.
    """
    found = []
    for name in sorted(n for n in sys.modules if "." not in n and n.startswith(UPSTREAM_PREFIX)):
        module = sys.modules[name]
        location = Path(getattr(module, "__file__", None) or "").parent
        version: str | None = inference_version if name == "inference" else None
        in_tree = tree is not None and location.is_relative_to(tree)
        if version is None and in_tree:
            version = _project_version(location.parent)
        if version is None and not in_tree:
            try:
                version = importlib.metadata.version(name.replace("_", "-"))
            except importlib.metadata.PackageNotFoundError:
                version = None
        if version is None:
            version = str(getattr(module, "__version__", "version unknown"))
        found.append(ImportedPackage(name, version, str(location)))
    found.sort(key=lambda p: p.name != "inference")
    return tuple(found)


_UPSTREAM: Upstream | None = None


def import_upstream() -> Upstream:
    """Import the manager modules with `ENVIRONMENT` applied (once per process).

    Raises `TargetUnavailable` (one line, naming the install command) when
    `inference` or one of its dependencies is missing, and `AdapterError`
    when it was imported earlier with other settings.
    """
    global _UPSTREAM
    if _UPSTREAM is not None:
        return _UPSTREAM
    tree = _tree_from_environment()
    fresh = "inference" not in sys.modules
    if fresh:
        for setting in ENVIRONMENT:
            os.environ[setting.name] = setting.value
        if tree is not None:
            _use_tree(tree)
    stand_in = _ensure_torchvision()
    try:
        with _in_empty_directory(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            modules = [importlib.import_module(name) for name in MANAGER_MODULES]
            version_module = importlib.import_module("inference.core.version")
    except ImportError as error:
        if tree is not None:
            raise _tree_failure(tree, error) from error
        raise _unavailable(error) from error
    except Exception as error:  # a checkout whose import-time checks refuse this environment
        if tree is None:
            raise
        raise _tree_failure(tree, error) from error
    _check_constants()
    base, decorators, fixed_size_cache = modules
    version = str(getattr(version_module, "__version__", "unknown"))
    inference = sys.modules["inference"]
    location = str(Path(inference.__file__ or "").parent)
    if tree is not None and not location.startswith(str(tree)):
        raise TargetUnavailable(
            f"models_spec.targets.roboflow_inference: {TREE_VARIABLE}={tree} is set, but "
            f"inference was already imported from {location} in this process"
        )
    if version not in SUPPORTED_VERSIONS and tree is None:
        print(
            f"models_spec.targets.roboflow_inference: checking inference {version} from "
            f"{location}; verified versions: {', '.join(SUPPORTED_VERSIONS)} (the checked-in "
            "table and schedules describe those)",
            file=sys.stderr,
        )
    _UPSTREAM = Upstream(
        base,
        decorators,
        fixed_size_cache,
        version,
        location,
        stand_in,
        None if tree is None else str(tree),
        _imported_packages(version, tree),
    )
    return _UPSTREAM


def report_header() -> tuple[str, ...]:
    """What the check runs against, for the top of its report: each upstream package
    imported (version, directory) and the manager's files; imports upstream."""
    upstream = import_upstream()
    source = (
        f"the checkout {upstream.tree} ({TREE_VARIABLE})"
        if upstream.tree is not None
        else "the installed packages"
    )
    verified = "verified" if upstream.version in SUPPORTED_VERSIONS else "not verified"
    lines = [
        f"roboflow inference {upstream.version} from {source}; {verified} versions: "
        f"{', '.join(SUPPORTED_VERSIONS)}"
    ]
    width = max(len(f"{p.name} {p.version}") for p in upstream.packages)
    lines.extend(
        f"  {f'{p.name} {p.version}'.ljust(width)}  {p.location}" for p in upstream.packages
    )
    lines.extend(
        f"  {module.__name__}: {module.__file__}"
        for module in (upstream.base, upstream.decorators, upstream.fixed_size_cache)
    )
    return tuple(lines)

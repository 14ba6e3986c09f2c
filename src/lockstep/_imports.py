"""Import roots: the directories a schedule needs on ``sys.path`` to replay anywhere.

A schedule names modules (its scenario's, the patched ones). Replaying it from another
directory must import them again. Modules of *installed* distributions (site-packages,
editable installs, the standard library) import from anywhere in the same environment,
so nothing needs recording for them. A module found only because of where the
recording process ran (the current directory, ``PYTHONPATH``, a ``sys.path`` entry
added at run time by a test runner) does not: its *import root* (the directory
holding its top-level package or module) is recorded as an absolute path, and
``lockstep replay`` puts it on ``sys.path`` first.

:func:`import_roots` answers "which roots do these modules need?"; :func:`environment_paths`
is the part of ``sys.path`` a fresh interpreter of this environment has by itself
(standard library, site directories and what their ``.pth`` files add); anything a
meta-path finder other than the path finder provides (an editable install's finder)
counts as installed too.
"""

from __future__ import annotations

import importlib.machinery
import os
import site
import sys
import sysconfig
from collections.abc import Iterable
from functools import lru_cache
from types import ModuleType

__all__ = [
    "add_import_roots",
    "environment_paths",
    "import_roots",
    "main_module_name",
    "main_module_root",
]


def _pth_entries(directory: str) -> list[str]:
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(".pth"))
    except OSError:
        return []
    found: list[str] = []
    for name in names:
        try:
            with open(os.path.join(directory, name), encoding="utf-8") as handle:
                lines = handle.read().splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        for line in lines:
            entry = line.strip()
            if not entry or entry.startswith(("#", "import ", "import\t")):
                continue
            path = os.path.abspath(os.path.join(directory, entry))
            if os.path.isdir(path):
                found.append(path)
    return found


@lru_cache(maxsize=1)
def environment_paths() -> frozenset[str]:
    """Absolute ``sys.path`` entries this environment provides without the caller's help."""
    paths: set[str] = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        value = sysconfig.get_paths().get(key)
        if value:
            paths.add(os.path.abspath(value))
    sites = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
    user = site.getusersitepackages() if hasattr(site, "getusersitepackages") else None
    if isinstance(user, str):
        sites.append(user)
    for directory in sites:
        paths.add(os.path.abspath(directory))
        paths.update(_pth_entries(directory))
    for entry in sys.path:
        absolute = os.path.abspath(entry) if entry else ""
        if absolute and (
            absolute.startswith(os.path.abspath(sys.base_prefix) + os.sep)
            or absolute.startswith(os.path.abspath(sys.prefix) + os.sep)
        ):
            paths.add(absolute)  # the interpreter's own zip and lib-dynload
    return frozenset(paths)


def _installed(top: str) -> bool:
    """Whether the top-level name ``top`` imports from the environment alone."""
    baseline = [p for p in sys.path if p and os.path.abspath(p) in environment_paths()]
    if importlib.machinery.PathFinder.find_spec(top, baseline) is not None:
        return True
    if top in sys.builtin_module_names:
        return True
    for finder in sys.meta_path:
        if finder is importlib.machinery.PathFinder or not hasattr(finder, "find_spec"):
            continue
        try:
            if finder.find_spec(top, None) is not None:
                return True
        except Exception:  # a third-party finder that cannot answer: not ours to judge
            continue
    return False


def _root_of(module: ModuleType) -> str | None:
    top = module.__name__.partition(".")[0]
    top_module = sys.modules.get(top)
    if top_module is None:
        return None
    locations = [str(p) for p in getattr(top_module, "__path__", []) or []]
    filename = getattr(top_module, "__file__", None)
    if locations:  # a package: its root holds the package directory
        return os.path.dirname(os.path.abspath(locations[0]))
    if isinstance(filename, str):
        return os.path.dirname(os.path.abspath(filename))
    return None


def main_module_name() -> str | None:
    """The name the running script (``__main__``) is imported by from elsewhere.

    ``python -m pkg.mod`` gives ``pkg.mod``; ``python path/to/script.py`` gives
    ``script`` (its directory is its import root, :func:`main_module_root`). None when
    there is no script, or when its stem is not an identifier or names another module
    (one of the environment's, or one already imported from elsewhere), which an
    import would find instead.
    """
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    name = getattr(spec, "name", None)
    if isinstance(name, str) and name and name != "__main__":
        return name.removesuffix(".__main__")
    filename = getattr(main, "__file__", None)
    if not isinstance(filename, str) or not filename:
        return None
    path = os.path.abspath(filename)
    stem = os.path.splitext(os.path.basename(path))[0]
    if not stem.isidentifier() or _installed(stem):
        return None
    other = sys.modules.get(stem)
    if other is not None and other is not main:
        other_file = getattr(other, "__file__", None)
        if not isinstance(other_file, str) or os.path.abspath(other_file) != path:
            return None
    return stem


def main_module_root() -> str | None:
    """The import root :func:`main_module_name` needs: the script's directory, or the
    directory holding the package of ``python -m pkg.mod`` (None when the environment
    provides it, or when there is no name)."""
    name = main_module_name()
    if name is None:
        return None
    top = name.partition(".")[0]
    if _installed(top):
        return None
    package = sys.modules.get(top)
    if package is not None and top != name:
        return _root_of(package)
    filename = getattr(sys.modules.get("__main__"), "__file__", None)
    return os.path.dirname(os.path.abspath(filename)) if isinstance(filename, str) else None


def import_roots(modules: Iterable[ModuleType | str]) -> tuple[str, ...]:
    """The absolute roots ``modules`` need on ``sys.path`` beyond the environment's own.

    Modules given by name must already be imported (names that are not are skipped).
    Order follows ``modules``; duplicates are dropped.
    """
    roots: list[str] = []
    for item in modules:
        module = sys.modules.get(item) if isinstance(item, str) else item
        if module is None:
            continue
        top = module.__name__.partition(".")[0]
        if top == "__main__":
            root = main_module_root()  # replayed as the module the script imports as
        elif _installed(top):
            continue
        else:
            root = _root_of(module)
        if root is not None and root not in roots:
            roots.append(root)
    return tuple(roots)


def add_import_roots(roots: Iterable[str]) -> list[str]:
    """Put the existing directories of ``roots`` first on ``sys.path``; return those added."""
    added: list[str] = []
    for root in reversed(list(roots)):
        if os.path.isdir(root) and root not in sys.path:
            sys.path.insert(0, root)
            added.insert(0, root)
    return added

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

__all__ = ["add_import_roots", "environment_paths", "import_roots"]


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
        if top == "__main__" or _installed(top):
            continue
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

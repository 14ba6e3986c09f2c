"""The core's extension points are an API: listed in code, and nothing else private is touched.

Each core class a known-bug variant may subclass lists the private names a
subclass may override (``EXTENSION_POINTS``) and the private names an
override may use besides the public API (``EXTENSION_HELPERS``). These tests
read the consumers of the core (``models_spec``, ``stateful_tests``,
``examples``, ``benchmarks``) with ``ast`` and fail when one of them touches
any other private name of the core: an attribute access, a method or class
attribute defined in a subclass of a core class, or an import from a private
module of the core. ``tests/`` is left out on purpose: the core's own unit
tests are white-box (the mutation killers and the book's state machine read
the private state they test). ``models_spec/targets/roboflow_inference``
adapts another project's classes, whose private names (``_models``, ...)
coincide with ours, so it is left out too.

A second test keeps the variants small: an override that does not call the
core's method must not repeat most of its body (override a smaller point).
"""

from __future__ import annotations

import ast
import difflib
import importlib
import inspect
import pathlib
import sys
import textwrap
from collections.abc import Iterator

import pytest

from modelmanager import ModelManager, ModelManagerDecorator, WithFixedSizeCache
from modelmanager.decorators._cache_admission import AdmissionControl
from modelmanager.decorators._cache_book import CacheBook
from modelmanager.decorators._cache_policy import CapacityPolicy
from modelmanager.leases import LeaseTable
from modelmanager.lifecycle import LifecycleTable
from modelmanager.statistics import Counters

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORE = ROOT / "src" / "modelmanager"
CONSUMERS = ("models_spec", "stateful_tests", "examples", "benchmarks")
FOREIGN = (ROOT / "models_spec" / "targets" / "roboflow_inference",)

EXTENSIBLE: tuple[type, ...] = (
    AdmissionControl,
    CacheBook,
    CapacityPolicy,
    Counters,
    LeaseTable,
    LifecycleTable,
    ModelManager,
    ModelManagerDecorator,
    WithFixedSizeCache,
)
OVERRIDABLE = frozenset().union(*(cls.EXTENSION_POINTS for cls in EXTENSIBLE))  # type: ignore[attr-defined]
USABLE = OVERRIDABLE.union(*(cls.EXTENSION_HELPERS for cls in EXTENSIBLE))  # type: ignore[attr-defined]


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _defined_names(tree: ast.AST) -> set[str]:
    """Private names a tree defines: methods, class attributes, ``x._name = ...`` stores."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.ClassDef):
            for statement in node.body:
                targets = (
                    statement.targets
                    if isinstance(statement, ast.Assign)
                    else [statement.target]
                    if isinstance(statement, ast.AnnAssign)
                    else []
                )
                names.update(t.id for t in targets if isinstance(t, ast.Name))
    return {name for name in names if _private(name)}


def _parse(path: pathlib.Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


CORE_PRIVATE = frozenset().union(*(_defined_names(_parse(p)) for p in CORE.rglob("*.py")))


def _consumer_files() -> Iterator[pathlib.Path]:
    for package in CONSUMERS:
        for path in sorted((ROOT / package).rglob("*.py")):
            if not any(path.is_relative_to(foreign) for foreign in FOREIGN):
                yield path


def _base_names(node: ast.ClassDef) -> list[str]:
    names = []
    for base in node.bases:
        if isinstance(base, ast.Name):
            names.append(base.id)
        elif isinstance(base, ast.Attribute):
            names.append(base.attr)
    return names


def _core_subclass_names(trees: dict[pathlib.Path, ast.Module]) -> set[str]:
    """Names of consumer classes deriving (transitively, by name) from a core class."""
    known = {cls.__name__ for cls in EXTENSIBLE}
    classes = [
        node for tree in trees.values() for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
    ]
    grew = True
    while grew:
        grew = False
        for node in classes:
            if node.name not in known and known.intersection(_base_names(node)):
                known.add(node.name)
                grew = True
    return known


def _offenders() -> list[str]:
    trees = {path: _parse(path) for path in _consumer_files()}
    own = frozenset().union(*(_defined_names(tree) for tree in trees.values()))
    subclasses = _core_subclass_names(trees)
    found: list[str] = []
    for path, tree in trees.items():
        where = path.relative_to(ROOT)
        inside: set[int] = set()  # ids of the nodes inside a core subclass
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and subclasses.intersection(_base_names(node)):
                inside.update(id(n) for n in ast.walk(node))
                for name in _defined_names(ast.Module(body=node.body, type_ignores=[])):
                    if name in CORE_PRIVATE and name not in OVERRIDABLE:
                        found.append(f"{where}:{node.lineno}: {node.name} overrides {name}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr):
                name = node.attr
                if name not in CORE_PRIVATE or name in USABLE:
                    continue
                if id(node) not in inside and name in own:
                    continue  # the consumer's own attribute of that name, on its own object
                found.append(f"{where}:{node.lineno}: uses {name}")
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "modelmanager"
            ):
                module = importlib.import_module(node.module or "")
                private_module = any(_private(part) for part in (node.module or "").split("."))
                for alias in node.names:
                    value = getattr(module, alias.name, None)
                    extensible = isinstance(value, type) and value in EXTENSIBLE
                    if _private(alias.name) or (private_module and not extensible):
                        found.append(f"{where}:{node.lineno}: imports {node.module}.{alias.name}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    if parts[0] == "modelmanager" and any(_private(p) for p in parts):
                        found.append(f"{where}:{node.lineno}: imports {alias.name}")
    return found


def test_consumers_touch_only_the_listed_private_names() -> None:
    """Outside ``modelmanager`` (tests aside), a private name of the core is an extension point."""
    assert _offenders() == []


@pytest.mark.parametrize("cls", EXTENSIBLE, ids=lambda cls: cls.__name__)
def test_every_listed_name_exists_and_is_documented(cls: type) -> None:
    """Each listed name is private, defined by the class (methods and class attributes
    on it, helpers in its source), and named in its module's docstring or the class's."""
    points: frozenset[str] = cls.EXTENSION_POINTS  # type: ignore[attr-defined]
    helpers: frozenset[str] = cls.EXTENSION_HELPERS  # type: ignore[attr-defined]
    assert all(_private(name) for name in points | helpers)
    assert [name for name in sorted(points) if not hasattr(cls, name)] == []
    source = inspect.getsource(cls)
    assert [name for name in sorted(helpers) if f".{name}" not in source] == []
    docs = (sys.modules[cls.__module__].__doc__ or "") + (cls.__doc__ or "")
    assert [name for name in sorted(points) if name not in docs] == []


def _body_lines(source: str) -> list[str]:
    """A function's statements as stripped lines, without its signature, docstring and comments."""
    tree = ast.parse(textwrap.dedent(source))
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    lines = []
    for statement in body:
        for line in (ast.get_source_segment(textwrap.dedent(source), statement) or "").splitlines():
            stripped = line.split("#")[0].strip()
            if stripped:
                lines.append(stripped)
    return lines


def _overrides() -> Iterator[tuple[str, str, str, str]]:
    """(where, name, variant body, core body) of each override in models_spec/bugs."""
    for path in sorted((ROOT / "models_spec" / "bugs").glob("*.py")):
        module = importlib.import_module(f"models_spec.bugs.{path.stem}")
        for cls in vars(module).values():
            if not (isinstance(cls, type) and cls.__module__ == module.__name__):
                continue
            core = next((base for base in cls.__mro__ if base in EXTENSIBLE), None)
            if core is None:
                continue
            for name, value in vars(cls).items():
                original = getattr(core, name, None)
                if not inspect.isfunction(value) or not inspect.isfunction(original):
                    continue
                yield (
                    f"{path.name}:{cls.__name__}.{name}",
                    name,
                    inspect.getsource(value),
                    inspect.getsource(original),
                )


# Overrides that share their shape with the core's method for a reason, and the reason.
SHAPED_LIKE_THE_CORE = {
    "b07_duplicate_lru.py:AppendBeforeLoadCache._commit_load": (
        "upstream's commit (lock, book step, pin, notify): the id was appended before the "
        "load, so committing it only releases the slot; the core's method would also read "
        "the manager's records, a watched access (a switch point) the variant never made"
    ),
}


def test_no_variant_repeats_a_core_method() -> None:
    """An override that does not call the core's method shares at most half its
    statements (two lines at least) with it: else a smaller point is missing."""
    repeats = []
    for where, name, variant, core in _overrides():
        if f"super().{name}(" in variant or f".{name}(self" in variant:
            continue
        if where in SHAPED_LIKE_THE_CORE:
            continue
        mine, theirs = _body_lines(variant), _body_lines(core)
        matcher = difflib.SequenceMatcher(a=mine, b=theirs, autojunk=False)
        shared = sum(block.size for block in matcher.get_matching_blocks())
        if shared >= 2 and shared * 2 > len(mine):
            repeats.append(f"{where}: {shared} of {len(mine)} lines are the core's")
    assert repeats == []
    assert set(SHAPED_LIKE_THE_CORE) <= {where for where, *_ in _overrides()}


def _package_of(path: pathlib.Path) -> str:
    """The dotted name of the package that holds ``path`` (under ``src/``)."""
    return ".".join(path.relative_to(ROOT / "src").parent.parts)


def _inside(module: str, package: str) -> bool:
    """Whether ``from module import _name`` takes a private module of the importer's own
    package (a subpackage of the core: the top-level modules share no private names)."""
    return package != "modelmanager" and module == package


def test_core_modules_import_no_private_name_of_another() -> None:
    """Inside the core, a module uses another's public names only (the layers' seam is
    ``modelmanager.link``, not a private helper of the manager's module)."""
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}: {node.module}.{alias.name}"
        for path in sorted(CORE.rglob("*.py"))
        for node in ast.walk(_parse(path))
        if isinstance(node, ast.ImportFrom)
        and (node.module or "").startswith("modelmanager")
        # A subpackage's private modules are its own: an integration may import
        # them from its package (``from ...roboflow_inference import _classes``).
        and not _inside(node.module or "", _package_of(path))
        for alias in node.names
        if _private(alias.name)
    ]
    assert found == []

"""models_spec's layout: a documented public surface, an internal harness, no circle.

* The public surface is what ``models_spec/README.md`` lists under "Public surface":
  one table per public namespace, equal to that namespace's sorted ``__all__``.
  Every other module is internal: its dotted name has a part starting with ``_``
  (``models_spec._harness``, ``models_spec._check``), or it is one of the documented
  kinds that are not an import API (the commands, the bug modules, the targets'
  submodules, the corpus' data packages).
* What users read and copy (the README, ``docs/``, ``examples/``) names only
  public names of ``models_spec``.
* The run-time import graph of ``models_spec``'s modules (from their ``import``
  statements, ``ast``; imports inside functions count, ``if TYPE_CHECKING:`` blocks
  count too, since a circle there is a circle of concepts) has no cycle.
* ``import modelmanager`` imports neither ``lockstep`` nor ``models_spec``: the
  product does not carry its test harness.
"""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import models_spec
from tests.import_graph import cycle

PACKAGE = Path(models_spec.__file__).resolve().parent
ROOT = PACKAGE.parent
README = PACKAGE / "README.md"

NOT_AN_IMPORT_API = (
    "models_spec.hunt",  # python3 -m models_spec.hunt
    "models_spec.record_corpus",  # python3 -m models_spec.record_corpus
    "models_spec.bugs.",  # one module per bug, read by the catalogue
    "models_spec.targets.",  # --target modules and their commands
    "models_spec.schedules",  # the corpus (data)
    "models_spec.upstream_schedules",  # the upstream target's schedules (data)
)
"""Modules without an underscore that are not import API, each documented as what it
is in the README ("Besides the tables")."""

TARGETS = ("models_spec.targets.roboflow_inference", "models_spec.targets.roboflow_dropin")


def documented() -> dict[str, list[str]]:
    """Namespace -> names, from the tables under each "### `namespace`" heading of the
    README's "Public surface" section."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Public surface", 1)[1].split("\n## ", 1)[0]
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in section.splitlines():
        heading = re.fullmatch(r"### `([\w.]+)`", line)
        if heading:
            current = sections.setdefault(heading.group(1), [])
            continue
        row = re.match(r"\| `(\w+)` \|", line)
        if row and current is not None:
            current.append(row.group(1))
    return sections


def _isort_key(name: str) -> tuple[int, list[int | str]]:
    """isort's order (constants, classes, functions), numbers compared as numbers
    (``check_i2`` before ``check_i10``), as ruff sorts ``__all__``."""
    kind = 0 if name.isupper() else 1 if name[0].isupper() else 2
    return (kind, [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)])


def _modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        yield ".".join(parts), path


def test_the_readme_documents_the_public_namespaces() -> None:
    """The README has a table for the package and for each public module."""
    assert set(documented()) == {
        "models_spec",
        "models_spec.adapter",
        "models_spec.contract",
        "models_spec.fakes",
        "models_spec.invariants",
        "models_spec.pytest_suite",
        "models_spec.replayable",
        "models_spec.scenarios",
        "models_spec.spec",
    }
    assert all(documented().values())


@pytest.mark.parametrize("namespace", sorted(documented()))
def test_all_is_exactly_the_documented_table(namespace: str) -> None:
    """Each public namespace's __all__ holds exactly the names of its table, in isort
    order, and every name resolves."""
    module = importlib.import_module(namespace)
    exported = list(module.__all__)
    assert set(exported) == set(documented()[namespace])
    assert len(documented()[namespace]) == len(set(documented()[namespace]))
    assert exported == sorted(exported, key=_isort_key)
    for name in exported:
        assert hasattr(module, name), name


def test_every_other_module_is_internal() -> None:
    """A module that is not a documented namespace is private (a part starts with
    ``_``) or one of the documented non-API kinds."""
    public = set(documented())
    offenders = [
        name
        for name, _ in _modules()
        if name not in public
        and not any(part.startswith("_") for part in name.split("."))
        and not any(name == kind.rstrip(".") or name.startswith(kind) for kind in NOT_AN_IMPORT_API)
    ]
    assert offenders == []


def test_the_documented_targets_exist() -> None:
    """The two documented targets import (without their optional packages) and list
    their adapters."""
    for target in TARGETS:
        assert importlib.import_module(target).ADAPTERS, target


_DOTTED = re.compile(r"\bmodels_spec((?:\.\w+)+)")
_FROM_IMPORT = re.compile(
    r"^\s*from (models_spec(?:\.\w+)*) import (?:\(([\w,\s]+)\)|([\w, ]+))", re.M
)


CONTRIBUTOR_DOCS = ("interfaces.md",)
"""Pages about the project's own seams, for contributors: they name internal modules."""


def _user_texts() -> Iterator[tuple[str, str]]:
    pages = [p for p in sorted((ROOT / "docs").glob("*.md")) if p.name not in CONTRIBUTOR_DOCS]
    for path in [ROOT / "README.md", *pages]:
        yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")
    for path in sorted((ROOT / "examples").rglob("*.py")):
        yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")


def test_user_docs_and_examples_use_only_public_names() -> None:
    """README.md, docs/ and examples/ never name an internal part of models_spec, and
    every ``from models_spec... import name`` they show imports a documented name.

    The one exception is the maintainer command that regenerates ``docs/bugs.md``,
    written in that page's own header."""
    tables = documented()
    offenders: list[str] = []
    for where, page in _user_texts():
        text = page.replace("python3 -m models_spec._harness.catalogue --write-docs", "")
        for match in _DOTTED.finditer(text):
            if any(part.startswith("_") for part in match.group(1).split(".")):
                offenders.append(f"{where}: models_spec{match.group(1)}")
        for match in _FROM_IMPORT.finditer(text):
            module, names = match.group(1), match.group(2) or match.group(3)
            if module not in tables:
                continue
            for name in (n.strip() for n in names.replace("\n", ",").split(",")):
                if name and name not in tables[module]:
                    offenders.append(f"{where}: from {module} import {name}")
    assert offenders == []


def _imports(module: str, path: Path) -> Iterator[str]:
    """The models_spec modules an import statement of `module` names (every package
    above an imported module runs too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"
    known = {name for name, _ in _modules()}
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join([*package, base] if base else package)
            names = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            ]
        for imported in names:
            target = imported
            while target and target not in known:
                target = target.rpartition(".")[0]
            while target:
                if target != module and not module.startswith(target + "."):
                    yield target
                target = target.rpartition(".")[0]


GRAPH = {name: set(_imports(name, path)) for name, path in _modules()}


def test_the_import_graph_is_computed() -> None:
    """A guard on the computation: arrows known to exist are found."""
    assert "models_spec.scenarios" in GRAPH["models_spec._harness.catalogue"]
    assert "models_spec._harness.catalogue" in GRAPH["models_spec._harness.scenario_index"]
    assert "models_spec._check.cells" in GRAPH["models_spec._check.report"]
    assert "models_spec.adapter" in GRAPH["models_spec.bugs._support"]


def test_the_import_graph_has_no_cycle() -> None:
    """No two modules of models_spec import each other, directly or not (imports in
    functions and type-only imports included)."""
    assert cycle(GRAPH) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    """The shared finder (tests/import_graph.py) reports a circle when there is one (so the
    test above, and test_ls_kernel's two cycle tests, can fail)."""
    assert set(cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})) == {"a", "b", "c"}
    assert cycle({"a": {"a"}}) == ["a", "a"]
    assert cycle({"a": {"b"}, "b": set()}) == []


def test_importing_the_core_imports_neither_lockstep_nor_models_spec() -> None:
    """``import modelmanager`` in a fresh interpreter leaves lockstep and models_spec
    out of sys.modules (and so does building a cache)."""
    code = (
        "import sys, modelmanager\n"
        "modelmanager.WithFixedSizeCache(modelmanager.ModelManager({}))\n"
        "print(sorted(m for m in sys.modules"
        " if m.split('.')[0] in ('lockstep', 'models_spec')))\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == "[]"

"""The public API is exactly what docs/api.md documents, namespace by namespace."""

from __future__ import annotations

import ast
import importlib
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
API_DOC = ROOT / "docs" / "api.md"
PUBLIC_CONSUMERS = ("models_spec", "stateful_tests", "examples", "benchmarks")


def documented() -> dict[str, set[str]]:
    """Namespace -> names, from the tables under each "## `namespace`" heading."""
    sections: dict[str, set[str]] = {}
    current: set[str] | None = None
    for line in API_DOC.read_text(encoding="utf-8").splitlines():
        heading = re.fullmatch(r"## `([\w.]+)`", line)
        if heading:
            current = sections.setdefault(heading.group(1), set())
            continue
        row = re.match(r"\| `([\w.]+)` \|", line)
        if row and current is not None:
            current.add(row.group(1))
    return sections


def isort_key(name: str) -> tuple[int, str]:
    kind = 0 if name.isupper() else 1 if name[0].isupper() else 2
    return (kind, name)


def test_the_page_documents_every_public_namespace():
    """The page has a section for each public namespace, each with names."""
    assert set(documented()) == {
        "lockstep",
        "lockstep.threading",
        "lockstep.queue",
        "lockstep.time",
        "lockstep.strategies",
        "lockstep.strategies.hypothesis",
        "lockstep.errors",
        "lockstep.linearizability",
        "lockstep.report",
        "lockstep.suites",
        "lockstep.lowlevel",
        "lockstep.pytest_plugin",
    }
    assert all(documented().values())


@pytest.mark.parametrize("namespace", sorted(documented()))
def test_all_is_exactly_the_documented_set(namespace):
    """__all__ equals the documented names, is sorted, and every name resolves."""
    module = importlib.import_module(namespace)
    exported = list(module.__all__)
    assert set(exported) == documented()[namespace]
    assert exported == sorted(exported, key=isort_key)
    for name in exported:
        assert hasattr(module, name), name


def test_implementation_modules_are_private():
    """Every module of the package that is not a documented namespace starts with _."""
    package = ROOT / "src" / "lockstep"
    public = {name.removeprefix("lockstep.") for name in documented()} - {"lockstep"}
    for path in package.rglob("*.py"):
        relative = path.relative_to(package).with_suffix("")
        parts = [p for p in relative.parts if p != "__init__"]
        dotted = ".".join(parts)
        if not dotted or dotted == "__main__":
            continue
        if dotted in public:
            continue
        assert any(p.startswith("_") for p in parts), f"lockstep.{dotted} should be private"


def _lockstep_imports(path: pathlib.Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] == "lockstep":
                found.append(node.module)
                found.extend(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.extend(a.name for a in node.names if a.name.split(".")[0] == "lockstep")
        elif isinstance(node, ast.Attribute):
            chain = []
            cur: ast.expr = node
            while isinstance(cur, ast.Attribute):
                chain.append(cur.attr)
                cur = cur.value
            if isinstance(cur, ast.Name) and cur.id == "lockstep":
                found.append(".".join(["lockstep", *reversed(chain)]))
    return found


@pytest.mark.parametrize("package", PUBLIC_CONSUMERS)
def test_consumers_use_only_the_public_api(package):
    """models_spec, stateful_tests, examples and benchmarks never reach a private name."""
    offenders = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in sorted((ROOT / package).rglob("*.py"))
        for name in _lockstep_imports(path)
        if any(part.startswith("_") and part != "__version__" for part in name.split("."))
    ]
    assert offenders == []

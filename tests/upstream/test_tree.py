"""ROBOFLOW_INFERENCE_TREE=checkout: the checkout's inference* packages, sibling projects
included, are what the target imports; the report says which files; a tree that cannot
run says why in one line (exit 2)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from models_spec.targets.roboflow_inference import TREE_VARIABLE
from models_spec.targets.roboflow_inference._environment import tree_packages

TARGET = "models_spec.targets.roboflow_inference"
_HEADER = f"from {TARGET} import report_header; print(*report_header(), sep='\\n')"


def _run(tree: Path, cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, **{TREE_VARIABLE: str(tree)})
    return subprocess.run(
        [sys.executable, *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_trees_packages_are_its_inference_packages_and_nested_projects(
    tmp_path: Path,
) -> None:
    """inference/ and inference_sdk/ from the root, inference_models/inference_models/
    from its project directory; never tests/ or anything else."""
    for package in ("inference", "inference_sdk", "tests", "docs_pkg"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("", encoding="utf-8")
    nested = tmp_path / "inference_models" / "inference_models"
    nested.mkdir(parents=True)
    (nested / "__init__.py").write_text("", encoding="utf-8")
    assert tree_packages(tmp_path) == {
        "inference": tmp_path,
        "inference_models": tmp_path / "inference_models",
        "inference_sdk": tmp_path,
    }


def test_a_directory_that_is_not_a_checkout_is_one_line_exit_2(tmp_path: Path) -> None:
    """No inference/core/managers/base.py: one line naming the variable, exit 2."""
    empty = tmp_path / "empty"
    empty.mkdir()
    result = _run(empty, empty, "-m", "lockstep", "check", "--target", TARGET)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"{TREE_VARIABLE}={empty} is not a checkout of roboflow/inference" in lines[0]


def _tree_needing_its_sibling(root: Path) -> tuple[Path, Path]:
    """A copy of the installed inference whose import needs a newer inference_models (a
    marker module only the tree's own copy has), as a fix branch's env.py does."""
    from tests.upstream._upstream import require_upstream

    upstream = require_upstream()
    import inference_models

    tree = root / "checkout"
    shutil.copytree(
        upstream.LOCATION, tree / "inference", ignore=shutil.ignore_patterns("__pycache__")
    )
    init = tree / "inference" / "__init__.py"
    init.write_text(
        "import inference_models._tree_marker  # needs the tree's inference_models\n"
        + init.read_text(encoding="utf-8"),
        encoding="utf-8",
    )
    (tree / "inference" / "core" / "version.py").write_text('__version__ = "9.9.9"\n')
    (tree / "tests").mkdir()
    (tree / "tests" / "__init__.py").write_text("raise ImportError('upstream tests')\n")
    return tree, Path(inference_models.__file__).parent


@pytest.mark.slow
def test_a_tree_without_its_sibling_says_why_and_with_it_runs(tmp_path: Path) -> None:
    """Without inference_models/ in the tree: exit 2, one line with the cause; with it:
    the header lists both packages from the tree, with their versions and paths."""
    tree, installed_models = _tree_needing_its_sibling(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    result = _run(tree, empty, "-m", "lockstep", "check", "--target", TARGET)
    assert result.returncode == 2, result.stdout[-2000:] + result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"inference from {TREE_VARIABLE}={tree} does not import" in lines[0]
    assert "_tree_marker" in lines[0]
    assert "needs its own sibling packages" in lines[0]

    project = tree / "inference_models"
    shutil.copytree(
        installed_models, project / "inference_models", ignore=shutil.ignore_patterns("__pycache__")
    )
    (project / "inference_models" / "_tree_marker.py").write_text("", encoding="utf-8")
    (project / "pyproject.toml").write_text(
        '[project]\nname = "inference-models"\nversion = "0.99"\n'
    )
    result = _run(tree, empty, "-c", _HEADER)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout.splitlines()
    assert out[0].startswith(f"roboflow inference 9.9.9 from the checkout {tree}")
    assert any(line.split() == ["inference", "9.9.9", str(tree / "inference")] for line in out)
    assert any(
        line.split() == ["inference_models", "0.99", str(project / "inference_models")]
        for line in out
    ), out
    assert f"inference.core.managers.base: {tree / 'inference/core/managers/base.py'}" in "\n".join(
        out
    )

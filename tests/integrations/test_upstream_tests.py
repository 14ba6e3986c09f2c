"""Upstream's manager unit tests, unchanged, against the drop-in (docs/roboflow-dropin.md).

Set ``ROBOFLOW_INFERENCE_CHECKOUT`` to a checkout of roboflow/inference (its
``tests/inference/unit_tests/core/managers`` are run; nothing of it is copied
here); without it this test is skipped, saying so. The session runs twice,
stock and drop-in: every test that fails only on the drop-in must touch a
private name of the manager (``._models``), the list the docs give.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

CHECKOUT = os.environ.get("ROBOFLOW_INFERENCE_CHECKOUT")
MANAGER_TESTS = Path("tests/inference/unit_tests/core/managers")
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PRIVATE = re.compile(r"\._models\b")

pytestmark = pytest.mark.skipif(
    not CHECKOUT, reason="ROBOFLOW_INFERENCE_CHECKOUT names no roboflow/inference checkout"
)


def _failures(checkout: Path, *, stock: bool, tmp_path: Path) -> tuple[set[str], str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT), str(HERE)])
    env["ROBOFLOW_DROPIN_STOCK"] = "1" if stock else "0"
    result = subprocess.run(
        [
            sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:anyio",
            "-p", "models_spec.targets.roboflow_dropin.upstream_tests", "-q", "-rf", "-W", "ignore",
            "--continue-on-collection-errors", "--rootdir", str(checkout),
            str(checkout / MANAGER_TESTS),
        ],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    failed = set(re.findall(r"^FAILED \S+::(\S+)", result.stdout, re.MULTILINE))
    return failed, result.stdout


def _sources(checkout: Path) -> dict[str, str]:
    sources: dict[str, str] = {}
    for path in (checkout / MANAGER_TESTS).glob("test_*.py"):
        text = path.read_text()
        for node in ast.parse(text).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                sources[node.name] = ast.get_source_segment(text, node) or ""
    return sources


def test_upstream_manager_tests_pass_unless_they_use_private_names(tmp_path: Path) -> None:
    assert CHECKOUT is not None
    checkout = Path(CHECKOUT).resolve()
    stock, _ = _failures(checkout, stock=True, tmp_path=tmp_path)
    dropin, output = _failures(checkout, stock=False, tmp_path=tmp_path)
    assert re.search(r"\d+ passed", output), output[-2000:]
    sources = _sources(checkout)
    public_failures = sorted(
        name for name in dropin - stock if not PRIVATE.search(sources.get(name.split("[")[0], ""))
    )
    assert public_failures == [], output[-4000:]

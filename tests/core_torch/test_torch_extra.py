"""The torch extra brings what torch needs to start quietly."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_the_torch_extra_brings_numpy() -> None:
    """torch's wheel does not require numpy but warns "Failed to initialize NumPy" at
    import without it (``python3 -m examples.torch_model`` started with that warning)."""
    extras = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
    names = {requirement.split("=")[0].split(">")[0].strip() for requirement in extras["torch"]}
    assert {"torch", "numpy"} <= names


def test_torch_imports_without_a_warning() -> None:
    """Where the extra is installed, importing torch prints nothing."""
    pytest.importorskip("torch")
    proc = subprocess.run(
        [sys.executable, "-W", "always", "-c", "import torch"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""

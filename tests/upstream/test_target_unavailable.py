"""Without `inference`, the target is one line naming the install command (exit 2).

These tests hide the installed package behind a shadow ``inference`` package
that fails to import the way a missing one does, so they run with or
without `inference` installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from models_spec.targets.roboflow_inference import REQUIREMENTS


def _shadow(tmp_path: Path, missing: str) -> dict[str, str]:
    package = tmp_path / "shadow" / "inference"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        f"raise ModuleNotFoundError(\"No module named '{missing}'\", name={missing!r})\n",
        encoding="utf-8",
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(tmp_path / "shadow"), *filter(None, [env.get("PYTHONPATH")])]
    )
    return env


def _check(tmp_path: Path, missing: str) -> subprocess.CompletedProcess[str]:
    empty = tmp_path / "empty"
    empty.mkdir()
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "lockstep",
            "check",
            "--target",
            "models_spec.targets.roboflow_inference",
        ],
        cwd=empty,
        env=_shadow(tmp_path, missing),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("missing", "says"),
    [
        ("inference", "roboflow's `inference` package (1.8.3) is not installed"),
        ("inference_models", "`inference` is installed but imports 'inference_models'"),
    ],
)
def test_missing_package_is_one_line_with_the_install_command(
    tmp_path: Path, missing: str, says: str
) -> None:
    """Exit 2; stderr is one line naming what is missing and the exact pip command."""
    result = _check(tmp_path, missing)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert says in lines[0]
    assert f"python3 -m pip install --no-deps -r {REQUIREMENTS}" in lines[0]
    assert "Traceback" not in result.stdout + result.stderr


def test_requirements_file_pins_every_line_and_never_torch() -> None:
    """The install closure is exact (==) and leaves torch to the project's own pin."""
    lines = [
        line.strip()
        for line in REQUIREMENTS.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert "inference==1.8.3" in lines
    assert all("==" in line for line in lines), [x for x in lines if "==" not in x]
    names = {line.split("==")[0].lower() for line in lines}
    assert not names & {"torch", "torchvision", "opencv-python"}

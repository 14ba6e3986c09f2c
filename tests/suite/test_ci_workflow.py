"""The GitHub Actions example works as copied: its steps, run in a fresh virtualenv.

The workflow's ``run:`` steps are taken from ``examples/ci/github-actions.yml`` and run
with bash, in order, from a project that is one module (``mymgr.py``, no
``pyproject.toml``) outside this repository, in a fresh virtualenv. Two things differ
from a runner, to keep it offline and cheap: ``$LOCKSTEP`` names this repository's own
commit (``git+file://...@<commit>``, the same pinned-git form as the example), and pip
installs with ``--no-index`` into a virtualenv that sees this environment's packages
(the dependencies, and setuptools to build the wheel).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .user_project import MYMGR

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "examples" / "ci" / "github-actions.yml"

pytestmark = pytest.mark.slow


def workflow_steps(text: str) -> list[str]:
    """The shell of each ``run:`` step, in order (``|`` kept line by line, ``>`` folded)."""
    steps: list[str] = []
    lines = text.splitlines()
    for number, line in enumerate(lines):
        found = re.match(r"^(\s*)(?:- )?run: ([|>])\s*$", line)
        if found is None:
            continue
        indent, style = len(found.group(1)), found.group(2)
        body: list[str] = []
        for following in lines[number + 1 :]:
            if following.strip() and len(following) - len(following.lstrip()) <= indent:
                break
            body.append(following.strip())
        body = [b for b in body if b]
        steps.append("\n".join(body) if style == "|" else " ".join(body))
    return steps


def test_the_workflow_has_an_install_step_and_a_check_step() -> None:
    """The parser sees the two shell steps of the example."""
    steps = workflow_steps(WORKFLOW.read_text())
    assert len(steps) == 2
    assert 'pip install "$LOCKSTEP"' in steps[0]
    assert steps[1].startswith("lockstep check --target mymgr:MyAdapter --shard")


def _git(*argv: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), *argv], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_the_workflow_steps_check_a_one_module_project(tmp_path: Path) -> None:
    """Install lockstep pinned to a commit, skip the install of a project that is one
    module, run shard 1/2 of the check: exit 0, the JUnit and JSON files written."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs this repository's git checkout")
    commit = _git("rev-parse", "HEAD")
    if _git("status", "--porcelain", "--untracked-files=no"):
        pytest.skip("the checkout has uncommitted changes: the installed commit would differ")
    project = tmp_path / "project"
    project.mkdir()
    (project / "mymgr.py").write_text(MYMGR + "\n\nMyAdapter = Adapter\n")
    venv = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
        check=True,
    )
    # `python3` on the PATH is the virtualenv's; its `-m pip` is this environment's pip
    # installing into it (the virtualenv was made without one, to stay offline).
    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "python3").write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = -m ] && [ "$2" = pip ]; then shift 2; '
        f'exec {sys.executable} -m pip --python {venv}/bin/python "$@"; fi\n'
        f'exec {venv}/bin/python "$@"\n'
    )
    (shims / "python3").chmod(0o755)
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTEST_XDIST_WORKER")
    }
    env.update(
        PATH=f"{shims}{os.pathsep}{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        LOCKSTEP=f"git+file://{ROOT}@{commit}",
        PIP_NO_INDEX="1",
        PIP_NO_BUILD_ISOLATION="0",  # build with this environment's setuptools
    )
    steps = workflow_steps(WORKFLOW.read_text())
    for step in steps:
        script = step.replace("${{ matrix.shard }}", "1/2")
        proc = subprocess.run(
            ["bash", "-e", "-c", script],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        assert proc.returncode == 0, (script, proc.stdout[-3000:], proc.stderr[-3000:])
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import lockstep; print(lockstep.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    assert str(venv) in installed  # the pinned install, not this checkout
    assert (project / "lockstep-junit.xml").is_file()
    assert (project / "lockstep.json").is_file()

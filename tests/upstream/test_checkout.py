"""A source checkout first on sys.path is what the target checks (how a fix branch is tried).

The test builds a "checkout": a copy of the installed `inference` package
with one fix applied (``_dispose_model_lock`` keeps the entry, so a lock
generation is never replaced) and another version string, puts it first on
``PYTHONPATH`` and replays the recorded schedules in a fresh process.  The
split-generation failures (B1, B2) must report "upstream changed ... may be
fixed in version 1.8.3+checkout", while the cache's duplicate LRU entry (B7),
which the fix does not touch, still reproduces.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.upstream._upstream import require_upstream

upstream = require_upstream()

FIXED = "inference-manager__B{n}-{slug}__I2.json"
_SCRIPT = """
import sys
from models_spec.targets.roboflow_inference import upstream
from models_spec.upstream_schedules import changed_message, load_manifest, reproduce
print("LOCATION", upstream.LOCATION)
for entry in load_manifest():
    if entry.file in sys.argv[1:]:
        result = reproduce(entry)
        verdict = "REPRODUCED" if result.reproduced else changed_message(result, upstream.VERSION)
        print(entry.file, verdict)
"""


def _checkout(root: Path) -> Path:
    source = Path(upstream.LOCATION)
    target = root / "inference"
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
    base = target / "core" / "managers" / "base.py"
    text = base.read_text(encoding="utf-8")
    line = "            del self._models_state_locks[model_id]\n"
    assert text.count(line) == 1, "inference's _dispose_model_lock changed: update this test"
    base.write_text(text.replace(line, "            pass  # the fix: keep the generation\n"))
    (target / "core" / "version.py").write_text('__version__ = "1.8.3+checkout"\n')
    return root


@pytest.mark.slow
def test_a_checkout_first_on_the_path_is_checked_and_fixes_are_reported(tmp_path: Path) -> None:
    """PYTHONPATH=checkout: its code runs, B1/B2 'may be fixed', B7 still reproduces."""
    root = _checkout(tmp_path / "checkout")
    wanted = [
        FIXED.format(n=1, slug="remove-add-generation-split"),
        FIXED.format(n=2, slug="constructor-failure-split"),
        "inference-stack__B7-duplicate-lru-entries__I4.json",
    ]
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    result = subprocess.run(
        [sys.executable, "-c", _SCRIPT, *wanted],
        cwd=empty,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert f"LOCATION {root / 'inference'}" in out
    assert f"checking inference 1.8.3+checkout from {root / 'inference'}" in result.stderr
    for bug, name in (("B1", wanted[0]), ("B2", wanted[1])):
        assert f"{name} upstream changed: {bug} may be fixed in version 1.8.3+checkout" in out, out
    assert f"{wanted[2]} REPRODUCED" in out, out

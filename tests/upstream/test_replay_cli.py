"""`lockstep replay DIRECTORY` replays every checked-in schedule from an empty directory,
in one process (inference is imported once), and says each one reproduced."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from models_spec.upstream_schedules import DIRECTORY, load_manifest
from tests.upstream._upstream import require_upstream

upstream = require_upstream()


def test_every_schedule_replays_from_another_directory(tmp_path: Path) -> None:
    """One `lockstep replay DIR` in an empty directory: every file reproduces its recorded
    invariant (exit 1); the manifest beside them is not replayed."""
    entries = load_manifest()
    result = subprocess.run(
        [sys.executable, "-m", "lockstep", "replay", str(DIRECTORY)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if upstream.VERSION not in {e.inference_version for e in entries}:
        return  # another version (a checkout): tests/upstream/test_replays.py says what changed
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    for entry in entries:
        assert f"reproduced         {entry.file}: invariant {entry.invariant}" in lines, entry.file
    assert f"{len(entries)} schedule(s): reproduced {len(entries)} (exit 1); exit 1" in lines

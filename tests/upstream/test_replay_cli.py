"""`lockstep replay FILE` reproduces every checked-in schedule from an empty directory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from models_spec.upstream_schedules import load_manifest
from tests.upstream._upstream import require_upstream

require_upstream()

_SCRIPT = """
import sys
from lockstep._cli import main
codes = [main(["replay", path]) for path in sys.argv[1:]]
print("EXIT CODES", codes)
"""


def test_every_schedule_replays_from_another_directory(tmp_path: Path) -> None:
    """One process in an empty directory replays each file: each exits 1, with its message."""
    entries = load_manifest()
    result = subprocess.run(
        [sys.executable, "-c", _SCRIPT, *(str(e.path()) for e in entries)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"EXIT CODES {[1] * len(entries)}" in result.stdout, result.stdout[-3000:]
    for entry in entries:
        assert entry.message[:60] in result.stdout, entry.file
    assert "Replay it with:" in result.stdout

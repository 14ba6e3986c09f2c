"""The checked-in failures of the real code still reproduce (replays that watch upstream).

Each schedule in ``models_spec/upstream_schedules/`` was recorded against the
`inference` version its manifest names.  Replaying it exactly must break the
same invariant again; when it does not (it passes, diverges because
upstream's lock operations changed, or fails differently), the test fails
with "upstream changed: B<n> may be fixed in version X: re-record and
update the table".
"""

from __future__ import annotations

import json

import pytest

from models_spec.upstream_schedules import (
    DIRECTORY,
    MANIFEST,
    UpstreamSchedule,
    changed_message,
    load_manifest,
    reproduce,
)

ENTRIES = load_manifest()


def test_manifest_and_files_agree() -> None:
    """Every schedule file is in the manifest, every entry has its file, every entry a bug."""
    files = {p.name for p in DIRECTORY.glob("*.json")} - {MANIFEST}
    assert files == {e.file for e in ENTRIES}
    assert ENTRIES, "no upstream schedules recorded"
    for entry in ENTRIES:
        data = json.loads(entry.path().read_text(encoding="utf-8"))
        assert data["patch"][0] == "models_spec.targets.roboflow_inference.upstream"
        assert data["scenario_id"].endswith(
            f"{entry.scenario}@target={entry.target.replace('.', '/')}"
        )
        assert entry.bug != "UNCLASSIFIED", entry.file


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.file.removesuffix(".json") for e in ENTRIES])
def test_recorded_failure_still_reproduces(entry: UpstreamSchedule) -> None:
    """Exact replay on the installed inference breaks the recorded invariant again."""
    from tests.upstream._upstream import require_upstream

    upstream = require_upstream()
    reproduction = reproduce(entry)
    if not reproduction.reproduced:
        pytest.fail(changed_message(reproduction, upstream.VERSION))
    assert reproduction.detail.startswith(f"{entry.invariant} violated")

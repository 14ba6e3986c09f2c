"""The recorded schedule corpus: one shrunk failing schedule per bug B1-B17.

Files live in ``stateful_tests/schedules/``: ``B01-<scenario>.json`` (a
`lockstep.Schedule`) per bug, and ``MANIFEST.json`` saying, per file, the
bug, the scenario, the variant it breaks and *how* it breaks it (failure
kind and invariant id or exception type), because a schedule file holds
only the choices, their provenance and the modules to patch (the variant
adapter's `patch_modules()`, by name, so ``lockstep replay FILE`` works with
no flags), not the expected failure.

Replaying a corpus schedule:

* on its variant, exactly (`check.replay_scenario`): it must fail the
  recorded way;
* on the core, leniently (`check.follow_scenario`): the core's choice
  points differ (no retiring table, no unlocked checks), so the recorded
  choices are followed while the core offers them and the rest runs
  non-preemptively; the run must not fail.  A strict replay on the core
  would report a divergence, which says nothing about the core.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs

import lockstep

__all__ = [
    "CORPUS_DIR",
    "MANIFEST",
    "CorpusEntry",
    "corpus_file_name",
    "load_corpus",
    "write_manifest",
]

CORPUS_DIR = Path(__file__).resolve().parent.parent / "stateful_tests" / "schedules"
"""Where the corpus lives in a source checkout."""

MANIFEST = "MANIFEST.json"


def corpus_file_name(bug: str, scenario_id: str) -> str:
    """``B01-remove-add-generation-split.json`` for bug "B1" of that scenario."""
    number = int(bug.removeprefix("B"))
    slug = scenario_id.split("-", 1)[1] if "-" in scenario_id else scenario_id
    return f"B{number:02d}-{slug}.json"


@attrs.frozen
class CorpusEntry:
    """One corpus file and the failure it must reproduce on its variant."""

    file: str
    bug: str
    scenario: str
    variant: str
    kind: str
    label: str
    strategy: str

    def path(self, directory: Path = CORPUS_DIR) -> Path:
        """The schedule file's path."""
        return directory / self.file

    def schedule(self, directory: Path = CORPUS_DIR) -> lockstep.Schedule:
        """The recorded schedule (raises lockstep.errors.ScheduleFormatError if corrupt)."""
        return lockstep.Schedule.load(self.path(directory))


def load_corpus(directory: Path = CORPUS_DIR) -> dict[str, CorpusEntry]:
    """The manifest's entries by bug id ({} when there is no manifest)."""
    manifest = directory / MANIFEST
    if not manifest.exists():
        return {}
    data: dict[str, dict[str, Any]] = json.loads(manifest.read_text(encoding="utf-8"))
    return {bug: CorpusEntry(bug=bug, **fields) for bug, fields in data.items()}


def write_manifest(entries: dict[str, CorpusEntry], directory: Path = CORPUS_DIR) -> Path:
    """Write ``MANIFEST.json`` (sorted by bug number)."""
    ordered = sorted(entries.values(), key=lambda e: int(e.bug.removeprefix("B")))
    data = {e.bug: {k: v for k, v in attrs.asdict(e).items() if k != "bug"} for e in ordered}
    path = directory / MANIFEST
    directory.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path

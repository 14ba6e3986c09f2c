"""The recorded schedule corpus: one shrunk failing schedule per known-bug variant.

Files live in ``models_spec/schedules/`` (package data, so an installed
``lockstep check`` has them; in a source checkout ``stateful_tests/schedules``
is a symbolic link there): ``B07-duplicate-lru.json`` (a `lockstep.Schedule`)
per variant (the name is the catalogue's `VariantEntry.corpus_file`), and
``MANIFEST.json`` saying, per variant, the file, the bug, the scenario and
*how* the schedule breaks the variant (failure kind and invariant id or
exception type), because a schedule file holds only the choices, their
provenance and the modules to patch (the variant adapter's
`patch_modules()`, by name, so ``lockstep replay FILE`` works with no
flags), not the expected failure.  The recorder
(``python3 -m models_spec.record_corpus``) writes both.

Replaying a corpus schedule:

* on its variant, exactly (`check.replay_scenario`): it must fail the
  recorded way, through one of the invariants its bug module says it breaks;
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
    "load_corpus",
    "missing_manifest",
    "write_manifest",
]

CORPUS_DIR = Path(__file__).resolve().parents[1] / "schedules"
"""Where the corpus lives: the ``models_spec.schedules`` package data, installed or not.

Every ``directory`` argument below defaults to it, read when called (None), so that
the whole module follows a test that points it elsewhere."""

MANIFEST = "MANIFEST.json"


@attrs.frozen
class CorpusEntry:
    """One corpus file and the failure it must reproduce on its variant."""

    variant: str
    file: str
    bug: str
    scenario: str
    kind: str
    label: str
    strategy: str

    def path(self, directory: Path | None = None) -> Path:
        """The schedule file's path."""
        return _directory(directory) / self.file

    def schedule(self, directory: Path | None = None) -> lockstep.Schedule:
        """The recorded schedule (raises lockstep.errors.ScheduleFormatError if corrupt)."""
        return lockstep.Schedule.load(self.path(directory))


def _directory(directory: Path | None) -> Path:
    return CORPUS_DIR if directory is None else directory


def _order(entry: CorpusEntry) -> tuple[int, str]:
    return int(entry.bug.removeprefix("B")), entry.variant


def load_corpus(directory: Path | None = None) -> dict[str, CorpusEntry]:
    """The manifest's entries by variant name, in bug order ({} without a manifest)."""
    manifest = _directory(directory) / MANIFEST
    if not manifest.exists():
        return {}
    data: dict[str, dict[str, Any]] = json.loads(manifest.read_text(encoding="utf-8"))
    entries = [CorpusEntry(variant=name, **fields) for name, fields in data.items()]
    return {entry.variant: entry for entry in sorted(entries, key=_order)}


def missing_manifest(directory: Path | None = None) -> Path | None:
    """The manifest's path when it does not exist, else None.

    Then `load_corpus` is {} and ``lockstep check`` plans neither the variants'
    "replay" nor the core's "follow" mode (`models_spec._check.suite.corpus_warning` says so).
    """
    manifest = _directory(directory) / MANIFEST
    return None if manifest.exists() else manifest


def write_manifest(entries: dict[str, CorpusEntry], directory: Path | None = None) -> Path:
    """Write ``MANIFEST.json`` (sorted by bug number, then variant name)."""
    data = {
        e.variant: {k: v for k, v in attrs.asdict(e).items() if k != "variant"}
        for e in sorted(entries.values(), key=_order)
    }
    directory = _directory(directory)
    path = directory / MANIFEST
    directory.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path

"""The recorded schedule corpus: every file breaks its variant exactly as recorded.

Each ``models_spec/schedules/B<nn>-*.json`` is a shrunk schedule that breaks
one known-bug variant of the catalogue (``MANIFEST.json`` says how).  Replayed
exactly on that variant it must fail the same way (failure kind and
invariant id or exception type), through an invariant its bug module says
it breaks.  On the core the choice points differ, so
a strict replay would only report a divergence; instead the schedule is
followed leniently (recorded choices while the core offers them, then a
deterministic non-preemptive fallback) and the run must pass.

Each file records the modules its variant patches, so the documented command
``lockstep replay FILE`` (and ``lockstep show FILE``) works with no flags, in
a fresh process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from models_spec._check.check import follow_scenario, replay_scenario
from models_spec._harness.catalogue import load
from models_spec._harness.corpus import CORPUS_DIR, load_corpus
from models_spec._harness.scenario_index import get_scenario
from models_spec.adapter import CoreAdapter

CATALOGUE = load()
CORPUS = load_corpus()


def test_corpus_covers_every_variant_of_the_catalogue() -> None:
    """One schedule per catalogue variant, named as the catalogue derives it, each listed
    in the manifest with its bug and scenario; no stray files."""
    assert sorted(CORPUS) == sorted(CATALOGUE.variants), (
        "record the missing ones: python3 -m models_spec.record_corpus --variant NAME"
    )
    for name, entry in CORPUS.items():
        variant = CATALOGUE.variant(name)
        assert (entry.file, entry.bug, entry.scenario) == (
            variant.corpus_file,
            variant.bug.id,
            variant.scenario.id,
        )
    files = {p.name for p in CORPUS_DIR.glob("B*.json")}
    assert files == {entry.file for entry in CORPUS.values()}


@pytest.mark.parametrize("name", list(CORPUS))
def test_schedule_breaks_its_variant_the_recorded_way(name: str) -> None:
    """Exact replay on the variant reproduces the recorded failure kind and invariant,
    one of those its bug module declares."""
    entry = CORPUS[name]
    variant = CATALOGUE.variant(name)
    assert entry.label in variant.breaks
    outcome = replay_scenario(variant.scenario, variant.adapter(), entry.schedule())
    assert outcome.kind != "divergence", (
        f"{entry.file} is stale: the core's switch points changed under the variant; "
        f"re-record with `python3 -m models_spec.record_corpus --variant {name}`\n"
        f"{outcome.failure}"
    )
    assert (outcome.kind, outcome.label) == (entry.kind, entry.label), str(outcome.failure)


# Known core bugs a followed schedule reaches, each until its fix lands (strict: the
# fix turns the xfail into a failure, so the mark goes with it).
_KNOWN_CORE_BUGS: dict[str, str] = {}


def _followed(name: str) -> object:
    reason = _KNOWN_CORE_BUGS.get(name)
    if reason is None:
        return name
    return pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=reason))


@pytest.mark.parametrize("name", [_followed(name) for name in CORPUS])
def test_schedule_followed_on_the_core_passes(name: str) -> None:
    """Followed leniently on the core (depth 0), the same schedule finds nothing."""
    entry = CORPUS[name]
    outcome = follow_scenario(get_scenario(entry.scenario), CoreAdapter(0), entry.schedule())
    assert outcome.failure is None, str(outcome.failure)
    assert outcome.executions == 1


def _lockstep_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``lockstep ARGS`` in a fresh interpreter, from the repository root."""
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "src"), str(root)])}
    return subprocess.run(
        [sys.executable, "-m", "lockstep", *args],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("name", list(CORPUS))
def test_schedule_records_its_variants_patch_modules(name: str) -> None:
    """The file names, in order, the modules the variant's adapter patches."""
    entry = CORPUS[name]
    expected = tuple(m.__name__ for m in CATALOGUE.variant(name).adapter().patch_modules())
    assert entry.schedule().patch == expected
    assert entry.schedule().line_modules == ()


@pytest.mark.parametrize("name", list(CORPUS))
def test_lockstep_replay_file_reproduces_without_flags(name: str) -> None:
    """`lockstep replay FILE` exits 1 naming the recorded invariant and ends with
    its own command; `lockstep show FILE` reports the same outcome, no divergence."""
    entry = CORPUS[name]
    relative = str(entry.path().relative_to(CORPUS_DIR.parent.parent))
    replayed = _lockstep_cli("replay", relative)
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    # What the scenario does comes first, then the failure.
    assert replayed.stdout.startswith("Scenario "), replayed.stdout[:300]
    first = next(
        line for line in replayed.stdout.splitlines() if line.startswith("lockstep found a")
    )
    assert first.startswith(f"lockstep found a failure ({entry.kind}): "), first
    assert entry.label in first
    assert "divergence" not in replayed.stdout
    # the command it prints names the file by its absolute path: it works from anywhere
    assert replayed.stdout.rstrip().endswith(f"lockstep replay {entry.path()}")

    shown = _lockstep_cli("show", relative)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert f"outcome: {entry.kind}: " in shown.stdout
    assert entry.label in shown.stdout.split("outcome:", 1)[1]
    assert "divergence" not in shown.stdout

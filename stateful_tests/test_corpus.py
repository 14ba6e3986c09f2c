"""The recorded schedule corpus: every file breaks its variant exactly as recorded.

Each ``stateful_tests/schedules/B<nn>-*.json`` is a shrunk schedule that breaks
the known-bug variant of its bug (``MANIFEST.json`` says how).  Replayed
exactly on that variant it must fail the same way (failure kind and
invariant id or exception type).  On the core the choice points differ, so
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

from models_spec.adapter import CoreAdapter
from models_spec.check import follow_scenario, replay_scenario
from models_spec.corpus import CORPUS_DIR, load_corpus
from models_spec.scenarios import get_scenario
from models_spec.variants import VARIANTS

CORPUS = load_corpus()


def test_corpus_covers_every_bug() -> None:
    """One schedule per bug B1-B17, and every file is in the manifest."""
    assert sorted(CORPUS, key=lambda b: int(b[1:])) == list(VARIANTS)
    files = {p.name for p in CORPUS_DIR.glob("B*.json")}
    assert files == {entry.file for entry in CORPUS.values()}


@pytest.mark.parametrize("bug", list(CORPUS))
def test_schedule_breaks_its_variant_the_recorded_way(bug: str) -> None:
    """Exact replay on the variant reproduces the recorded failure kind and invariant."""
    entry = CORPUS[bug]
    variant = VARIANTS[bug]()
    assert variant.name == entry.variant
    outcome = replay_scenario(get_scenario(entry.scenario), variant, entry.schedule())
    assert outcome.kind != "divergence", (
        f"{entry.file} is stale: the core's switch points changed under the variant; "
        f"re-record with `python3 -m models_spec.record_corpus --bug {bug}`\n{outcome.failure}"
    )
    assert (outcome.kind, outcome.label) == (entry.kind, entry.label), str(outcome.failure)


@pytest.mark.parametrize("bug", list(CORPUS))
def test_schedule_followed_on_the_core_passes(bug: str) -> None:
    """Followed leniently on the core (depth 0), the same schedule finds nothing."""
    entry = CORPUS[bug]
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


@pytest.mark.parametrize("bug", list(CORPUS))
def test_schedule_records_its_variants_patch_modules(bug: str) -> None:
    """The file names, in order, the modules the variant's adapter patches."""
    entry = CORPUS[bug]
    expected = tuple(m.__name__ for m in VARIANTS[bug]().patch_modules())
    assert entry.schedule().patch == expected
    assert entry.schedule().line_modules == ()


@pytest.mark.parametrize("bug", list(CORPUS))
def test_lockstep_replay_file_reproduces_without_flags(bug: str) -> None:
    """`lockstep replay FILE` exits 1 naming the recorded invariant and ends with
    its own command; `lockstep show FILE` reports the same outcome, no divergence."""
    entry = CORPUS[bug]
    relative = str(entry.path().relative_to(CORPUS_DIR.parent.parent))
    replayed = _lockstep_cli("replay", relative)
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    first = replayed.stdout.splitlines()[0]
    assert first.startswith(f"lockstep found a failure ({entry.kind}): "), first
    assert entry.label in first
    assert "divergence" not in replayed.stdout
    assert replayed.stdout.rstrip().endswith(f"lockstep replay {relative}")

    shown = _lockstep_cli("show", relative)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert f"outcome: {entry.kind}: " in shown.stdout
    assert entry.label in shown.stdout.split("outcome:", 1)[1]
    assert "divergence" not in shown.stdout

"""Record the schedule corpus: ``python3 -m models_spec.record_corpus [--bug B4 ...]``.

For each bug, explore its variant with its named scenario (PCT, then
random, then DPOR, several seeds) until a failure is found; the failure is
shrunk by lockstep, replayed to confirm it reproduces exactly, and saved as
``stateful_tests/schedules/B<nn>-<scenario>.json`` with a manifest entry
(see `models_spec.corpus`).  The file records the variant adapter's patch
modules (lockstep's explore records them), so ``lockstep replay FILE``
reproduces it with no flags; `record` checks that it does.  Existing files of the recorded bugs are
replaced.  Exit status 1 when some bug could not be recorded.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from models_spec.check import explore_scenario, replay_scenario
from models_spec.corpus import (
    CORPUS_DIR,
    CorpusEntry,
    corpus_file_name,
    load_corpus,
    write_manifest,
)
from models_spec.scenarios import NAMED, Scenario
from models_spec.variants import VARIANTS

__all__ = ["main", "named_scenario_for", "record"]

_ATTEMPTS = (("pct", 0), ("random", 0), ("pct", 1), ("random", 1), ("dpor", 0))


def named_scenario_for(bug: str) -> Scenario:
    """The named scenario targeting `bug` (raises KeyError naming the bug)."""
    for scenario in NAMED.values():
        if bug in scenario.bugs:
            return scenario
    raise KeyError(f"no named scenario targets {bug!r}")


def record(bug: str, *, budget: int = 2000) -> CorpusEntry | None:
    """Find, shrink, verify and save the schedule for `bug`; None when none was found."""
    variant = VARIANTS[bug]()
    scenario = named_scenario_for(bug)
    for strategy, seed in _ATTEMPTS:
        outcome = explore_scenario(scenario, variant, strategy=strategy, budget=budget, seed=seed)
        failure = outcome.failure
        if failure is None:
            continue
        check = replay_scenario(scenario, variant, failure.schedule)
        if check.kind != outcome.kind or check.label != outcome.label:
            print(
                f"{bug}: {strategy} seed {seed} found {outcome.label} but replay gave "
                f"{check.label or 'no failure'}; trying the next strategy",
                file=sys.stderr,
            )
            continue
        expected_patch = tuple(m.__name__ for m in variant.patch_modules())
        if failure.schedule.patch != expected_patch:  # `lockstep replay FILE` would diverge
            raise RuntimeError(
                f"{bug}: the schedule records patch {failure.schedule.patch}, "
                f"expected the adapter's {expected_patch}"
            )
        name = corpus_file_name(bug, scenario.id)
        path = CORPUS_DIR / name
        if path.exists():
            path.unlink()
        failure.schedule.save(path)
        return CorpusEntry(
            file=name,
            bug=bug,
            scenario=scenario.id,
            variant=variant.name,
            kind=outcome.kind,
            label=outcome.label,
            strategy=f"{strategy} seed {seed}",
        )
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Record the corpus for the given bugs (default: all)."""
    parser = argparse.ArgumentParser(prog="python3 -m models_spec.record_corpus")
    parser.add_argument("--bug", action="append", choices=list(VARIANTS), help="repeatable")
    parser.add_argument("--budget", type=int, default=2000)
    args = parser.parse_args(argv)
    entries = load_corpus()
    missing: list[str] = []
    for bug in args.bug or list(VARIANTS):
        entry = record(bug, budget=args.budget)
        if entry is None:
            missing.append(bug)
            print(f"{bug}: no failing schedule found", file=sys.stderr)
            continue
        entries[bug] = entry
        print(f"{bug}: {entry.file} -> {entry.kind} {entry.label} ({entry.strategy})")
    write_manifest(entries)
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Record the schedule corpus: ``python3 -m models_spec.record_corpus [--bug B4 ...]``.

For each known-bug variant of the catalogue (`models_spec._harness.catalogue`; all
of them, or those of the bugs given with ``--bug``, or the variants given
with ``--variant``), explore the variant with its bug's scenario (PCT, then
random, then DPOR, several seeds) until a failure through one of the
invariants the bug module says it breaks is found; the failure is shrunk by
lockstep, replayed to confirm it reproduces exactly, and saved as
``models_spec/schedules/<VariantEntry.corpus_file>`` with a manifest
entry (see `models_spec._harness.corpus`).  The file records the variant adapter's
patch modules (lockstep's explore records them), so ``lockstep replay FILE``
reproduces it with no flags; `record` checks that it does.  Existing files of
the recorded variants are replaced, manifest entries of variants no longer
in the catalogue are dropped, and the documentation page (``docs/bugs.md``)
is rewritten from the catalogue.  Exit status 1 when some variant could not
be recorded.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from models_spec._check.check import explore_scenario, replay_scenario
from models_spec._harness.catalogue import DOCS_PAGE, VariantEntry, load
from models_spec._harness.corpus import CORPUS_DIR, CorpusEntry, load_corpus, write_manifest

__all__ = ["main", "record"]

_ATTEMPTS = (("pct", 0), ("random", 0), ("pct", 1), ("random", 1), ("dpor", 0))


def record(entry: VariantEntry, *, budget: int = 2000) -> CorpusEntry | None:
    """Find, shrink, verify and save the schedule for `entry`; None when none was found."""
    variant = entry.adapter()
    scenario = entry.scenario
    for strategy, seed in _ATTEMPTS:
        outcome = explore_scenario(scenario, variant, strategy=strategy, budget=budget, seed=seed)
        failure = outcome.failure
        if failure is None:
            continue
        if outcome.label not in entry.breaks:
            print(
                f"{entry.name}: {strategy} seed {seed} found {outcome.label}, not one of "
                f"{list(entry.breaks)} its bug module declares; trying the next strategy",
                file=sys.stderr,
            )
            continue
        check = replay_scenario(scenario, variant, failure.schedule)
        if check.kind != outcome.kind or check.label != outcome.label:
            print(
                f"{entry.name}: {strategy} seed {seed} found {outcome.label} but replay gave "
                f"{check.label or 'no failure'}; trying the next strategy",
                file=sys.stderr,
            )
            continue
        expected_patch = tuple(m.__name__ for m in variant.patch_modules())
        if failure.schedule.patch != expected_patch:  # `lockstep replay FILE` would diverge
            raise RuntimeError(
                f"{entry.name}: the schedule records patch {failure.schedule.patch}, "
                f"expected the adapter's {expected_patch}"
            )
        path = CORPUS_DIR / entry.corpus_file
        if path.exists():
            path.unlink()
        failure.schedule.save(path)
        return CorpusEntry(
            variant=entry.name,
            file=entry.corpus_file,
            bug=entry.bug.id,
            scenario=scenario.id,
            kind=outcome.kind,
            label=outcome.label,
            strategy=f"{strategy} seed {seed}",
        )
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Record the corpus for the given bugs or variants (default: every variant)."""
    catalogue = load()
    parser = argparse.ArgumentParser(prog="python3 -m models_spec.record_corpus")
    parser.add_argument("--bug", action="append", choices=list(catalogue.ids), help="repeatable")
    parser.add_argument(
        "--variant", action="append", choices=list(catalogue.variants), help="repeatable"
    )
    parser.add_argument("--budget", type=int, default=2000)
    args = parser.parse_args(argv)
    chosen = [
        entry
        for entry in catalogue.variant_entries
        if (not args.bug and not args.variant)
        or entry.bug.id in (args.bug or ())
        or entry.name in (args.variant or ())
    ]
    entries = {name: entry for name, entry in load_corpus().items() if name in catalogue.variants}
    missing: list[str] = []
    for variant in chosen:
        recorded = record(variant, budget=args.budget)
        if recorded is None:
            missing.append(variant.name)
            print(f"{variant.name}: no failing schedule found", file=sys.stderr)
            continue
        entries[variant.name] = recorded
        print(
            f"{variant.name}: {recorded.file} -> {recorded.kind} {recorded.label} "
            f"({recorded.strategy})"
        )
    write_manifest(entries)
    DOCS_PAGE.write_text(catalogue.markdown(), encoding="utf-8")
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""What ``lockstep replay`` replays when given several sources, and how it sums them up.

`expand_sources` turns the command line's sources into schedules to replay: a file
or an ``ls1:`` string stands for itself; a directory for the ``*.json`` files in it
(sorted by name) that are schedules: a JSON object with ``choices`` and
``format_version`` (a directory of schedules may hold a manifest or notes beside
them, which are not replayed).  `outcome_table` is the report of several replays:
one line per schedule (outcome and file), then the totals.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from lockstep._outcome import REPLAY_EXIT_CODES, REPLAY_OUTCOMES, ReplayOutcome, combined_exit_code

__all__ = ["expand_sources", "outcome_table"]


def _is_schedule_file(path: Path) -> bool:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return True  # let the loader say what is wrong with it
    return isinstance(data, dict) and "choices" in data and "format_version" in data


def expand_sources(sources: Sequence[str]) -> list[str]:
    """Every source, a directory replaced by its schedule files (see the module docstring)."""
    expanded: list[str] = []
    for source in sources:
        if not source.startswith("ls1:") and os.path.isdir(source):
            expanded.extend(
                str(path)
                for path in sorted(Path(source).glob("*.json"))
                if path.is_file() and _is_schedule_file(path)
            )
        else:
            expanded.append(source)
    return expanded


def outcome_table(outcomes: Sequence[tuple[str, ReplayOutcome]]) -> list[str]:
    """One line per replay ("diverged  file.json: at step 7 (recorded invariant I4)"),
    then the totals and what a divergence means."""
    width = max(len(name) for name in REPLAY_OUTCOMES)
    lines = []
    for source, outcome in outcomes:
        shown = source[:40] + "..." if source.startswith("ls1:") else os.path.basename(source)
        lines.append(f"{outcome.name.ljust(width)}  {shown}: {outcome.brief}")
    counts = Counter(outcome.name for _, outcome in outcomes)
    totals = ", ".join(
        f"{name} {counts[name]} (exit {REPLAY_EXIT_CODES[name]})"
        for name in REPLAY_OUTCOMES
        if counts[name]
    )
    code = combined_exit_code(outcome for _, outcome in outcomes)
    lines.append(f"{len(outcomes)} schedule(s): {totals}; exit {code}")
    if counts["diverged"]:
        lines.append(
            "diverged: the code no longer takes a recorded step: the code changed there, "
            "the bug may be fixed; re-record"
        )
    if counts["diverged"] or counts["different failure"]:
        lines.append("(replay one file for its swimlanes: lockstep replay FILE)")
    return lines

"""How a failure's message is shortened for the terminal report."""

from __future__ import annotations

from pathlib import Path

from models_spec._check.report import RunSummary, _abbreviate_lines
from models_spec._check.suite import Cell, ModeResult


def test_a_long_multi_line_message_loses_whole_middle_lines() -> None:
    """The head and the tail stay whole lines; the note says how many were left out."""
    lines = [f"line {i:03d} " + "x" * 40 for i in range(100)]
    shown = _abbreviate_lines("\n".join(lines), 600)
    kept = shown.splitlines()
    assert kept[0] == lines[0]
    assert kept[-1] == lines[-1]
    notes = [line for line in kept if "left out" in line]
    assert len(notes) == 1
    left_out = int(notes[0].split()[1])
    assert left_out == 100 - (len(kept) - 1)
    assert all(line in lines for line in kept if line not in notes)
    assert len(shown) <= 600 + len(notes[0]) + 1


def test_a_short_or_one_line_message_is_unchanged_or_abbreviated() -> None:
    assert _abbreviate_lines("a\nb\nc", 600) == "a\nb\nc"
    one = _abbreviate_lines("y" * 5000, 600)
    assert "characters" in one
    assert len(one) < 700


def _cell(verdict: str, number: int, directory: str) -> Cell:
    artifacts = (f"{directory}/cell-{number}.json", f"{directory}/cell-{number}.html")
    mode = ModeResult("pct", "search", "pct", 3, 0.1, artifacts=artifacts)
    return Cell(f"S{number}", "impl", "variant", verdict, "I4", 3, 0.1, ("pct",), (mode,))


def _closing(*cells: Cell) -> list[str]:
    summary = RunSummary(cells, len(cells), len(cells), None, 1.0, 2, Path("/r"), False)
    return summary.closing_lines()[1:]


def test_a_green_run_says_its_saved_schedules_are_the_caught_variants() -> None:
    """No "failing schedules" on a run that passed: what is saved is named, and the
    directory is a line of its own (every line fits 100 columns up to the path)."""
    directory = "/r/run-20261206T000000Z-1"
    assert _closing(_cell("CAUGHT", 1, directory), _cell("CAUGHT", 2, directory)) == [
        "2 known-bug variant(s) caught, as expected: their schedules and HTML timelines (2) "
        "are in:",
        f"  {directory}",
    ]
    assert _closing(_cell("FAIL", 1, directory), _cell("CAUGHT", 2, directory)) == [
        "1 cell(s) to look at; 1 known-bug variant(s) caught as expected",
        "their failing schedules and HTML timelines (2) are in:",
        f"  {directory}",
    ]

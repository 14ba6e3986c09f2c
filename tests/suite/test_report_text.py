"""How a failure's message is shortened for the terminal report."""

from __future__ import annotations

from models_spec.report import _abbreviate_lines


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

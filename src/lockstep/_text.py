"""Text helpers for messages people read: abbreviate long values, wrap long lines.

A message must stay one screen even when a value in it is huge (a 100 KB model id, a
schedule string pasted as a file name): :func:`abbreviate` keeps the head and the tail
and says how much was left out. :func:`wrap_lines` wraps text to a width without
touching lines that already fit (indented continuation lines keep their indent).
"""

from __future__ import annotations

import textwrap
from typing import Final

__all__ = [
    "DEFAULT_LIMIT",
    "TEXT_WIDTH",
    "abbreviate",
    "abbreviate_repr",
    "wrap_lines",
    "wrap_tokens",
]

#: Characters of one value shown in a message before it is abbreviated.
DEFAULT_LIMIT: Final = 80
#: Columns of the reports lockstep prints (swimlanes, failure explanations).
TEXT_WIDTH: Final = 100


def abbreviate(text: str, limit: int = DEFAULT_LIMIT) -> str:
    """``text`` if at most ``limit`` characters, else its head and tail around a count.

    ``abbreviate("x" * 100_000)`` is ``"xxxx…(100000 characters)…xxxx"`` within
    ``limit`` characters (plus the count); newlines are kept only when it fits.
    """
    if len(text) <= limit:
        return text
    note = f"…({len(text)} characters)…"
    keep = max(limit - len(note), 8)
    head = (keep + 1) // 2
    tail = keep - head
    return text[:head] + note + (text[-tail:] if tail else "")


def abbreviate_repr(value: object, limit: int = DEFAULT_LIMIT) -> str:
    """``repr(value)``, abbreviated like :func:`abbreviate` (never a huge repr computed twice)."""
    try:
        text = repr(value)
    except Exception as exc:  # a broken __repr__ must not break an error message
        text = f"<{type(value).__name__} (repr failed: {type(exc).__name__})>"
    return abbreviate(text, limit)


def wrap_lines(text: str, width: int = TEXT_WIDTH) -> str:
    """Wrap every line of ``text`` longer than ``width``; continuation keeps the indent + 4."""
    out: list[str] = []
    for line in text.splitlines():
        if len(line) <= width:
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        pieces = wrap_tokens(
            line.strip(), width, initial_indent=indent, subsequent_indent=indent + "    "
        )
        out.extend(pieces or [line[:width]])
    return "\n".join(out)


_BREAKS = "/.:@_"
"""Where a token longer than a whole line is split (before the last one that fits)."""


def wrap_tokens(
    text: str, width: int, *, initial_indent: str = "", subsequent_indent: str = ""
) -> list[str]:
    """``text`` in lines of at most ``width`` columns, broken between words only: a word
    that fits on a line of its own is never split ("start main @scenarios.py:23" in 15
    columns is "start main" / "@scenarios.py" / ":23", never "start main @sce"). A word longer
    than a whole line is split before its last ``/ . : @ _`` that fits, else at the width."""
    lines = textwrap.wrap(
        text,
        width=width,
        initial_indent=initial_indent,
        subsequent_indent=subsequent_indent,
        break_long_words=False,
        break_on_hyphens=False,
    )
    out: list[str] = []
    for line in lines:
        rest = line
        while len(rest) > width:
            cut = max(rest.rfind(c, 0, width) for c in _BREAKS)
            if cut <= len(subsequent_indent):
                cut = width
            out.append(rest[:cut])
            rest = subsequent_indent + rest[cut:]
        out.append(rest)
    return out

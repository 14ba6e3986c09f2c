"""``lockstep compare BEFORE.json AFTER.json``: what changed between two check runs.

Both files are ``lockstep check --json`` documents.  Cases are matched by suite and
case id; each pair is one of:

* ``fixed``: failed before, passes after;
* ``still failing``: fails on both sides, the same invariant broken first (the
  invariants broken after it may differ: the ones only the later run broke are named);
* ``changed``: fails on both sides, another invariant broken first (the ones only the
  later run broke are named);
* ``new failure``: passed before, fails after;
* ``not judged``: skipped or errored on either side, or absent from one of them
  (nothing can be said about a change);
* ``passing``: passes on both sides.

What a case broke is its ``invariants`` field (every distinct invariant the cell saw
break, first one first) where the suite writes one, else its ``invariant``, else its
verdict.  `compare` returns the report's lines and the exit code: 1 when anything
fails after that did not before (a new failure, or a failing case breaking an
invariant it did not break before), else 0.  `load_check_json` raises
`CompareInputError` (one line) for a file that is not such a document.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import attrs

from lockstep.errors import LockstepError

__all__ = [
    "CHANGES",
    "CompareInputError",
    "Comparison",
    "compare",
    "compare_cases",
    "load_check_json",
]

CHANGES: Final = ("new failure", "changed", "still failing", "fixed", "not judged", "passing")
"""The kinds of change, in the order the totals list them."""


class CompareInputError(LockstepError):
    """A file given to ``lockstep compare`` is not a ``lockstep check --json`` document."""


@attrs.frozen
class Comparison:
    """One case on both sides: its `key` (suite, id), what it is called (`name`,
    `implementation`), each side's word for it and the `change`; `new` are the
    invariants broken after but not before."""

    key: tuple[str, str]
    name: str
    implementation: str
    before: str
    after: str
    change: str
    new: tuple[str, ...] = ()


def load_check_json(path: str | Path) -> dict[tuple[str, str], Mapping[str, Any]]:
    """The cases of a ``lockstep check --json`` file by (suite, case id), in file order."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise CompareInputError(f"cannot read {str(path)!r}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise CompareInputError(f"{str(path)!r} is not JSON: {exc}") from exc
    suites = document.get("suites") if isinstance(document, dict) else None
    if document.get("tool") != "lockstep check" or not isinstance(suites, dict):
        raise CompareInputError(
            f'{str(path)!r} is not a `lockstep check --json` file (no "tool": '
            '"lockstep check" and "suites")'
        )
    cases: dict[tuple[str, str], Mapping[str, Any]] = {}
    for suite, body in suites.items():
        for case in body.get("cases", []) if isinstance(body, dict) else []:
            if isinstance(case, dict) and isinstance(case.get("id"), str):
                cases[(str(suite), case["id"])] = case
    return cases


def _broken(case: Mapping[str, Any]) -> tuple[str, ...]:
    invariants = case.get("invariants")
    if isinstance(invariants, list) and invariants:
        return tuple(str(i) for i in invariants)
    first = case.get("invariant")
    return (str(first),) if first else (str(case.get("verdict") or "failed"),)


def _word(case: Mapping[str, Any] | None) -> str:
    if case is None:
        return "absent"
    verdict = str(case.get("verdict") or case.get("outcome", "?"))
    if case.get("outcome") == "failed":
        return f"{verdict} {','.join(_broken(case))}"
    return verdict


def _change(
    before: Mapping[str, Any] | None, after: Mapping[str, Any] | None
) -> tuple[str, tuple[str, ...]]:
    if before is None or after is None:
        return "not judged", ()
    outcomes = (before.get("outcome"), after.get("outcome"))
    if any(o not in ("passed", "failed") for o in outcomes):
        return "not judged", ()
    if outcomes == ("passed", "passed"):
        return "passing", ()
    if outcomes == ("failed", "passed"):
        return "fixed", ()
    if outcomes == ("passed", "failed"):
        return "new failure", _broken(after)
    old, new = _broken(before), _broken(after)
    added = tuple(i for i in new if i not in old)
    return ("still failing" if old[0] == new[0] else "changed"), added


def compare_cases(
    before: Mapping[tuple[str, str], Mapping[str, Any]],
    after: Mapping[tuple[str, str], Mapping[str, Any]],
) -> list[Comparison]:
    """Every case of either side, in natural order of suite, name and implementation
    ("B2" before "B10"; a parallel run writes its cases in the order they finished)."""
    keys = sorted({*after, *before}, key=lambda k: _natural(k, before.get(k) or after[k]))
    rows = []
    for key in keys:
        old, new = before.get(key), after.get(key)
        case = new if new is not None else old
        assert case is not None
        change, added = _change(old, new)
        rows.append(
            Comparison(
                key,
                str(case.get("scenario") or key[1]),
                str(case.get("implementation") or ""),
                _word(old),
                _word(new),
                change,
                added,
            )
        )
    return rows


def _natural(key: tuple[str, str], case: Mapping[str, Any]) -> tuple[object, ...]:
    def parts(text: str) -> tuple[tuple[int, int | str], ...]:
        return tuple((0, int(t)) if t.isdigit() else (1, t) for t in re.findall(r"\d+|\D+", text))

    name = str(case.get("scenario") or key[1])
    return (key[0], parts(name), str(case.get("implementation") or ""), key[1])


def _change_text(row: Comparison) -> str:
    if row.change == "new failure" or not row.new:
        return row.change
    return f"{row.change}, now also {','.join(row.new)}"


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]


def compare(
    before_path: str | Path,
    after_path: str | Path,
    *,
    before_label: str = "before",
    after_label: str = "after",
) -> tuple[list[str], int]:
    """The report comparing two ``--json`` files, and the exit code (see the module
    docstring).  Raises `CompareInputError` for an unusable file."""
    rows = compare_cases(load_check_json(before_path), load_check_json(after_path))
    header = ("scenario", "implementation", before_label, after_label, "change")
    body = [
        (
            r.name,
            r.implementation,
            r.before,
            r.after,
            _change_text(r),
        )
        for r in rows
    ]
    lines = _table([header, *body]) if rows else ["(no cases on either side)"]
    counts = Counter(r.change for r in rows)
    lines.append("")
    lines.append(", ".join(f"{name} {counts[name]}" for name in CHANGES))
    worse = [r for r in rows if r.new]
    if worse:
        named = [f"{r.name} on {r.implementation}" if r.implementation else r.name for r in worse]
        more = ", ..." if len(named) > 5 else ""
        lines.append(
            f"exit 1: {len(worse)} case(s) fail in ways they did not before "
            f"({', '.join(named[:5])}{more})"
        )
    return lines, 1 if worse else 0

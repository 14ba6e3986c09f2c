"""How the suite reports a failure: artifacts on disk and an explanation that fits a screen.

A failing mode of a cell (`models_spec._check.suite`) or a failing conformance test
(`models_spec.pytest_suite`) is explained the same way, in at most 100 columns:

* what broke: the verdict, the scenario and implementation, the strategy that
  found it and after how many executions; the invariant (id and title) and its
  message, or the exception with its traceback;
* the failing interleaving as text swimlanes (``Trace.swimlanes``, wrapped),
  headed "shrunk" or "as found, not shrunk" (``explain_failure(shrunk=...)``);
* the saved schedule and its self-contained HTML timeline, by absolute path;
* the command that reproduces it: ``lockstep replay <absolute schedule path>``.
  The schedule records its scenario, the modules to patch and the import roots
  its modules need (`lockstep.Schedule.import_paths`), so the command works
  pasted from any directory.

Values from the run (model ids, labels, messages) are abbreviated so one huge
value cannot flood a CI log.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import textwrap
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import attrs

import lockstep
from lockstep.report import (
    HtmlSection,
    abbreviate,
    format_exception,
    history_fragment,
    render_html,
)
from lockstep.suites import CaseResult
from models_spec._check.cells import Cell
from models_spec.invariants import CATALOGUE

__all__ = [
    "TEXT_WIDTH",
    "Artifacts",
    "RunSummary",
    "case_result",
    "explain_failure",
    "failure_detail",
    "failure_line",
    "failure_reports",
    "fit_lines",
    "replay_command",
    "safe_stem",
    "verbose_block",
    "wrap_text",
    "write_artifacts",
]

TEXT_WIDTH: Final = 100
_MESSAGE_LIMIT: Final = 1200  # a stall names its primitive, line, module and backend advice in full
_TRACEBACK_LINES: Final = 30


def _wrap(text: str, indent: str = "  ") -> str:
    lines: list[str] = []
    for raw in text.splitlines() or [""]:
        lines.extend(
            textwrap.wrap(
                raw,
                TEXT_WIDTH,
                initial_indent=indent,
                subsequent_indent=indent + "    ",
                break_on_hyphens=False,
            )
            or [indent.rstrip()]
        )
    return "\n".join(lines)


def wrap_text(text: str) -> str:
    """``text`` wrapped to 100 columns (continuation lines indented)."""
    return _wrap(text, "")


def fit_lines(lines: Sequence[str]) -> list[str]:
    """Each of ``lines`` wrapped to 100 columns at word boundaries, a continuation indented
    4 more than its line; a path or another word longer than a line is never cut."""
    fitted: list[str] = []
    for line in lines:
        if len(line) <= TEXT_WIDTH:
            fitted.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        fitted.extend(
            textwrap.wrap(
                line.strip(),
                TEXT_WIDTH,
                initial_indent=indent,
                subsequent_indent=indent + "    ",
                break_long_words=False,
                break_on_hyphens=False,
            )
        )
    return fitted


def safe_stem(*parts: str) -> str:
    """A file-name stem from ``parts``: safe characters only, long parts shortened + hashed."""
    cleaned = []
    for part in parts:
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in part)
        if len(safe) > 60:
            digest = hashlib.sha256(part.encode("utf-8", "replace")).hexdigest()[:10]
            safe = f"{safe[:48]}-{digest}"
        cleaned.append(safe)
    return "__".join(cleaned)


@attrs.frozen
class Artifacts:
    """The absolute paths a failure was saved to."""

    schedule: Path
    html: Path

    @property
    def paths(self) -> tuple[str, str]:
        """Both paths as strings (schedule first)."""
        return (str(self.schedule), str(self.html))


def replay_command(schedule: Path) -> str:
    """The shell command that replays the schedule file (works from any directory)."""
    return shlex.join(["lockstep", "replay", str(schedule.resolve())])


def write_artifacts(
    directory: Path, stem: str, failure: lockstep.Failure, *, title: str, description: str = ""
) -> Artifacts:
    """Save ``failure``'s schedule and HTML timeline as ``directory/stem.{json,html}``.

    ``description`` (the scenario's story: its title and each thread's calls) heads the
    timeline, so the page says what was asked of the code without anything else open.

    Created exclusively: a name already taken gets ``-2``, ``-3``... (never
    overwrites). Returns the absolute paths.
    """
    directory = directory.resolve()
    directory.mkdir(parents=True, exist_ok=True)
    for n in range(1, 1000):
        name = stem if n == 1 else f"{stem}-{n}"
        schedule_path = directory / f"{name}.json"
        try:
            failure.schedule.save(schedule_path)
        except FileExistsError:
            continue
        break
    else:  # pragma: no cover - a thousand reports of one cell in one run
        raise FileExistsError(f"too many reports named {stem!r} in {directory}")
    html_path = schedule_path.with_suffix(".html")
    sections: list[HtmlSection] = []
    history = getattr(failure.exception, "history", None)
    lin_result = getattr(failure.exception, "lin_result", None)
    if history is not None and lin_result is not None:  # an I15 violation
        sections.append(
            HtmlSection("History (I15)", history_fragment(history, lin_result), raw=True)
        )
    sections.append(HtmlSection("Reproduce", replay_command(schedule_path)))
    html_path.write_text(
        render_html(
            failure.trace.to_rows(),
            title=title,
            thread_names=list(failure.trace.thread_names),
            failure_message=abbreviate(failure.message, 4000),
            extra_sections=sections,
            marked_steps=() if failure.race is None else failure.race.marks(),
            description=description or None,
        ),
        encoding="utf-8",
    )
    return Artifacts(schedule_path, html_path)


_LOCKSTEP_PREFIX: Final = re.compile(
    r"invariant (\S+) violated after step (\d+): (?:\1 violated: )?"
)
"""How lockstep words an invariant failure (``invariant I4 violated after step 62: ...``),
followed by the violation's own ``I4 violated:``: said once, by `_what`, in the report."""


def _said(failure: lockstep.Failure) -> tuple[str, str]:
    """(" at step N" or "", the message without lockstep's and the violation's prefixes)."""
    text = failure.message.strip()
    found = _LOCKSTEP_PREFIX.match(text) if failure.kind == "invariant" else None
    if found is None:
        return "", text
    return f" at step {found.group(2)}", text[found.end() :]


def _what(failure: lockstep.Failure) -> str:
    if failure.kind == "invariant" and failure.invariant:
        info = CATALOGUE.get(str(failure.invariant))
        title = f" ({info.title})" if info is not None else ""
        return f"{failure.invariant}{title} broken{_said(failure)[0]}"
    if failure.kind == "exception" and failure.exception is not None:
        return f"{type(failure.exception).__name__} raised"
    return str(failure.kind)


def failure_line(failure: lockstep.Failure) -> str:
    """One line: what broke (invariant id and title, or the failure kind) and the message."""
    message = _said(failure)[1]
    first = message.splitlines()[0] if message else ""
    return abbreviate(f"{_what(failure)}: {first}", _MESSAGE_LIMIT)


def _abbreviate_lines(text: str, limit: int = _MESSAGE_LIMIT) -> str:
    """``text`` within about ``limit`` characters; a long multi-line text (I15's
    explanation) loses whole lines from its middle, never half a line."""
    lines = text.splitlines()
    if len(text) <= limit or len(lines) < 3:
        return abbreviate(text, limit)
    head: list[str] = []
    tail: list[str] = []
    budget = limit
    for i in range(len(lines)):
        line = lines[i // 2] if i % 2 == 0 else lines[-1 - i // 2]
        if len(line) + 1 > budget:
            break
        budget -= len(line) + 1
        (head if i % 2 == 0 else tail).append(line)
    if not head:  # the first line alone is too long
        return abbreviate(text, limit)
    left_out = len(lines) - len(head) - len(tail)
    plural = "s" if left_out != 1 else ""
    note = f"... {left_out} line{plural} left out (the HTML timeline shows them all) ..."
    return "\n".join([*head, note, *reversed(tail)])


def _traceback(failure: lockstep.Failure) -> str | None:
    """The traceback a report shows: none for an invariant the checker raised (its message
    says it all); the code under test's frames first for an exception, the checker's and
    lockstep's left out (`lockstep.report.format_exception`)."""
    if failure.exception is None or not failure.shows_traceback:
        return None
    text = format_exception(failure.exception)
    lines = text.splitlines()
    if len(lines) > _TRACEBACK_LINES:
        lines = [*lines[:5], f"... {len(lines) - _TRACEBACK_LINES} lines ...", *lines[-24:]]
    return "\n".join(abbreviate(line, TEXT_WIDTH * 2) for line in lines)


def _labelled(label: str, value: str) -> str:
    """``  label value`` on one line when it fits 100 columns, else the value on the next
    line, indented (a path is never cut)."""
    line = f"  {label} {value}"
    return line if len(line) <= TEXT_WIDTH else f"  {label.rstrip()}\n    {value}"


def failure_detail(failure: lockstep.Failure) -> str:
    """The checker's own account of ``failure`` ("" when it has none): for an invariant,
    the violation's `detail` (the spec's encodings and state, the values it compared),
    which the default report leaves out and ``--verbose`` prints."""
    detail = getattr(failure.exception, "detail", "")
    return detail if isinstance(detail, str) else ""


def explain_failure(
    failure: lockstep.Failure,
    *,
    heading: str,
    artifacts: Artifacts | None,
    shrunk: bool = True,
    scenario: str = "",
) -> str:
    """The full explanation of ``failure`` (see the module docstring), at most 100 columns.

    ``shrunk``: whether the failing interleaving was minimised; the heading says which,
    so nobody reads a search's first failing schedule as a minimal one. ``scenario``:
    what the scenario does (:meth:`Scenario.story`: its title and each thread's
    operations), printed under the heading so that a failure of a manager the reader
    did not write (``--target``) says what was asked of it without looking anything up.
    """
    parts = [_wrap(abbreviate(heading, TEXT_WIDTH * 2), "")]
    if scenario:
        parts.append(_wrap(scenario.strip(), "  "))
    parts.append(_wrap(f"{_what(failure)}: {_abbreviate_lines(_said(failure)[1])}"))
    traceback_text = _traceback(failure)
    if traceback_text:
        parts.append(_wrap(traceback_text, "    "))
    if failure.deadlock:
        parts.append("  Blocked threads:\n" + _wrap(failure.deadlock_table(), "    "))
    if failure.race is not None:
        parts.append(_wrap(failure.race.describe(), "    "))
    trace = failure.trace
    preemptions = trace.preemptions
    parts.append(
        f"  Failing interleaving, {'shrunk' if shrunk else 'as found, not shrunk'} "
        f"({len(trace)} steps, {preemptions} "
        f"preemption{'s' if preemptions != 1 else ''}):"
    )
    marked = () if failure.race is None else failure.race.marks()
    parts.append(trace.swimlanes(max_width=TEXT_WIDTH, marked=marked))
    if artifacts is not None:
        parts.append(_labelled("schedule: ", str(artifacts.schedule)))
        parts.append(_labelled("timeline: ", str(artifacts.html)))
        parts.append(_labelled("reproduce:", replay_command(artifacts.schedule)))
    elif failure.replay_command:
        parts.append(_wrap(f"reproduce: {abbreviate(failure.replay_command, 400)}"))
    return "\n".join(parts)


# -- the suite's run report ---------------------------------------------------------------

_OUTCOME: Final = {
    "PASS": "passed",
    "CAUGHT": "passed",
    "SKIP": "skipped",
    "FAIL": "failed",
    "CORE-FAIL": "failed",
    "ESCAPED": "failed",
    "ERROR": "error",
}


def _first_replay(cell: Cell) -> str | None:
    for mode in cell.modes:
        if mode.artifacts:
            return replay_command(Path(mode.artifacts[0]))
    return None


def _escaped_text(cell: Cell) -> str:
    tried = ", ".join(f"{m.mode} ({m.executions})" for m in cell.modes) or "nothing"
    return (
        f"ESCAPED {cell.scenario} on {cell.implementation}: the known-bug variant survived "
        f"every mode ({tried}): the suite has lost the power to see its bug"
    )


def case_result(cell: Cell, suite: str) -> CaseResult:
    """The `lockstep.suites.CaseResult` of a cell (for progress, JUnit XML and JSON)."""
    artifacts = tuple(path for mode in cell.modes for path in mode.artifacts)
    details = cell.explanation
    summary = cell.message
    if cell.verdict == "ESCAPED":
        details = summary = _escaped_text(cell)
    elif cell.verdict == "CAUGHT":
        summary = f"caught: {cell.message}" if cell.message else "caught"
    fields = {
        "scenario": cell.scenario,
        "implementation": cell.implementation,
        "role": cell.role,
        "verdict": cell.verdict,
        "invariant": cell.label,
        "invariants": list(cell.invariants),
        "executions": cell.executions,
        "elapsed": round(cell.elapsed, 3),
        "search_caught": list(cell.caught_by),
        "message": summary,
        "detail": cell.detail,
        "modes": [
            {
                "mode": m.mode,
                "kind": m.kind,
                "label": m.label,
                "executions": m.executions,
                "elapsed": round(m.elapsed, 3),
                "skipped": m.skipped,
                "artifacts": list(m.artifacts),
                "switch_points": m.switch_points,
                "i15_not_judged": [list(pair) for pair in m.i15_skipped],
            }
            for m in cell.modes
        ],
    }
    return CaseResult(
        id=f"{cell.scenario}[{cell.implementation}]",
        group=f"{suite}.{cell.implementation}",
        name=cell.scenario,
        outcome=_OUTCOME.get(cell.verdict, "error"),  # type: ignore[arg-type]
        verdict=cell.verdict,
        summary=summary,
        details=details,
        replay=_first_replay(cell) if cell.verdict in ("FAIL", "CORE-FAIL", "CAUGHT") else None,
        artifacts=artifacts,
        executions=cell.executions,
        elapsed=cell.elapsed,
        fields=fields,
    )


def failure_reports(cells: Sequence[Cell], *, verbose: bool = False) -> list[str]:
    """The explanation of every cell that makes the run fail, separated by blank lines;
    with ``verbose`` each followed by the checker's own account (`failure_detail`).

    Cells with the same named `Cell.cause` (one unpatched lock makes every cell an
    ERROR) are explained in full once, with the cause; each other one is one line
    pointing at that report.
    """
    lines: list[str] = []
    bad = [c for c in cells if c.verdict in ("FAIL", "CORE-FAIL", "ERROR", "ESCAPED")]
    sharing = Counter(c.cause for c in bad if c.cause)
    first: dict[str, int] = {}
    for number, cell in enumerate(bad, 1):
        where = f"{cell.verdict} {number}/{len(bad)}"
        if cell.cause in first:
            lines.append(
                wrap_text(
                    f"--- {where}: {cell.scenario} on {cell.implementation}: {cell.label}, "
                    f"same cause as {first[cell.cause]}/{len(bad)}"
                )
            )
            continue
        if lines and lines[-1]:
            lines.append("")  # after one-line pointers
        text = _escaped_text(cell) if cell.verdict == "ESCAPED" else cell.explanation
        lines.append(f"--- {where} " + "-" * 40)
        # explain_failure wraps its text itself; a replay command stays whole on its line.
        text = text or f"{cell.verdict} {cell.scenario} on {cell.implementation}"
        lines.append(wrap_text(text) if cell.verdict == "ESCAPED" else text)
        if verbose and cell.detail:
            lines.append(verbose_block(cell.detail))
        if sharing[cell.cause] > 1:
            first[cell.cause] = number
            others = sharing[cell.cause] - 1
            lines.append(
                wrap_text(
                    f"  Cause: {cell.cause}. {others} other cell(s) below fail from it "
                    "('same cause')"
                )
            )
        lines.append("")
    if lines and lines[-1]:
        lines.append("")
    return lines


def verbose_block(detail: str) -> str:
    """``detail`` under a heading that says whose terms it is in (``--verbose``)."""
    return "  Detail (the checker's own terms, --verbose):\n" + _wrap(detail, "    ")


@attrs.frozen
class RunSummary:
    """What one run of the suite did, for its closing lines."""

    cells: tuple[Cell, ...]
    planned: int
    selected: int
    shard: str | None
    elapsed: float
    workers: int
    output_dir: Path
    interrupted: bool
    # What this run could not do and how to fix it, a line each (suite.corpus_warning).
    warnings: tuple[str, ...] = ()

    def closing_lines(self) -> list[str]:
        """The last lines of the report: counts of this run only, what it could not do
        (its `warnings`, printed even with ``--quiet``), and where its files are."""
        counts: dict[str, int] = {}
        for cell in self.cells:
            counts[cell.verdict] = counts.get(cell.verdict, 0) + 1
        verdicts = ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"
        scope = f"{len(self.cells)} cell(s)"
        if self.shard is not None:
            scope += f" (shard {self.shard}: {self.selected} of {self.planned} planned)"
        executions = sum(c.executions for c in self.cells)
        head = (
            f"{scope}, {executions} executions in {self.elapsed:.1f}s with {self.workers} job(s):"
        )
        # The counts stay whole: on a line of their own where both do not fit in one.
        if len(head) + 1 + len(verdicts) <= TEXT_WIDTH:
            lines = [f"{head} {verdicts}"]
        else:
            lines = [head, f"    {verdicts}"]
        if self.interrupted:
            lines.append(
                f"INTERRUPTED after {len(self.cells)} of {self.selected} cell(s): the table "
                "and the counts above are partial"
            )
        lines.extend(self.warnings)
        bad = sum(1 for c in self.cells if c.verdict in ("FAIL", "CORE-FAIL", "ERROR", "ESCAPED"))
        caught = sum(1 for c in self.cells if c.verdict == "CAUGHT")
        saved = [
            path
            for c in self.cells
            for m in c.modes
            for path in m.artifacts
            if path.endswith("json")
        ]
        if saved:
            where = os.path.commonpath([os.path.dirname(p) for p in saved])
            if bad:
                also = f"; {caught} known-bug variant(s) caught as expected" if caught else ""
                lines.append(f"{bad} cell(s) to look at{also}")
                lines.append(f"their failing schedules and HTML timelines ({len(saved)}) are in:")
            else:
                lines.append(
                    f"{caught} known-bug variant(s) caught, as expected: their schedules and "
                    f"HTML timelines ({len(saved)}) are in:"
                )
            lines.append(f"  {where}")
        elif bad:
            lines.append(f"{bad} cell(s) to look at (see above)")
        return lines

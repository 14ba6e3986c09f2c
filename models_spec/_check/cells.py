"""The records of a check: what one mode found, and one row of the verdict table.

Plain frozen values, shared by the suite that fills them (`suite`) and the reports
that render them (`report`), so that neither imports the other.
"""

from __future__ import annotations

from typing import Final

import attrs

import lockstep

__all__ = ["BAD_VERDICTS", "Cell", "ModeResult"]

BAD_VERDICTS: Final = frozenset({"CORE-FAIL", "FAIL", "ESCAPED", "ERROR"})
"""The verdicts that make the check fail."""


@attrs.frozen
class ModeResult:
    """What one mode (replay, follow, or a strategy) found."""

    mode: str
    kind: str
    label: str
    executions: int
    elapsed: float = attrs.field(eq=False)
    skipped: str | None = None
    artifacts: tuple[str, ...] = attrs.field(default=(), eq=False)
    # (reason, executions) where I15 could not be judged; never counted as passed.
    i15_skipped: tuple[tuple[str, int], ...] = ()
    # One line saying what broke, and the full explanation (models_spec._check.report).
    message: str = attrs.field(default="", eq=False)
    explanation: str = attrs.field(default="", eq=False)
    # Steps its executions took inside the code under test (None: nothing ran).
    switch_points: int | None = attrs.field(default=None, eq=False)
    # What a search established (lockstep.Verdict; None for replay/follow).
    verdict: lockstep.Verdict | None = attrs.field(default=None, eq=False)
    # The other distinct failures a search that kept going found: (label, message line,
    # saved schedule or ""), in the order found.
    also: tuple[tuple[str, str, str], ...] = attrs.field(default=(), eq=False)
    # The checker's own account of the failure (report.failure_detail: --verbose).
    detail: str = attrs.field(default="", eq=False)


@attrs.frozen
class Cell:
    """One row of the table: a scenario against an implementation."""

    scenario: str
    implementation: str
    role: str
    verdict: str
    label: str
    executions: int
    elapsed: float = attrs.field(eq=False)
    caught_by: tuple[str, ...]
    modes: tuple[ModeResult, ...]
    # Why it is what it is, in one line ("" for a plain PASS), and the full report
    # of a failure or error (models_spec._check.report).
    message: str = attrs.field(default="", eq=False)
    explanation: str = attrs.field(default="", eq=False)
    index: int = attrs.field(default=0, eq=False)
    # Variants: the strategies their bug module declares will catch them (Job.expected).
    expected: tuple[str, ...] = ()
    # Every distinct invariant (or failure label) the cell saw break, first one first.
    invariants: tuple[str, ...] = ()
    # The checker's own account of the failure explained (report.failure_detail).
    detail: str = attrs.field(default="", eq=False)
    # An ERROR's cause when it is one the harness can name ("" otherwise): cells with the
    # same cause (one unpatched lock) are explained once (report.failure_reports).
    cause: str = attrs.field(default="", eq=False)

    @property
    def bad(self) -> bool:
        """Whether this cell makes the check fail."""
        return self.verdict in BAD_VERDICTS

"""Progress of ``lockstep check``: a live bar on a terminal, periodic lines in a CI log.

A check runs for minutes. On a terminal (``stream.isatty()``) a tqdm bar shows cells
done/total, executions and failures so far, elapsed time and the ETA, redrawn as cells
finish. tqdm rather than rich: it is one small pure-Python package with no
dependencies of its own, computes rate and ETA itself, and degrades to nothing when
asked; rich would bring a terminal-rendering stack (pygments, markdown-it) for one bar.

Not on a terminal (a CI log, a pipe) a bar's carriage returns make a mess, so a plain
line is printed at most every ``interval`` seconds (and when the last case finishes):
``lockstep check: 12/61 cells, 840 executions, 1 failure, 21s elapsed, ETA 1m30s``.
``--quiet`` prints nothing here.

:class:`Progress` is a :class:`lockstep.suites.Reporter`; several suites add up.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Final, Literal, TextIO

from lockstep.suites import CaseResult

__all__ = ["Progress", "ProgressMode", "choose_mode", "format_duration"]

ProgressMode = Literal["bar", "lines", "off"]
#: Seconds between two plain progress lines.
DEFAULT_INTERVAL: Final = 15.0


def choose_mode(stream: TextIO, *, quiet: bool) -> ProgressMode:
    """``off`` when quiet, ``bar`` on a terminal, else ``lines``."""
    if quiet:
        return "off"
    isatty = getattr(stream, "isatty", None)
    try:
        return "bar" if callable(isatty) and isatty() else "lines"
    except ValueError:  # a closed stream
        return "off"


def format_duration(seconds: float) -> str:
    """``45s``, ``3m05s``, ``1h02m``."""
    total = round(max(seconds, 0.0))
    if total < 60:
        return f"{total}s"
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


class Progress:
    """Counts finished cases and shows them (see the module docstring). Not thread-safe."""

    def __init__(
        self,
        stream: TextIO,
        mode: ProgressMode,
        *,
        interval: float = DEFAULT_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream
        self.mode = mode
        self.interval = interval
        self._clock = clock
        self.total = 0
        self.done = 0
        self.executions = 0
        self.failures = 0
        self._started = clock()
        self._last_line: float | None = None
        self._bar: Any = None

    # -- Reporter ------------------------------------------------------------------

    def start(self, suite: str, total: int) -> None:
        """``suite`` will run ``total`` more cases."""
        self.total += total
        if self.mode == "lines":
            self._line(f"lockstep check: suite {suite}: {_plural(total, 'cell')} to run")
        elif self.mode == "bar":
            self._ensure_bar()
            self._bar.total = self.total
            self._bar.refresh()

    def case(self, suite: str, result: CaseResult) -> None:
        """One case finished."""
        self.done += 1
        self.executions += result.executions
        if result.outcome in ("failed", "error"):
            self.failures += 1
        if self.mode == "bar":
            self._ensure_bar()
            self._bar.set_postfix_str(self._counts(), refresh=False)
            self._bar.update(1)
        elif self.mode == "lines":
            now = self._clock()
            due = self._last_line is None or now - self._last_line >= self.interval
            if due or self.done >= self.total:
                self._line(self.status_line())

    # -- text ------------------------------------------------------------------------

    def _counts(self) -> str:
        return f"{_plural(self.executions, 'execution')}, {_plural(self.failures, 'failure')}"

    def status_line(self) -> str:
        """``lockstep check: 12/61 cells, 840 executions, 1 failure, 21s elapsed, ETA 1m30s``."""
        elapsed = self._clock() - self._started
        eta = "?"
        if self.done and self.total >= self.done:
            eta = format_duration(elapsed / self.done * (self.total - self.done))
        return (
            f"lockstep check: {self.done}/{self.total} cells, {self._counts()}, "
            f"{format_duration(elapsed)} elapsed, ETA {eta}"
        )

    def _line(self, text: str) -> None:
        self._last_line = self._clock()
        print(text, file=self.stream, flush=True)

    def _ensure_bar(self) -> None:
        if self._bar is None:
            from tqdm import tqdm  # noqa: PLC0415 - only a terminal needs it

            self._bar = tqdm(
                total=self.total,
                file=self.stream,
                desc="lockstep check",
                unit="cell",
                dynamic_ncols=True,
                mininterval=0.2,
                bar_format=(
                    "{desc}: {n_fmt}/{total_fmt} cells |{bar}| {postfix} "
                    "[{elapsed} elapsed, ETA {remaining}]"
                ),
                postfix=self._counts(),
            )

    def close(self) -> None:
        """Finish the display (the bar leaves its last state on screen)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

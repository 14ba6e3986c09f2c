"""``lockstep check``: run the registered suites as a CI step people can trust.

What this module adds around the suites (``lockstep.suites``):

* **Inputs refused before the run.** ``--output-dir`` must be (or become) a writable
  directory, ``--junit-xml``/``--json`` writable files: otherwise one line and exit 2,
  before minutes of work are spent. The current directory is importable, as with
  ``python -m``, so ``--target mymodule:Adapter`` works from a project's root.
* **Reports of this run only.** Each run writes its failing schedules and timelines
  into a directory of its own under ``--output-dir`` (``run-<UTC time>-<pid>``, plus
  ``-shard-K-of-N``), so files of earlier runs never mix in; every count printed is
  this run's.
* **The backend said once**: where the greenlet backend cannot run (not installed;
  a free-threaded CPython whose GIL importing it would turn on) and none is named,
  the first line says that the thread backend was chosen and why, and ``--json``
  has it under ``backend`` (``lockstep._backend.automatic_fallback``).
* **Progress** (``lockstep._progress``) on stderr; ``--quiet`` keeps only failures and
  the summary.
* **CI files**: ``--junit-xml`` (``lockstep._junit``) and ``--json`` (every case's row
  with its verdict, message, files and replay command), written even when the run is
  interrupted (then marked so).
* **Exit codes**: 0 every case passed; 1 a case failed or errored (FAIL, CORE-FAIL,
  ESCAPED, ERROR); 2 usage (a bad option, a target that cannot be loaded or
  validated); 130 interrupted (Ctrl-C): the partial table and the failures found so far
  are printed and saved.
"""

from __future__ import annotations

import itertools
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import attrs

from lockstep._backend import automatic_fallback, default_backend
from lockstep._junit import junit_xml
from lockstep._progress import Progress, choose_mode
from lockstep._text import abbreviate
from lockstep._version import LOCKSTEP_VERSION
from lockstep.suites import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    CaseResult,
    LoadedSuite,
    Shard,
    SuiteOptions,
    discover_suites,
)

__all__ = [
    "CheckUsageError",
    "Collector",
    "available_cpus",
    "run_check",
    "run_directory_name",
    "writable_directory",
    "writable_file",
]


class CheckUsageError(Exception):
    """A ``lockstep check`` input that cannot work: exit 2 with this one-line message."""


def available_cpus() -> int:
    """CPUs this process may run on (the default of ``--jobs``)."""
    affinity = getattr(os, "sched_getaffinity", None)
    if affinity is not None:
        try:
            return max(1, len(affinity(0)))
        except OSError:
            pass
    return max(1, os.cpu_count() or 1)


def writable_directory(path: Path, flag: str = "--output-dir") -> Path:
    """``path`` made absolute and created; raises CheckUsageError when it cannot be used."""
    shown = abbreviate(str(path))
    if path.exists() and not path.is_dir():
        raise CheckUsageError(f"{flag} {shown} exists and is not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".lockstep-probe-"):
            pass
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise CheckUsageError(f"{flag} {shown} is not a writable directory: {reason}") from None
    return path.resolve()


def writable_file(path: Path, flag: str) -> Path:
    """``path`` (absolute) if a file can be written there; else CheckUsageError.

    Its directory must exist already: only ``--output-dir`` is created (a misspelt
    directory of a CI file would otherwise appear silently, somewhere unexpected).
    """
    shown = abbreviate(str(path))
    if path.is_dir():
        raise CheckUsageError(f"{flag} {shown} is a directory; give a file name")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise CheckUsageError(
            f"{flag} {shown}: directory {abbreviate(str(parent))} does not exist; create it "
            "first, or write the file under --output-dir"
        )
    writable_directory(parent, f"{flag} {shown}: its")
    return path.resolve()


_RUNS = itertools.count(1)


def run_directory_name(shard: Shard | None, now: datetime | None = None) -> str:
    """``run-20261203T101512Z-4242`` (``-shard-1-of-2`` appended for a shard).

    Unique per process (a second run in the same second gets ``-2``, ...), and the
    process id separates concurrent processes.
    """
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    number = next(_RUNS)
    again = "" if number == 1 else f"-{number}"
    suffix = "" if shard is None else f"-shard-{shard.index}-of-{shard.total}"
    return f"run-{stamp}-{os.getpid()}{again}{suffix}"


class Collector:
    """A Reporter keeping every finished case by suite and feeding the progress display."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.results: dict[str, list[CaseResult]] = {}
        self.codes: dict[str, int] = {}
        # The entry point name of the suite running now: results are filed under it.
        self.current: str | None = None

    def start(self, suite: str, total: int) -> None:
        """A suite starts."""
        self.results.setdefault(self.current or suite, [])
        self.progress.start(suite, total)

    def case(self, suite: str, result: CaseResult) -> None:
        """A case finished."""
        self.results.setdefault(self.current or suite, []).append(result)
        self.progress.case(suite, result)


def _atomic_write(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def _json_document(
    collector: Collector,
    *,
    options: SuiteOptions,
    exit_code: int,
    interrupted: bool,
    elapsed: float,
    backend: dict[str, str | None],
) -> str:
    suites: dict[str, Any] = {}
    for name, results in collector.results.items():
        suites[name] = {
            "exit_code": collector.codes.get(name),
            "cases": [
                {
                    "id": r.id,
                    "outcome": r.outcome,
                    "verdict": r.verdict,
                    "summary": r.summary,
                    "replay": r.replay,
                    "artifacts": list(r.artifacts),
                    "executions": r.executions,
                    "elapsed": round(r.elapsed, 3),
                    **dict(r.fields),
                }
                for r in results
            ],
        }
    document = {
        "tool": "lockstep check",
        "lockstep_version": LOCKSTEP_VERSION,
        "python_version": platform.python_version(),
        "exit_code": exit_code,
        "interrupted": interrupted,
        "elapsed": round(elapsed, 3),
        "backend": backend,
        "options": {
            "budget": options.budget,
            "seed": options.seed,
            "strategy": options.strategy,
            "jobs": options.jobs,
            "target": options.target,
            "shard": None if options.shard is None else str(options.shard),
            "output_dir": None if options.output_dir is None else str(options.output_dir),
        },
        "suites": suites,
    }
    return json.dumps(document, indent=2, default=str) + "\n"


def _properties(options: SuiteOptions) -> dict[str, str]:
    props = {"lockstep_version": LOCKSTEP_VERSION, "python_version": platform.python_version()}
    for key in ("budget", "seed", "strategy", "target", "shard"):
        value = getattr(options, key)
        if value is not None:
            props[key] = str(value)
    return props


def _run_suites(
    loaded: Sequence[LoadedSuite], options: SuiteOptions, collector: Collector, out: TextIO
) -> tuple[int, bool]:
    """Run every suite; return (exit code, interrupted)."""
    code = EXIT_OK
    ran = 0
    for entry in loaded:
        if entry.suite is None:
            print(
                f"lockstep check: cannot load suite {entry.name} ({entry.value}): "
                f"{abbreviate(str(entry.error), 300)}",
                file=sys.stderr,
            )
            code = max(code, EXIT_USAGE)
            continue
        headers = not options.quiet and len(loaded) > 1  # one suite needs no heading
        if headers:
            print(f"== suite {entry.name} ==", file=out, flush=True)
        collector.current = entry.name
        suite_code = entry.suite.run(options)
        ran += 1
        collector.codes[entry.name] = suite_code
        if suite_code == EXIT_INTERRUPTED:
            return EXIT_INTERRUPTED, True
        if headers:
            print(f"== suite {entry.name}: exit {suite_code} ==", file=out, flush=True)
        known = suite_code in (EXIT_OK, EXIT_FAILURE, EXIT_USAGE)
        code = max(code, suite_code if known else EXIT_FAILURE)
    if ran == 0:
        print("no suites registered (entry point group lockstep.suites)", file=out)
    return code, False


def run_check(
    options: SuiteOptions,
    *,
    output_dir: Path,
    junit_path: Path | None,
    json_path: Path | None,
    out: TextIO,
    err: TextIO,
) -> int:
    """Validate the inputs, run every registered suite, write the CI files; the exit code.

    ``options.output_dir`` is ignored: the run's own directory under ``output_dir`` is
    used. Raises CheckUsageError before running anything when an input is unusable.
    """
    base = writable_directory(output_dir)
    junit = None if junit_path is None else writable_file(junit_path, "--junit-xml")
    json_file = None if json_path is None else writable_file(json_path, "--json")
    # The backend this run's explorations use when none is named; said once when the
    # greenlet backend cannot run here and the thread backend was chosen by itself.
    fallback = automatic_fallback()
    backend = {"name": default_backend(), "fallback": fallback}
    if fallback is not None:
        print(f"lockstep check: {fallback}", file=out, flush=True)
    cwd = os.getcwd()
    if cwd not in sys.path:  # like `python -m`: the project's own modules import
        sys.path.insert(0, cwd)
    progress = Progress(err, choose_mode(err, quiet=options.quiet))
    collector = Collector(progress)
    run_dir = base / run_directory_name(options.shard)
    options = attrs.evolve(options, output_dir=run_dir, reporter=collector)
    started = time.monotonic()
    interrupted = False
    code = EXIT_OK
    try:
        loaded = discover_suites()
        code, interrupted = _run_suites(loaded, options, collector, out)
        collector.current = None
    except KeyboardInterrupt:
        interrupted, code = True, EXIT_INTERRUPTED
    finally:
        progress.close()
    if interrupted:
        code = EXIT_INTERRUPTED
        print("lockstep check: interrupted; the cases finished so far are reported", file=err)
    elapsed = time.monotonic() - started
    if code == EXIT_USAGE and not collector.results:
        return code  # nothing ran: the one line on stderr says why; no CI files
    if junit is not None:
        _atomic_write(junit, junit_xml(collector.results, properties=_properties(options)))
        print(f"JUnit XML: {junit}", file=out)
    if json_file is not None:
        _atomic_write(
            json_file,
            _json_document(
                collector,
                options=options,
                exit_code=code,
                interrupted=interrupted,
                elapsed=elapsed,
                backend=backend,
            ),
        )
        print(f"JSON: {json_file}", file=out)
    out.flush()
    return code

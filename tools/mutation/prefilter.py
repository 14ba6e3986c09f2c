"""Kill the easy mutants first with a fast subset of the tests, then let mutmut judge the rest.

Usage (after ``run.py`` has generated the mutants in ``--workdir``)::

    python3 tools/mutation/prefilter.py --workdir DIR PATTERN ...

mutmut runs each mutant against the tests that execute the mutated
function, named one by one; for a function that every test executes (the
lifecycle, the manager's add) that is hundreds of node ids, and pytest
spends most of a mutant's time collecting them.  This script instead runs,
for every not-yet-checked mutant matching a ``PATTERN`` (fnmatch, as mutmut's
own names), the fast directories of ``FAST_TESTS`` (whole files, ``-x``) in a
forked child of one warmed-up process, and records a mutant as *killed*
(mutmut's exit code 1) in mutmut's own result files when a test fails.  The
fast tests are part of ``run.py``'s ``TEST_SELECTION``, so a kill here is a
kill there.  With ``--recheck`` it also re-tests mutants mutmut judged
surviving (after new killing tests were copied in with ``run.py
--refresh-tests``).  Every mutant it does not kill is left as it was (unchecked
ones: re-run ``run.py`` naming them, and mutmut judges them with the whole
selection).

With ``--judge`` it gives mutmut's verdict itself, without mutmut's
per-mutant collection of hundreds of node ids: for each mutant it runs the
per-module killers and then every *file* of ``run.py``'s ``TEST_SELECTION``
holding a test that executes the mutated function (mutmut's own coverage
record, ``mutants/mutmut-stats.json``), cheapest file first, and records a
mutant on which all of them pass as *survived* (mutmut's exit code 0) and
one no test executes as *no tests* (33).  mutmut runs exactly those tests
(named one by one), a subset of these files, so the verdict is the same.

A clean run (no mutant active) must pass first, or nothing is recorded.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import random
import resource
import signal
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from run import DESELECTED, TEST_SELECTION  # this directory: the same tests as the mutmut run

FAST_TESTS = ("tests/core_mutation/test_killers_*.py", "tests/core", "tests/core_mutation")
"""Run against each mutant here, in this order (a subset of run.py's TEST_SELECTION):
the per-module killers first (fast, and aimed at what the rest missed)."""

WALL_LIMIT_S = 900
"""A child still running after this many seconds hangs (every test of a judged mutant
ends within pytest-timeout's limit otherwise): killed and recorded as a timeout."""

TIMEOUT_EXIT_CODE = 36
"""mutmut's exit code for "timeout" (counted as killed in the score)."""

CPU_LIMIT_S = 240
"""A child using more CPU than this is left for mutmut (a hang is not counted as a kill)."""


def _matching(mutants_dir: Path, patterns: list[str]) -> list[tuple[Path, str, int | None]]:
    """Every mutant matching a pattern, judged or not, with its recorded exit code,
    in a fixed order (by result file, then by name)."""
    found: list[tuple[Path, str, int | None]] = []
    for meta in sorted((mutants_dir / "src").rglob("*.meta")):
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        found += [
            (meta, name, codes[name])
            for name in sorted(codes)
            if any(fnmatch.fnmatch(name, p) for p in patterns)
        ]
    return found


def _work(
    mutants_dir: Path,
    patterns: list[str],
    recheck: bool,
    seed: int | None,
    exclude: list[str] | tuple[str, ...] = (),
) -> list[tuple[Path, str]]:
    """The mutants to run, in order.  With a ``seed`` every matching mutant, judged or
    not, is shuffled first and the judged ones are then skipped: a run that continues
    a stopped one takes the same order, so the judged mutants stay a prefix of one
    seeded permutation (a uniform sample, and the same one on every machine).
    Mutants matching an ``exclude`` pattern are dropped after the shuffle, so the
    others keep their places in that permutation (a uniform sample of the rest)."""
    wanted = (None, 0) if recheck else (None,)
    found = _matching(mutants_dir, patterns)
    if seed is not None:
        random.Random(seed).shuffle(found)
    work = [
        (meta, name)
        for meta, name, code in found
        if code in wanted and not any(fnmatch.fnmatch(name, p) for p in exclude)
    ]
    work.sort(  # stable: by the first pattern each name matches
        key=lambda item: next(i for i, p in enumerate(patterns) if fnmatch.fnmatch(item[1], p)),
    )
    return work


def _record(meta: Path, name: str, code: int = 1) -> None:
    data = json.loads(meta.read_text())
    data["exit_code_by_key"][name] = code
    meta.write_text(json.dumps(data, indent=4))


def _covering_files(mutants_dir: Path, killers: list[str]) -> Callable[[str], list[str]]:
    """mutant name -> the test files to run against it (``--judge``; module doc)."""
    from mutmut.utils.format_utils import mangled_name_from_mutant_name  # noqa: PLC0415

    stats = json.loads((mutants_dir / "mutmut-stats.json").read_text())
    cost: dict[str, float] = defaultdict(float)
    for test, seconds in stats["duration_by_test"].items():
        cost[test.partition("::")[0]] += seconds
    by_function: dict[str, list[str]] = stats["tests_by_mangled_function_name"]

    def files(name: str) -> list[str]:
        tests = by_function.get(mangled_name_from_mutant_name(name), [])
        covering = {test.partition("::")[0] for test in tests}
        covering = {f for f in covering if (mutants_dir / f).is_file()} - set(killers)
        if not covering:
            return []
        return killers + sorted(covering, key=lambda f: (cost[f], f))

    return files


def _wait_any(running: dict[int, tuple[Path, str, float]]) -> tuple[int, int | None]:
    """The next child to finish (pid, wait status), or one past ``WALL_LIMIT_S``
    (pid, None), killed: a deadlocked mutant uses no CPU, so RLIMIT_CPU never ends it."""
    while True:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid:
            return pid, status
        now = time.monotonic()
        for child, (_, _, started) in running.items():
            if now - started > WALL_LIMIT_S:
                os.kill(child, signal.SIGKILL)
                os.waitpid(child, 0)
                return child, None
        time.sleep(0.5)


def _run_in_child(name: str, args: list[str]) -> int:
    pid = os.fork()
    if pid == 0:  # the child: one mutant, quiet, CPU-bounded
        import pytest  # noqa: PLC0415
        from mutmut.mutation.trampoline import set_mutant_under_test  # noqa: PLC0415

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        resource.setrlimit(resource.RLIMIT_CPU, (CPU_LIMIT_S, CPU_LIMIT_S + 1))
        set_mutant_under_test(name)
        os._exit(int(pytest.main(args)))
    return pid


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument(
        "--recheck",
        action="store_true",
        help="also re-test mutants mutmut found surviving (after adding killing tests)",
    )
    parser.add_argument(
        "--tests",
        action="append",
        help="a test path or glob to run instead of FAST_TESTS (repeatable; e.g. one killer file)",
    )
    parser.add_argument(
        "--judge",
        action="store_true",
        help="run the killers and every file of the selection covering the mutant; "
        "record a pass as survived (module doc)",
    )
    parser.add_argument(
        "--shuffle",
        type=int,
        metavar="SEED",
        help="judge each pattern's mutants in a random order (seeded), not by name; "
        "a rerun skips the judged ones and goes on in the same order",
    )
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="PATTERN",
        help="leave out mutants matching this fnmatch pattern (repeatable; e.g. a function "
        "being changed elsewhere); with --shuffle the rest keep their seeded order",
    )
    parser.add_argument("patterns", nargs="+", help="mutant names or fnmatch patterns")
    options = parser.parse_args(argv)
    mutants_dir = (options.workdir / "mutants").resolve()
    os.chdir(mutants_dir)
    sys.path[:0] = [str(mutants_dir / "src"), str(mutants_dir)]
    os.environ["PY_IGNORE_IMPORTMISMATCH"] = "1"
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    import pytest  # noqa: PLC0415
    from mutmut.mutation.trampoline import set_mutant_under_test  # noqa: PLC0415

    # -n 0: one process (the project's addopts ask pytest-xdist for every core).
    args = ["--rootdir=.", "-x", "-q", "-n", "0", "-p", "no:cacheprovider", "-p", "no:randomly"]
    for test in DESELECTED:
        args += ["--deselect", test]
    patterns = list(options.tests or FAST_TESTS)
    if options.judge:
        patterns += [t for t in TEST_SELECTION if t not in patterns]
    fast = [str(p) for pattern in patterns for p in sorted(Path().glob(pattern))]
    files_for = _covering_files(mutants_dir, [str(p) for p in sorted(Path().glob(FAST_TESTS[0]))])
    base_args = list(args)
    args += fast  # pytest collects a file named twice only once
    set_mutant_under_test("")
    pytest.main(
        ["--rootdir=.", "--collect-only", "-qqq", "-n", "0", "-p", "no:cacheprovider", *fast]
    )
    clean = os.waitstatus_to_exitcode(os.waitpid(_run_in_child("", args), 0)[1])
    if clean != 0:
        print(f"the clean run of {fast} failed (exit {clean}); nothing recorded")
        return 1
    # With --shuffle, a run cut short has judged a uniform sample of each
    # pattern's mutants, not the alphabetically first functions (``_work``).
    work = _work(mutants_dir, options.patterns, options.recheck, options.shuffle, options.exclude)
    print(f"{len(work)} unchecked mutants; fast tests: {' '.join(fast)}", flush=True)
    running: dict[int, tuple[Path, str, float]] = {}
    killed = survived = left = 0
    while work or running:
        while work and len(running) < options.max_children:
            meta, name = work.pop(0)
            mutant_args = args
            if options.judge:
                files = files_for(name)
                if not files:
                    _record(meta, name, 33)
                    print(f"{name}: no tests (none executes it)", flush=True)
                    continue
                mutant_args = base_args + files
            running[_run_in_child(name, mutant_args)] = (meta, name, time.monotonic())
        if not running:
            break
        pid, status = _wait_any(running)
        meta, name, started = running.pop(pid)
        code = os.waitstatus_to_exitcode(status) if status is not None else None
        if code is None:
            _record(meta, name, TIMEOUT_EXIT_CODE)
            killed += 1
            verdict = f"timeout (still running after {WALL_LIMIT_S} s: a hang, killed)"
        elif code == 1:
            _record(meta, name)
            killed += 1
            verdict = "killed"
        elif code == 0 and options.judge:
            _record(meta, name, 0)
            survived += 1
            verdict = "survived (every test executing it passes)"
        else:
            left += 1
            verdict = f"left for mutmut (exit {code})"
        print(f"{name}: {verdict} [{time.monotonic() - started:.0f}s]", flush=True)
    print(f"done: {killed} killed, {survived} survived, {left} left for mutmut")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Mutation-test the core (mutmut 3) with a stated subset of operators.

Usage (from the repository root)::

    python3 tools/mutation/run.py [--workdir DIR] [--max-children N] [MUTANT ...]

What it does, and why:

* Exports the project at a git revision (``--revision``, default ``HEAD``;
  ``worktree`` copies the working tree as it is) into ``--workdir``
  (default: a fresh temporary directory) and runs mutmut *there*, so the
  result belongs to one commit, the working tree is never touched (several
  people edit it at once) and nothing needs a ``[tool.mutmut]`` table in the shared
  ``pyproject.toml``: the configuration is the ``setup.cfg`` this script
  writes into the copy (``MUTMUT_CONFIG`` below).
* mutmut 3 has no option to choose operators, so the script removes the
  excluded ones from ``mutmut.mutation.mutators.mutation_operators`` before
  calling mutmut's own command line (``EXCLUDED_OPERATORS`` below; the
  mutant generator forks, so the filtered list is what it uses), and adds
  the concurrency operators of ``concurrency.py`` (notify_all <-> notify,
  dropping a try/finally, moving a statement past a lock's release,
  dropping a ``with`` or an acquire/release pair): mistakes mutmut's own
  operators never make, two of which once escaped the whole suite.
* Lines that only log or that are the text of an error message are not
  mutated (``do_not_mutate_patterns``): changing them cannot change
  behaviour that the invariants describe.
* After the run, writes ``summary.json`` and ``summary.txt`` in the workdir:
  per module the counts by status and the score, and every survivor.

Re-running with the same ``--workdir`` and mutant names re-tests just those
mutants (after adding a killing test, copy it over with ``--refresh-tests``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _modules() -> tuple[str, ...]:
    cache = sorted(
        str(path.relative_to(ROOT))
        for pattern in ("fixed_size_cache.py", "_cache*.py")
        for path in (ROOT / "src" / "modelmanager" / "decorators").glob(pattern)
    )
    return (
        "src/modelmanager/lifecycle.py",
        "src/modelmanager/manager.py",
        *cache,
        "src/modelmanager/leases.py",
        "src/modelmanager/link.py",
        "src/modelmanager/decorators/base.py",
    )


MODULES = _modules()
"""The modules mutated (the lifecycle, the manager, every cache module, leases, the
seam between layers, whose ``clear_each`` was the manager's ``_clear_all``, and the
pass-through decorator, whose ``inner_link`` forwards that seam)."""

TEST_SELECTION = (
    "tests/core",
    "tests/core_threads",
    "tests/spec",
    "tests/core_mutation",
)
"""The fast invariant suite each mutant is tested against (seconds per mutant)."""

DESELECTED = (
    # Finds every public *timeout parameter by introspecting the classes' methods:
    # under mutmut they include the generated mutant methods. Not a behaviour test.
    "tests/core/test_timeouts.py::test_matrix_covers_every_public_timeout_parameter",
    # Reads the consumers' source and the core's methods' source (under mutmut, the
    # generated trampolines): the API's shape, not behaviour.
    "tests/core/test_extension_points.py",
)
"""Tests left out of the mutation run (each with the reason next to it)."""

EXCLUDED_OPERATORS = (
    "operator_string",  # message text and labels: no behaviour depends on them
    "operator_symmetric_string_methods_swap",  # lower/upper: no such calls here
    "operator_unsymmetrical_string_methods_swap",  # lstrip/rstrip...: none here
)
"""mutmut operators left out; every other mutmut 3 operator is applied."""

COPIED = (
    "src",
    "models_spec",  # with the recorded corpus some spec tests replay (models_spec/schedules)
    "benchmarks",
    "tests",
    "pyproject.toml",
    # Tests that read the user pages (the contract's headings, the public names the
    # docs use) find them where they are in a checkout.
    "README.md",
    "docs",
    "examples",
)

MUTMUT_CONFIG = """\
[mutmut]
source_paths =
    src/modelmanager/
also_copy =
    models_spec/
    benchmarks/
    README.md
    docs/
    examples/
only_mutate =
{only}
pytest_add_cli_args_test_selection =
{tests}
pytest_add_cli_args =
    -p
    no:cacheprovider
    -n
    0
    -q
{deselect}
do_not_mutate_patterns =
    logger\\.
    ^\\s*f?"[^"]*"\\s*,?\\s*$
    ^\\s*f?"[^"]*"\\s*\\)\\s*$
use_git_change_detection = false
timeout_multiplier = 10.0
"""

BOOTSTRAP = f"""
import sys
from mutmut.mutation import mutators
excluded = set({EXCLUDED_OPERATORS!r})
mutators.mutation_operators[:] = [
    (node, op) for node, op in mutators.mutation_operators if op.__name__ not in excluded
]
sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
from concurrency import OPERATORS
mutators.mutation_operators.extend(OPERATORS)
sys.path.pop(0)
from mutmut.__main__ import cli
sys.argv = ["mutmut", *sys.argv[1:]]
cli()
"""


def _export(names: tuple[str, ...], target: Path, revision: str | None) -> None:
    """Copy `names` from git `revision` (None: the working tree) into `target`."""
    if revision is not None:
        archive = subprocess.run(
            ["git", "archive", "--format=tar", revision, *names],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
        return
    for name in names:
        source, dest = ROOT / name, target / name
        if dest.exists():
            shutil.rmtree(dest) if dest.is_dir() else dest.unlink()
        if source.is_dir():
            shutil.copytree(source, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        elif source.exists():
            shutil.copy2(source, dest)


def prepare(workdir: Path, *, revision: str | None, refresh_tests: bool) -> None:
    """Export the project into `workdir` (once) and write mutmut's configuration there."""
    workdir.mkdir(parents=True, exist_ok=True)
    missing = tuple(name for name in COPIED if not (workdir / name).exists())
    if missing:
        _export(missing, workdir, revision)
    if refresh_tests:
        # New killing tests: copy tests/ again, also into mutmut's own copy, with
        # everything they import or replay (models_spec, the corpus, the pytest
        # configuration): tests newer than the measured source's revision need
        # the spec of their own revision.  Only src/ (the mutated code) stays.
        support = tuple(name for name in COPIED if name != "src")
        for target in (workdir, workdir / "mutants"):
            if target.is_dir():
                _export(support, target, revision)
    only = "\n".join(f"    {m}" for m in MODULES)
    only += "\n" + "\n".join(f"    {m.removeprefix('src/')}" for m in MODULES)
    tests = "\n".join(f"    {t}" for t in TEST_SELECTION if (workdir / t).is_dir())
    deselect = "\n".join(f"    --deselect\n    {test}" for test in DESELECTED)
    (workdir / "setup.cfg").write_text(
        MUTMUT_CONFIG.format(only=only, tests=tests, deselect=deselect)
    )


def mutmut(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run mutmut (with the operator filter) in ``workdir``."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run(
        [sys.executable, "-c", BOOTSTRAP, *args],
        cwd=workdir,
        env=env,
        text=True,
        capture_output=True,
        check=False,
    )


def module_of(mutant: str) -> str:
    """``modelmanager.lifecycle.xǁLifecycleTableǁhold__mutmut_3`` -> ``modelmanager.lifecycle``."""
    head = mutant.split("__mutmut_", maxsplit=1)[0]
    parts = head.split(".")
    return ".".join(p for p in parts if not p.startswith(("x_", "xǁ")))


def _added_operators() -> tuple[tuple[type, object], ...]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    try:
        from concurrency import OPERATORS  # noqa: PLC0415 - needs libcst, as mutmut does
    finally:
        sys.path.pop(0)
    return OPERATORS  # type: ignore[no-any-return]


def summarise(workdir: Path) -> dict[str, object]:
    """Read every mutant's status; write summary.json / summary.txt; return the summary."""
    listing = mutmut(workdir, "results", "--all", "true")
    statuses: dict[str, str] = {}
    for line in listing.stdout.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and "__mutmut_" in name:
            statuses[name] = status
    per_module: dict[str, Counter[str]] = defaultdict(Counter)
    survivors: dict[str, list[str]] = defaultdict(list)
    for name, status in sorted(statuses.items()):
        module = module_of(name)
        per_module[module][status] += 1
        if status not in ("killed", "timeout"):
            survivors[module].append(f"{name}: {status}")
    modules: dict[str, object] = {}
    lines = []
    for module, counts in sorted(per_module.items()):
        total = sum(counts.values())
        killed = counts["killed"] + counts["timeout"]
        score = killed / total if total else 0.0
        modules[module] = {"counts": dict(counts), "total": total, "score": round(score, 4)}
        lines.append(f"{module}: {killed}/{total} killed ({score:.1%}) {dict(counts)}")
        lines.extend(f"    SURVIVOR {s}" for s in survivors[module])
    summary = {
        "modules": modules,
        "survivors": dict(survivors),
        "excluded_operators": list(EXCLUDED_OPERATORS),
        "added_operators": [op.__name__ for _, op in _added_operators()],
        "tests": list(TEST_SELECTION),
    }
    (workdir / "summary.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False))
    (workdir / "summary.txt").write_text("\n".join(lines) + "\n")
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument(
        "--refresh-tests",
        action="store_true",
        help="copy tests/ and what they use (models_spec/, the corpus) again; src/ stays",
    )
    parser.add_argument(
        "--revision",
        default="HEAD",
        help="git revision to test (default HEAD; 'worktree' = the working tree as it is)",
    )
    parser.add_argument("--summary-only", action="store_true")
    parser.add_argument("mutants", nargs="*", help="re-test only these mutants")
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="modelmanager-mutation-"))
    workdir = workdir.resolve()
    print(f"workdir: {workdir}", flush=True)
    revision = None if args.revision == "worktree" else args.revision
    if revision is not None:
        commit = subprocess.run(
            ["git", "rev-parse", revision], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        print(f"revision: {revision} = {commit}", flush=True)
        (workdir / "REVISION").parent.mkdir(parents=True, exist_ok=True)
        (workdir / "REVISION").write_text(commit + "\n")
    prepare(workdir, revision=revision, refresh_tests=args.refresh_tests)
    if not args.summary_only:
        run = mutmut(workdir, "run", "--max-children", str(args.max_children), *args.mutants)
        (workdir / "mutmut-run.log").write_text(run.stdout + "\n--- stderr ---\n" + run.stderr)
        if run.returncode:
            print(run.stdout[-4000:], run.stderr[-4000:], sep="\n")
            print(f"mutmut run exited with {run.returncode}", file=sys.stderr)
            return run.returncode
    print((workdir / "summary.txt").read_text() if summarise(workdir) else "", end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

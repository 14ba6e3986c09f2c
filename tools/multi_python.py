"""Run the replay corpus and the lockstep tests on several Python versions.

Usage (from the repository root)::

    python3 tools/multi_python.py [--python 3.12] [--python 3.13] [--json OUT]

The project is taken at a git revision (``--revision``, default ``HEAD``,
exported with ``git archive`` into a temporary directory; ``worktree`` uses
the working tree as it is), so the result belongs to one commit.  For the
current interpreter (the reference) and each other one (default: the pyenv
versions 3.12.* and 3.13.*, else ``python3.12`` / ``python3.13`` on PATH) it

1. creates a throwaway virtual environment in a temporary directory and
   installs the project without torch (``pip install -e . attrs hypothesis
   pytest pytest-timeout pytest-xdist``; torch's local wheel exists only for 3.11);
2. runs ``stateful_tests/test_corpus.py`` (the recorded schedule corpus) and
   ``tests/lockstep``, counting passed / failed / skipped / errors from a
   JUnit report;
3. runs the core's unit tests and the torch tests (``tests/core``,
   ``tests/core_torch``: every test that mentions torch lives there) to check
   that what needs torch skips cleanly without it, and collects the whole
   suite to find modules that fail to import without it;
4. replays every corpus schedule on its variant and records a digest of the
   failing execution (failure kind, invariant, steps, and a hash of the
   step sequence: thread, operation, label); the digests of every
   interpreter are compared with the reference interpreter's, which is what
   "identical replay" means in the report.

Prints a table and (with ``--json``) writes the results.  Exit status 0
when every interpreter passed everything and replayed identically.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TESTS = ("stateful_tests/test_corpus.py", "tests/lockstep")
TORCH_TESTS = ("tests/core", "tests/core_torch")
"""The core's unit tests and the torch tests: what touches torch must skip cleanly."""
PACKAGES = ("attrs", "hypothesis", "pytest", "pytest-timeout", "pytest-xdist")
"""What the test runs need besides the project (pytest-xdist: `-n auto` is in the
configured addopts)."""


def digest_corpus() -> dict[str, dict[str, Any]]:
    """Replay each corpus schedule on its variant; a digest of each outcome (run in the venv)."""
    from models_spec._check.check import replay_scenario  # noqa: PLC0415
    from models_spec._harness.catalogue import load  # noqa: PLC0415
    from models_spec._harness.corpus import load_corpus  # noqa: PLC0415

    digests: dict[str, dict[str, Any]] = {}
    for name, entry in load_corpus().items():
        variant = load().variant(name)
        outcome = replay_scenario(variant.scenario, variant.adapter(), entry.schedule())
        failure = outcome.failure
        steps = [] if failure is None else failure.trace.steps
        sequence = "\n".join(f"{s.thread}|{s.op.kind}|{s.op.label}" for s in steps)
        digests[name] = {
            "kind": outcome.kind,
            "label": outcome.label,
            "steps": len(steps),
            "trace_sha256": hashlib.sha256(sequence.encode()).hexdigest()[:16],
        }
    return digests


def find_interpreters() -> list[str]:
    """pyenv's 3.12.* and 3.13.* (newest of each), else python3.12 / python3.13 on PATH."""
    found: list[str] = []
    pyenv = shutil.which("pyenv")
    versions: list[str] = []
    if pyenv:
        listing = subprocess.run(
            [pyenv, "versions", "--bare"], capture_output=True, text=True, check=False
        )
        versions = listing.stdout.split()
        root = subprocess.run(
            [pyenv, "root"], capture_output=True, text=True, check=False
        ).stdout.strip()
        for minor in ("3.12", "3.13"):
            matching = sorted(
                (v for v in versions if v.startswith(minor + ".") and v.count(".") == 2),
                key=lambda v: int(v.split(".")[2]),
            )
            if matching and root:
                candidate = Path(root) / "versions" / matching[-1] / "bin" / f"python{minor}"
                if candidate.exists():
                    found.append(str(candidate))
                    continue
            on_path = shutil.which(f"python{minor}")
            if on_path:
                found.append(on_path)
        return found
    return [p for p in (shutil.which("python3.12"), shutil.which("python3.13")) if p]


def resolve(spec: str) -> str:
    """``3.12`` -> an interpreter path; a path is returned as is."""
    if os.sep in spec:
        return spec
    for path in find_interpreters():
        if Path(path).name == f"python{spec}" or spec in path:
            return path
    which = shutil.which(f"python{spec}")
    if which:
        return which
    raise SystemExit(f"no interpreter found for {spec!r} (give a path or install it)")


def run(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, check=False, **kwargs)


def junit_counts(path: Path) -> dict[str, int]:
    """passed / failed / errors / skipped from a JUnit XML report."""
    if not path.exists():
        return {"passed": 0, "failed": 0, "errors": 1, "skipped": 0}
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    tests = sum(int(s.get("tests", 0)) for s in suites)
    failed = sum(int(s.get("failures", 0)) for s in suites)
    errors = sum(int(s.get("errors", 0)) for s in suites)
    skipped = sum(int(s.get("skipped", 0)) for s in suites)
    return {
        "passed": tests - failed - errors - skipped,
        "failed": failed,
        "errors": errors,
        "skipped": skipped,
    }


def export_tree(revision: str | None, target: Path) -> Path:
    """The project at git `revision` (None: the working tree itself) as a directory."""
    if revision is None:
        return ROOT
    archive = subprocess.run(
        ["git", "archive", "--format=tar", revision], cwd=ROOT, capture_output=True, check=True
    )
    target.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    return target


def check_interpreter(python: str, tree: Path) -> dict[str, Any]:
    """Everything for one interpreter, in a throwaway venv, on the project in `tree`."""
    result: dict[str, Any] = {"python": python}
    with tempfile.TemporaryDirectory(prefix="multi-python-") as tmp:
        venv = Path(tmp) / "venv"
        made = run([python, "-m", "venv", str(venv)])
        if made.returncode:
            result["error"] = f"venv failed: {made.stderr[-2000:]}"
            return result
        vpy = str(venv / "bin" / "python")
        result["version"] = run([vpy, "-c", "import platform; print(platform.python_version())"])
        result["version"] = result["version"].stdout.strip()
        install = run([vpy, "-m", "pip", "install", "-q", "-e", str(tree), *PACKAGES], cwd=tmp)
        if install.returncode:
            result["error"] = f"install failed: {install.stderr[-2000:]}"
            return result
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        env.pop("PYTHONPATH", None)
        has_torch = run([vpy, "-c", "import torch"], env=env).returncode == 0
        result["torch_installed"] = has_torch
        report = Path(tmp) / "junit.xml"
        tests = run(
            [vpy, "-m", "pytest", *TESTS, "-q", "-p", "no:cacheprovider", f"--junitxml={report}"],
            cwd=tree,
            env=env,
        )
        result["tests"] = junit_counts(report)
        result["tests_tail"] = tests.stdout[-1500:]
        torch_report = Path(tmp) / "junit-torch.xml"
        run(
            [
                vpy,
                "-m",
                "pytest",
                *TORCH_TESTS,
                "-q",
                "-p",
                "no:cacheprovider",
                f"--junitxml={torch_report}",
            ],
            cwd=tree,
            env=env,
        )
        result["torch_tests"] = junit_counts(torch_report)
        collect = run(
            [vpy, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
            cwd=tree,
            env=env,
        )
        result["collection_errors"] = [
            line for line in collect.stdout.splitlines() if line.startswith("ERROR")
        ]
        digest = run([vpy, str(Path(__file__).resolve()), "--digest"], cwd=tree, env=env)
        if digest.returncode:
            result["digest_error"] = digest.stderr[-2000:]
        else:
            result["digests"] = json.loads(digest.stdout)
    return result


def compare(results: list[dict[str, Any]]) -> None:
    """Mark each result's replay identical (or not) to the first interpreter's."""
    reference = results[0].get("digests")
    for result in results:
        digests = result.get("digests")
        result["identical_replay"] = digests is not None and digests == reference
        if digests is not None and reference is not None:
            result["replay_differences"] = sorted(
                bug
                for bug in set(digests) | set(reference)
                if digests.get(bug) != reference.get(bug)
            )


def ok(result: dict[str, Any]) -> bool:
    tests, torch_tests = result.get("tests", {}), result.get("torch_tests", {})
    return (
        "error" not in result
        and not tests.get("failed")
        and not tests.get("errors")
        and not torch_tests.get("failed")
        and not torch_tests.get("errors")
        and not result.get("collection_errors")
        and bool(result.get("identical_replay"))
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", action="append", default=[], help="version or path")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument(
        "--revision",
        default="HEAD",
        help="git revision to test (default HEAD; 'worktree' = the working tree as it is)",
    )
    parser.add_argument("--digest", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.digest:
        print(json.dumps(digest_corpus(), sort_keys=True))
        return 0
    interpreters = [resolve(p) for p in args.python] or find_interpreters()
    if not interpreters:
        print("no Python 3.12/3.13 interpreter found", file=sys.stderr)
        return 2
    interpreters.insert(0, sys.executable)  # the reference: the project's own interpreter
    revision = None if args.revision == "worktree" else args.revision
    with tempfile.TemporaryDirectory(prefix="multi-python-tree-") as tmp:
        tree = export_tree(revision, Path(tmp) / "project")
        results = [check_interpreter(python, tree) for python in interpreters]
    compare(results)
    reference = results[0].get("digests") or {}
    commit = ""
    if revision is not None:
        commit = run(["git", "rev-parse", revision], cwd=ROOT).stdout.strip()
    print(
        f"revision: {args.revision} {commit}; reference: Python "
        f"{results[0].get('version', '?')}, {len(reference)} corpus schedules"
    )
    for r in results:
        t, tt = r.get("tests", {}), r.get("torch_tests", {})
        failed_tt = tt.get("failed", 0) + tt.get("errors", 0)
        collection = len(r.get("collection_errors", []))
        print(
            f"Python {r.get('version', '?')}: corpus+lockstep {t.get('passed', 0)} passed, "
            f"{t.get('failed', 0)} failed, {t.get('errors', 0)} errors, "
            f"{t.get('skipped', 0)} skipped; core+torch tests {tt.get('passed', 0)} passed, "
            f"{tt.get('skipped', 0)} skipped, {failed_tt} failed/errors (torch installed: "
            f"{r.get('torch_installed')}); collection errors: {collection}; "
            f"identical replay: {'yes' if r.get('identical_replay') else 'no'}"
            + (f" (differs: {r['replay_differences']})" if r.get("replay_differences") else "")
            + (f"; ERROR {r['error']}" if "error" in r else "")
        )
        for line in r.get("collection_errors", []):
            print(f"    {line}")
    if args.json is not None:
        slim = [{k: v for k, v in r.items() if k != "tests_tail"} for r in results]
        args.json.write_text(
            json.dumps({"revision": commit, "reference": reference, "results": slim}, indent=2)
        )
    return 0 if all(ok(r) for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())

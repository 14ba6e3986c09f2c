"""The recorded corpus ships with the package, and a check without it says so.

``lockstep check`` plans the variants' "replay" and the core's "follow" modes from
the corpus (`models_spec._harness.corpus.CORPUS_DIR`); a corpus outside the installed
packages would leave a non-editable ``pip install`` with a weaker check.  A wheel
is built here from a copy of the project (setuptools' build backend, offline, the
working tree untouched) and must hold every file of the corpus, the manifest
included, where `CORPUS_DIR` points inside the package.  A check that finds no
corpus all the same (no manifest) runs without those modes and says so in its
closing lines, rather than passing as if it were whole.
"""

from __future__ import annotations

import fnmatch
import importlib.metadata
import io
import itertools
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

import models_spec
import models_spec._harness.corpus as corpus_module
from lockstep.suites import SuiteOptions
from models_spec._check.suite import ModelManagerSuite, corpus_warning, plan_jobs
from models_spec._harness.corpus import CORPUS_DIR, MANIFEST

ROOT = Path(__file__).resolve().parent.parent
# What a wheel is built from (pyproject.toml's packages.find: src/ and models_spec/).
BUILT_FROM = ("pyproject.toml", "README.md", "src", "models_spec")


def _corpus_files() -> list[str]:
    """Every corpus file, as its path inside an installed wheel (``/``-separated)."""
    package_root = Path(models_spec.__file__).resolve().parent.parent
    files = sorted(CORPUS_DIR.glob("*.json"))
    assert CORPUS_DIR / MANIFEST in files
    return [path.relative_to(package_root).as_posix() for path in files]


def test_the_corpus_is_package_data_of_models_spec() -> None:
    """`CORPUS_DIR` is a package of models_spec (found by packages.find) whose
    package-data patterns in pyproject.toml match every corpus file."""
    package = Path(models_spec.__file__).resolve().parent
    assert CORPUS_DIR.is_relative_to(package)
    assert (CORPUS_DIR / "__init__.py").is_file()
    dotted = ".".join(CORPUS_DIR.relative_to(package.parent).parts)
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"].get(dotted, [])
    unmatched = [
        path.name
        for path in CORPUS_DIR.glob("*.json")
        if not any(fnmatch.fnmatch(path.name, pattern) for pattern in patterns)
    ]
    assert patterns, f"no package-data entry for {dotted} in pyproject.toml"
    assert not unmatched, f"not package data of {dotted}: {unmatched}"


def test_a_built_wheel_holds_every_corpus_file(tmp_path: Path) -> None:
    """Every ``*.json`` of the corpus, MANIFEST.json included, is in the wheel."""
    try:  # the build requirement; read without importing setuptools here
        major = int(importlib.metadata.version("setuptools").split(".")[0])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        major = 0
    if major < 68:
        pytest.skip("needs setuptools>=68 to build a wheel offline")
    source, wheels = tmp_path / "source", tmp_path / "wheels"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    for name in BUILT_FROM:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=ignore)
        else:
            source.mkdir(exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    wheels.mkdir()
    built = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from setuptools import build_meta; "
            "print(build_meta.build_wheel(sys.argv[1]))",
            str(wheels),
        ],
        cwd=source,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=100,
        check=False,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    wheel = wheels / built.stdout.strip().splitlines()[-1]
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    missing = [name for name in _corpus_files() if name not in names]
    assert not missing, f"corpus files missing from the wheel (package-data): {missing}"


def test_the_documented_path_still_names_the_corpus_in_a_checkout() -> None:
    """``stateful_tests/schedules`` (README, older commands) links to `CORPUS_DIR`."""
    link = ROOT / "stateful_tests" / "schedules"
    assert link.is_symlink()
    assert link.resolve() == CORPUS_DIR
    assert (link / MANIFEST).is_file()


# A named scenario with a corpus schedule (followed on the core, replayed on its variant).
SCENARIO = "B7-duplicate-lru-entries"
CORPUS_MODES = {"replay", "follow"}


def _planned_modes(options: SuiteOptions) -> set[str]:
    jobs = plan_jobs(options, scenarios=(SCENARIO,), core_depths=(0,))
    return {mode for job in jobs for mode in job.modes}


def test_a_check_without_the_corpus_says_what_it_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No manifest where the corpus should be: no replay/follow mode is planned, and
    the run's closing lines (printed even with --quiet) name what was skipped, where
    the manifest was looked for and how to get it back."""
    options = SuiteOptions(budget=2, jobs=1, output_dir=tmp_path / "report", quiet=True)
    assert _planned_modes(options) >= CORPUS_MODES
    assert corpus_warning(options) == ""

    empty = tmp_path / "no-corpus"
    empty.mkdir()
    monkeypatch.setattr(corpus_module, "CORPUS_DIR", empty)
    assert not CORPUS_MODES & _planned_modes(options)
    stream = io.StringIO()
    suite = ModelManagerSuite(stream=stream, scenarios=(SCENARIO,), core_depths=(0,))
    assert suite.run(options) == 0, stream.getvalue()
    lines = stream.getvalue().splitlines()
    # One warning, wrapped to 100 columns (its continuation lines indented); only a path
    # longer than that stands alone on a line of its own (tmp_path's length varies).
    (at,) = [i for i, line in enumerate(lines) if "corpus" in line and not line.startswith(" ")]
    block = [lines[at], *itertools.takewhile(lambda line: line.startswith("    "), lines[at + 1 :])]
    assert all(len(line) <= 100 or len(line.split()) == 1 for line in block), block
    warning = " ".join(line.strip() for line in block)
    assert warning == corpus_warning(options)
    assert warning.startswith("WARNING: the recorded schedule corpus is missing")
    assert str(empty / MANIFEST) in warning
    assert "'replay'" in warning
    assert "'follow'" in warning
    assert "python3 -m models_spec.record_corpus" in warning


def test_a_target_run_needs_no_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--target`` runs replay no corpus: nothing is missing, nothing is said."""
    monkeypatch.setattr(corpus_module, "CORPUS_DIR", tmp_path)
    assert corpus_warning(SuiteOptions()) != ""
    assert corpus_warning(SuiteOptions(target="mymodule:Adapter")) == ""

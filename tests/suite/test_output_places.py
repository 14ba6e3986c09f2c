"""Where `lockstep check` writes (issue 33): the schedules and timelines of a run only under
``--output-dir``, in the run's own directory, made only when a failure is saved; nothing
else anywhere but the files named with ``--json`` / ``--junit-xml``."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from lockstep import _check as check_module
from lockstep import _cli as cli
from lockstep.suites import LoadedSuite
from models_spec._check.suite import ModelManagerSuite


def _check(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, target: str | None, *extra: str
) -> tuple[int, str]:
    suite = ModelManagerSuite(scenarios=("B1-remove-add-generation-split",), core_depths=(0,))
    monkeypatch.setattr(
        check_module,
        "discover_suites",
        lambda: [LoadedSuite("modelmanager", "models_spec._check.suite:SUITE", suite, None)],
    )
    monkeypatch.chdir(tmp_path)
    argv = ["check", "--budget", "2", "--jobs", "1", "--output-dir", "out", "-q", *extra]
    if target is not None:
        argv += ["--target", target]
    out = io.StringIO()
    return cli.main(argv, out=out), out.getvalue()


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_a_failing_run_writes_under_output_dir_and_the_named_files_only(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "ci").mkdir()
    code, _ = _check(
        monkeypatch,
        tmp_path,
        "examples.own_manager:UnlockedCheckManagerAdapter",
        "--json",
        "ci/r.json",
        "--junit-xml",
        "ci/r.xml",
    )
    assert code == 1
    files = _files(tmp_path)
    outside = [
        f for f in files if not f.startswith("out/run-") and f not in ("ci/r.json", "ci/r.xml")
    ]
    assert not outside, files
    assert any(f.endswith(".json") for f in files if f.startswith("out/run-"))
    pages = [tmp_path / f for f in files if f.startswith("out/run-") and f.endswith(".html")]
    assert pages
    # Each timeline opens with what the scenario asks of the manager.
    html = pages[0].read_text(encoding="utf-8")
    assert '<pre class="description">Scenario B1-remove-add-generation-split' in html
    assert "thread W: add_model(&#x27;X&#x27;)" in html
    cases = json.loads((tmp_path / "ci/r.json").read_text())["suites"]["modelmanager"]["cases"]
    assert all("detail" in case for case in cases)


def test_a_run_with_nothing_to_save_makes_no_run_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    code, _ = _check(monkeypatch, tmp_path, "examples.own_manager:SerialManagerAdapter")
    assert code == 0
    assert _files(tmp_path) == []
    assert not list((tmp_path / "out").glob("run-*"))

"""A failure's HTML timeline, rendered by a real browser (headless Chromium).

The suite saves a self-contained HTML timeline next to every failing schedule.
This renders one in Chromium (Debian's ``chromium`` package; ``.ci/run``
installs it) and reads back the DOM the browser built: the threads, the steps
and both sides of the failure (the two constructors of one id running at once)
are on the page, and the browser logged nothing to its console. Skipped, with
the reason, where no Chromium is installed. The network is not needed: the
page has no external resource, and the browser runs with a fresh profile.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from models_spec._check.check import explore_scenario
from models_spec._check.report import write_artifacts
from models_spec._harness.scenario_index import get_scenario

from .user_project import write_project

CHROMIUM = next(
    (shutil.which(name) for name in ("chromium", "chromium-browser") if shutil.which(name)), None
)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no headless browser: install Debian's chromium (`apt-get install -y chromium`, "
    "as .ci/run does) to render the HTML timeline",
)
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--enable-logging=stderr",
    "--v=0",
)


def chromium(page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """Run headless Chromium on ``page`` with a fresh profile."""
    assert CHROMIUM is not None
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *extra, page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


class _Table(HTMLParser):
    """The timeline table as the browser's DOM has it: headers and rows of cell texts."""

    def __init__(self) -> None:
        super().__init__()
        self.headers: list[str] = []
        self.rows: list[list[str]] = []
        self.failure_box = ""
        self._cell: list[str] | None = None
        self._row: list[str] | None = None
        self._in_box = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = dict(attrs).get("class") or ""
        if tag == "div" and "failure-box" in classes:
            self._in_box = True
        if tag == "tr":
            self._row = []
        if tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "div":
            self._in_box = False
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        if tag == "tr" and self._row is not None:
            if not self.headers:
                self.headers = self._row
            else:
                self.rows.append(self._row)
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._in_box:
            self.failure_box += data


@pytest.fixture(scope="module")
def failure_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The HTML timeline the suite saves for B2 on the project's racy manager."""
    project = tmp_path_factory.mktemp("project")
    write_project(project)
    import sys

    sys.path.insert(0, str(project))
    try:
        from models_spec.adapter import load_adapter

        adapter = load_adapter("mymgr:Racy")
        outcome = explore_scenario(
            get_scenario("B2-constructor-failure-split"),
            adapter,
            strategy="random",
            budget=30,
            seed=0,
            races=False,  # the invariant the race leads to: two constructors at once
        )
    finally:
        sys.path.remove(str(project))
    assert outcome.failure is not None
    assert outcome.label == "I2"
    saved = write_artifacts(
        project / "report", "b2", outcome.failure, title="B2 on my-racy-manager (random)"
    )
    return saved.html


def test_the_timeline_renders_with_threads_steps_and_both_sides(
    failure_page: Path, tmp_path: Path
) -> None:
    """Chromium's DOM has a column per thread, every step, the failure message and the
    two constructors of 'X' on two different threads; nothing on the console."""
    run = chromium(failure_page, tmp_path / "profile", "--dump-dom")
    assert run.returncode == 0, run.stderr[-2000:]
    console = [line for line in run.stderr.splitlines() if ":CONSOLE" in line]
    assert console == []
    table = _Table()
    table.feed(run.stdout)
    assert table.headers[0] == "step"
    threads = table.headers[1:]
    assert [h.split(": ", 1)[1] for h in threads] == ["main", "H", "W", "N"]
    steps = [int(re.sub(r"\D", "", row[0])) for row in table.rows]
    assert steps == list(range(len(steps)))
    assert len(steps) >= 8
    constructors = {
        column
        for row in table.rows
        for column, cell in enumerate(row[1:])
        if "construct:enter:X" in cell
    }
    assert len(constructors) == 2  # both sides: two threads constructing X at once
    assert "I2 violated: 2 factory calls building 'X' ran at the same time" in table.failure_box
    assert "lockstep replay /" in run.stdout  # the reproduce section


def test_a_screenshot_of_the_timeline(failure_page: Path, tmp_path: Path) -> None:
    """The browser paints the page (a non-trivial PNG); docs/ keeps one of these."""
    shot = tmp_path / "timeline.png"
    run = chromium(
        failure_page, tmp_path / "profile", f"--screenshot={shot}", "--window-size=1200,900"
    )
    assert run.returncode == 0, run.stderr[-2000:]
    data = shot.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(data) > 10_000
    if os.environ.get("LOCKSTEP_SCREENSHOT_TO"):  # how docs/img/timeline.png is refreshed
        shutil.copyfile(shot, os.environ["LOCKSTEP_SCREENSHOT_TO"])

"""Where the greenlet backend cannot run, lockstep picks the thread backend and says so.

It cannot run where greenlet is not installed, and on a free-threaded CPython (3.13t)
whose GIL is off where importing greenlet would turn the GIL back on for the whole
process (``lockstep._backend.greenlet_unavailable``). The interpreter running these
tests is usually neither, so both are simulated: greenlet's import is blocked
(``sys.modules["greenlet"] = None``), or lockstep is told the GIL is off, which
makes it ask a child interpreter whether importing greenlet leaves the GIL off, and
the child answers as greenlet 3.2.2 does on 3.13t. The last test runs only on a
free-threaded CPython: there nothing is simulated (the free-threaded CI step installs
greenlet's newest wheel there, 3.2.2, so that the real child is asked).
"""

from __future__ import annotations

import importlib.util
import io
import json
import sys
import sysconfig
import threading
from pathlib import Path
from typing import Any

import pytest
from ls_helpers import BackendSeen

import lockstep
import lockstep._backend as backends
from lockstep import RandomStrategy, explore
from lockstep import _check as check
from lockstep import _cli as cli
from lockstep._backend import (
    ENV_VAR,
    BackendUnavailable,
    automatic_fallback,
    default_backend,
    greenlet_unavailable,
    make_backend,
)
from lockstep.suites import LoadedSuite


@pytest.fixture
def automatic(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No backend named (the conftest's variable removed) and nothing cached yet."""
    monkeypatch.delenv(ENV_VAR)
    monkeypatch.setattr(backends, "_default", None)
    monkeypatch.setattr(backends, "_unavailable", [])
    return monkeypatch


@pytest.fixture
def no_greenlet(automatic: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """greenlet cannot be imported (as where it is not installed)."""
    automatic.setitem(sys.modules, "greenlet", None)
    return automatic


@pytest.fixture
def gil_would_come_back(automatic: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """As on a free-threaded CPython whose GIL is off, greenlet not imported yet, with a
    greenlet that turns the GIL on: the child interpreter lockstep asks gives that answer
    (its script stands in for the real import, which would answer so only on 3.13t)."""
    automatic.setattr(backends, "gil_disabled", lambda: True)
    automatic.delitem(sys.modules, "greenlet", raising=False)
    automatic.setattr(backends, "_PROBE", "print('gil 3.2.2')")
    return automatic


def _os_threads_of_two_logical_threads() -> set[int]:
    """Explore two logical threads; the real OS threads they ran on (the thread backend:
    one each; the greenlet backend: one carrier for both)."""
    idents: set[int] = set()

    def scenario() -> None:
        def body() -> None:
            idents.add(threading.get_ident())  # the real module: this file is not patched
            lockstep.checkpoint("after recording")

        threads = [lockstep.spawn(body) for _ in range(2)]
        for thread in threads:
            thread.join()

    result = explore(scenario, strategy=RandomStrategy(0), budget=3)
    assert result.failure is None, result.failure
    assert result.executions == 3
    return idents


def _check(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> tuple[str, dict[str, Any], list[str]]:
    """`lockstep check --json` over a fake suite: its output, its JSON, the backends seen."""
    suite = BackendSeen()
    monkeypatch.setattr(check, "discover_suites", lambda: [LoadedSuite("s", "m:S", suite, None)])
    out = io.StringIO()
    path = tmp_path / "check.json"
    argv = ["check", "--json", str(path), "--output-dir", str(tmp_path / "out")]
    assert cli.main(argv, out=out) == 0
    return out.getvalue(), json.loads(path.read_text()), suite.seen


def test_without_greenlet_the_thread_backend_is_chosen_and_named(no_greenlet):
    """greenlet missing: the default is "thread", the fallback line says why, and asking
    for greenlet by name says what is missing and which backend to use instead."""
    reason = greenlet_unavailable()
    assert reason is not None
    assert reason.startswith("greenlet is not installed")
    assert default_backend() == "thread"
    assert automatic_fallback() == (
        f"backend: thread, chosen by itself: the greenlet backend cannot run here: {reason}"
    )
    with pytest.raises(BackendUnavailable, match=r"not installed.*backend='thread'"):
        make_backend("greenlet")
    assert len(_os_threads_of_two_logical_threads()) >= 2


def test_a_greenlet_import_that_would_enable_the_gil_is_not_made(gil_would_come_back):
    """On a free-threaded CPython the question goes to a child interpreter, and greenlet
    stays unimported here: an import that turns the GIL on cannot be undone."""
    reason = greenlet_unavailable()
    assert reason is not None
    assert reason == (
        "importing greenlet 3.2.2 would re-enable the GIL of this free-threaded Python "
        "(it does not declare free-threading support)"
    )
    assert "greenlet" not in sys.modules
    assert default_backend() == "thread"
    assert automatic_fallback() is not None
    with pytest.raises(BackendUnavailable, match=r"re-enable the GIL.*backend='thread'"):
        make_backend("greenlet")
    assert len(_os_threads_of_two_logical_threads()) >= 2
    assert "greenlet" not in sys.modules
    assert greenlet_unavailable() is reason  # asked once per process


@pytest.mark.skipif(
    bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    or importlib.util.find_spec("greenlet") is None,
    reason="needs a GIL build of CPython with greenlet installed",
)
def test_the_child_interpreter_really_imports_greenlet(automatic):
    """The probe itself, unsimulated: on a GIL build told that its GIL is off, the child
    imports greenlet and (truthfully) finds the GIL on."""
    automatic.setattr(backends, "gil_disabled", lambda: True)
    automatic.delitem(sys.modules, "greenlet", raising=False)
    reason = greenlet_unavailable()
    assert reason is not None
    assert reason.startswith("importing greenlet 3.")
    assert reason.endswith(
        "would re-enable the GIL of this free-threaded Python "
        "(it does not declare free-threading support)"
    )
    assert "greenlet" not in sys.modules


def test_a_named_backend_is_not_a_fallback(gil_would_come_back):
    """LOCKSTEP_BACKEND (or --backend) names the backend: nothing is chosen by itself."""
    gil_would_come_back.setenv(ENV_VAR, "thread")
    assert automatic_fallback() is None
    assert default_backend() == "thread"


def test_check_says_once_in_its_header_and_its_json(no_greenlet, tmp_path):
    """`lockstep check` prints the fallback line once, before the suites, and --json
    carries the backend with the reason; the suites run on the thread backend."""
    text, document, seen = _check(no_greenlet, tmp_path)
    line = f"lockstep check: {automatic_fallback()}"
    assert text.splitlines()[0] == line
    assert text.count("chosen by itself") == 1
    assert document["backend"] == {"name": "thread", "fallback": automatic_fallback()}
    assert seen == ["thread"]


def test_check_says_nothing_where_greenlet_runs(automatic, tmp_path):
    """Where the greenlet backend runs, the header has no such line and the JSON says so."""
    if greenlet_unavailable() is not None:
        pytest.skip(f"the greenlet backend cannot run here: {greenlet_unavailable()}")
    text, document, seen = _check(automatic, tmp_path)
    assert "chosen by itself" not in text
    assert document["backend"] == {"name": "greenlet", "fallback": None}
    assert seen == ["greenlet"]


@pytest.mark.skipif(
    not backends.gil_disabled(), reason="needs a free-threaded CPython with the GIL off"
)
def test_on_free_threaded_python_exploring_leaves_the_gil_off(automatic):
    """Nothing simulated: whatever greenlet is installed, an exploration on the default
    backend leaves the GIL off (greenlet is used only where it keeps it off)."""
    _os_threads_of_two_logical_threads()
    assert not sys._is_gil_enabled()  # type: ignore[attr-defined]
    expected = "greenlet" if greenlet_unavailable() is None else "thread"
    assert default_backend() == expected

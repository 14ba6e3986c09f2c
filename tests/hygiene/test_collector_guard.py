"""The root conftest's guard fails a test that leaves the garbage collector changed.

The guard runs in a pytest session of its own (a subprocess: a leak in the same
process would be this test's), loaded from the repository's conftest.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT_CONFTEST = Path(__file__).resolve().parents[2] / "conftest.py"

CONFTEST = f"""
import importlib.util

_spec = importlib.util.spec_from_file_location("repository_conftest", {str(ROOT_CONFTEST)!r})
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
_collector_guard = _module._collector_guard
"""

TESTS = """
import gc

KEPT = []


def test_clean():
    garbage = [[i] for i in range(300_000)]  # made and dropped: no leak
    del garbage


def test_raises_the_threshold():
    gc.set_threshold(*(n + 1 for n in gc.get_threshold()))


def test_disables_collection():
    gc.disable()


def test_freezes():
    gc.freeze()


def test_keeps_what_it_made():
    KEPT.extend([i] for i in range(600_000))


def test_after_them_the_collector_is_as_before():
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
"""


def test_the_guard_fails_each_test_that_changes_the_collector(pytester: pytest.Pytester) -> None:
    """Changed thresholds, collection left off, frozen objects and 600,000 objects kept
    are each an error at that test's teardown, naming what changed; the settings are
    put back, so the next test is unaffected; a test that only makes garbage passes."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_leaky=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist", "-q")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed") == 6, result.stdout.str()
    assert outcomes.get("errors") == 4, result.stdout.str()
    text = result.stdout.str()
    for test, says in [
        ("test_raises_the_threshold", "thresholds (gc.get_threshold())"),
        ("test_disables_collection", "enabled (gc.isenabled()): True before, False after"),
        ("test_freezes", "frozen objects: 0 before"),
        ("test_keeps_what_it_made", "more allocated blocks after a full collection"),
    ]:
        assert f"ERROR at teardown of {test}" in text
        assert says in text
    assert "ERROR at teardown of test_clean" not in text


def _repository_conftest() -> object:
    import importlib.util

    spec = importlib.util.spec_from_file_location("repository_conftest", ROOT_CONFTEST)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_frozen_object_that_is_freed_is_no_change_a_test_made() -> None:
    """Fewer frozen objects, but some, is another thread's object freed, not a test's
    unfreeze (it made the guard fail a test at random: 278,282 frozen before, 278,280
    after); a freeze, or an unfreeze of everything, is still a change."""
    changes = _repository_conftest().collector_changes  # type: ignore[attr-defined]
    settings = (700, 10, 10)
    assert changes((settings, True, 278_282), (settings, True, 278_280)) == []
    assert changes((settings, True, 278_282), (settings, True, 278_282)) == []
    assert changes((settings, True, 0), (settings, True, 5)) == [
        "frozen objects: 0 before, 5 after"
    ]
    assert changes((settings, True, 10), (settings, True, 11)) == [
        "frozen objects: 10 before, 11 after"
    ]
    assert changes((settings, True, 10), (settings, True, 0)) == [
        "frozen objects: 10 before, 0 after"
    ]

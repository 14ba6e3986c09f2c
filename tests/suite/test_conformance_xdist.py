"""The pytest route gives the same verdicts serially and under pytest-xdist (`-n`).

`conformance_tests` parametrizes one test per scenario; each is a pure function
of its inputs (seeded strategies, fresh state per execution), so distributing
them over worker processes (or machines: docs/ci.md) changes nothing but the
wall time.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from .user_project import MYMGR

pytest.importorskip("xdist", reason="pytest-xdist is part of the test extra")

TESTS = """
from models_spec.pytest_suite import conformance_tests

SCENARIOS = [
    "B1-remove-add-generation-split",
    "B2-constructor-failure-split",
    "B3-dispose-after-release",
    "B10-alias-is-the-key",
    "B7-duplicate-lru-entries",
]
OPTIONS = {"scenarios": SCENARIOS, "strategies": ("pct", "random"), "budget": 8}
test_correct = conformance_tests("mymgr:Adapter", **OPTIONS)
test_racy = conformance_tests("mymgr:Racy", **OPTIONS)
"""


def _verdicts(junit: Path) -> dict[str, str]:
    verdicts = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        outcome = "passed"
        for kind in ("failure", "error", "skipped"):
            if case.find(kind) is not None:
                outcome = kind
        verdicts[f"{case.get('classname')}::{case.get('name')}"] = outcome
    return verdicts


def test_the_verdicts_are_the_same_under_xdist(pytester: pytest.Pytester) -> None:
    """`pytest` and `pytest -n 2` give every conformance test the same outcome."""
    pytester.makepyfile(mymgr=MYMGR, test_conformance=TESTS)
    serial, parallel = pytester.path / "serial.xml", pytester.path / "parallel.xml"
    first = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--junitxml={serial}")
    second = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "2", f"--junitxml={parallel}"
    )
    assert first.ret == second.ret == pytest.ExitCode.TESTS_FAILED
    one, two = _verdicts(serial), _verdicts(parallel)
    assert len(one) == 10
    assert one == two
    assert set(one.values()) == {"passed", "failure", "skipped"}
    assert all(v != "failure" for k, v in one.items() if "test_correct" in k)

"""`--target module` checks every adapter in its ADAPTERS; TargetUnavailable exits 2."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from lockstep.suites import SuiteOptions
from models_spec._check.suite import ModelManagerSuite, table_rows
from models_spec.adapter import AdapterError, TargetUnavailable, load_adapter, target_specs

FAKES = "tests.upstream._fake_targets"


def test_a_module_target_names_each_listed_adapter() -> None:
    """A bare module stands for module:name per ADAPTERS entry, in order."""
    assert target_specs(FAKES) == (f"{FAKES}:first", f"{FAKES}:second")
    assert target_specs(f"{FAKES}:first") == (f"{FAKES}:first",)


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("tests.upstream._fake_bad_targets", "non-empty ADAPTERS sequence of str"),
        ("tests.upstream", "non-empty ADAPTERS sequence of str"),
        ("no_such_module_xyz", "must look like"),
    ],
)
def test_a_bad_module_target_says_what_to_do(target: str, message: str) -> None:
    """No ADAPTERS, a str instead of names, or no module: AdapterError naming the fix."""
    with pytest.raises(AdapterError, match=message):
        target_specs(target)


def test_every_listed_adapter_gets_its_rows(tmp_path: Path) -> None:
    """One row per scenario x listed adapter, each under the adapter's own name."""
    out = io.StringIO()
    suite = ModelManagerSuite(stream=out, scenarios=("B1-remove-add-generation-split",))
    status = suite.run(SuiteOptions(budget=3, output_dir=tmp_path, target=FAKES))
    rows = [r for r in table_rows(out.getvalue()) if r[0].startswith("B1-")]
    assert [(r[1], r[2]) for r in rows] == [
        ("core-bare-manager", "PASS"),
        ("core-bare-manager-again", "PASS"),
    ]
    assert status == 0


def test_target_unavailable_passes_through_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """load_adapter re-raises it unchanged; the suite prints it as one line and exits 2."""
    with pytest.raises(TargetUnavailable, match="not installed"):
        load_adapter(f"{FAKES}:unavailable")
    suite = ModelManagerSuite(stream=io.StringIO())
    assert suite.run(SuiteOptions(target=f"{FAKES}:unavailable", output_dir=tmp_path)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "lockstep check: fake target: not installed; install it with: pip install nothing"
    ]

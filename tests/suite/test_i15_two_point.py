"""I15 judges every execution (multi-point adds) and can fail: over-eviction and wrong histories."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lockstep._linearizability import Operation, check_linearizability
from models_spec._check.check import explore_scenario
from models_spec._check.suite import Job, run_job
from models_spec._harness.scenario_index import get_scenario
from models_spec.adapter import CoreAdapter
from models_spec.fakes import Script
from models_spec.scenarios import Op, Scenario, Setup, i15_skips
from models_spec.spec import expand_adds, initial_state, step
from tests.suite.fake_adapters import evicts_up_to_three

FULL = Scenario(
    "two-point-full-cache",
    (),
    "a full cache of 3 admits D while another thread reads",
    [("T", [Op("add", "D")]), ("O", [Op("getitem", "C")])],
    Setup(max_size=3, preload=("A", "B", "C")),
    needs=frozenset({"capacity"}),
)


def _verdict(ops: list[Operation], *, max_size: int = 2, script: Script | None = None) -> str:
    initial = initial_state(max_size=max_size, script=script)
    return check_linearizability(expand_adds(ops), step, initial=initial).verdict


def _op(process: str, call: int, ret: int | None, op_input: Any, output: Any = None) -> Operation:
    return Operation(process, call, ret, op_input, output)


def _loaded_a_b() -> list[Operation]:
    return [
        _op("p", 0, 1, ("add", "A", None, False), ("ok", None)),
        _op("p", 2, 3, ("add", "B", None, False), ("ok", None)),
    ]


def test_an_over_evicting_cache_is_rejected_by_i15() -> None:
    """Evicting 3 where 1 makes room breaks no state invariant, only I15."""
    outcome = explore_scenario(FULL, evicts_up_to_three(), strategy="pct", budget=20)
    assert outcome.label == "I15"
    violation = outcome.failure.exception  # type: ignore[union-attr]
    assert "which no one-at-a-time order of the threads' calls explains" in str(violation)
    assert "not linearizable" in violation.detail.lower()  # the checker's account (--verbose)


def test_the_core_passes_the_same_scenario_and_i15_is_judged() -> None:
    before = i15_skips()
    outcome = explore_scenario(FULL, CoreAdapter(0), strategy="pct", budget=20)
    assert not outcome.failed, outcome.failure
    assert outcome.executions == 20
    assert i15_skips() == before  # judged every time, never skipped


def test_victims_of_a_failed_load_stay_evicted() -> None:
    """A cold add of C whose load fails: an observer may see A gone, never both gone."""
    script = Script(load_failures={"C": (1,)})
    failing = _op("t", 4, 9, ("add", "C", None, False), ("raise", "ScriptedLoadError"))
    final_ok = _op("o", 10, 11, ("keys",), ("ok", ("B",)))
    assert _verdict([*_loaded_a_b(), failing, final_ok], script=script) == "ok"
    # A back after the failure: the eviction cannot be undone.
    back = _op("o", 10, 11, ("keys",), ("ok", ("A", "B")))
    assert _verdict([*_loaded_a_b(), failing, back], script=script) == "illegal"
    # Both gone: one slot was needed, one victim only.
    both = _op("o", 5, 6, ("keys",), ("ok", ()))
    assert _verdict([*_loaded_a_b(), failing, both], script=script) == "illegal"


def test_a_reserved_slot_counts_toward_capacity() -> None:
    """max_size 2, A loaded: C's admission reserves the last slot, so D's admission evicts A."""
    ops = [
        _op("p", 0, 1, ("add", "A", None, False), ("ok", None)),
        _op("c", 2, 20, ("add", "C", None, False), ("ok", None)),
        _op("d", 3, 10, ("add", "D", None, False), ("ok", None)),
        _op("o", 11, 12, ("keys",), ("ok", ("D",))),  # C still loading, A evicted for D
        _op("o", 21, 22, ("keys",), ("ok", ("C", "D"))),
    ]
    assert _verdict(ops) == "ok"
    # Without C's admission D would not evict: ("A", "D") while C loads is legal too,
    # but then C's own admission must evict A or D before it completes.
    ops[3] = _op("o", 11, 12, ("keys",), ("ok", ("A", "D")))
    assert _verdict(ops) == "ok"
    ops[4] = _op("o", 21, 22, ("keys",), ("ok", ("A", "C", "D")))
    assert _verdict(ops) == "illegal"


def test_a_timed_out_add_may_have_evicted_but_registers_nothing() -> None:
    timed_out = _op("t", 4, 9, ("add", "C", None, False), ("raise", "LockTimeout"))
    for keys, verdict in (
        (("A", "B"), "ok"),  # nothing happened
        (("B",), "ok"),  # admitted (A evicted), then timed out: slot released
        (("B", "C"), "illegal"),  # a timeout never registers
        ((), "illegal"),  # one victim at most
    ):
        final = _op("o", 10, 11, ("keys",), ("ok", keys))
        assert _verdict([*_loaded_a_b(), timed_out, final]) == verdict, keys


def test_a_timed_out_admission_cannot_happen_after_the_timeout() -> None:
    """Its slot would leak: E's later admission would then evict B as well."""
    ops = [
        *_loaded_a_b(),
        _op("t", 4, 5, ("add", "C", None, False), ("raise", "LockTimeout")),
        _op("e", 6, 7, ("add", "E", None, False), ("ok", None)),
        _op("o", 8, 9, ("keys",), ("ok", ("E",))),
    ]
    assert _verdict(ops) == "illegal"
    ops[-1] = _op("o", 8, 9, ("keys",), ("ok", ("B", "E")))
    assert _verdict(ops) == "ok"


def test_a_failed_eviction_fails_the_add_at_admission() -> None:
    script = Script(unload_failures={"A": (1,)})
    failing = _op("t", 4, 5, ("add", "C", None, False), ("raise", "ScriptedUnloadError"))
    final = _op("o", 6, 7, ("lru",), ("ok", ("A", "B")))
    assert _verdict([*_loaded_a_b(), failing, final], script=script) == "ok"
    wrong = _op("t", 4, 5, ("add", "C", None, False), ("raise", "ScriptedLoadError"))
    assert _verdict([*_loaded_a_b(), wrong, final], script=script) == "illegal"


def test_core_fail_cell_draws_the_i15_history(tmp_path: Path) -> None:
    """An I15 failure of a core-role target is CORE-FAIL with its history drawn in HTML."""
    job = Job(
        0,
        "B14-admission-overshoot",
        "over-evicting",
        "core",
        ("pct",),
        20,
        0,
        str(tmp_path),
        target="tests.suite.fake_adapters:evicts_up_to_three",
    )
    cell = run_job(job)
    assert (cell.verdict, cell.label) == ("CORE-FAIL", "I15")
    _schedule, html = cell.modes[0].artifacts
    text = Path(html).read_text(encoding="utf-8")
    assert "History (I15)" in text
    assert "ILLEGAL" in text


def test_remaining_i15_skips_are_counted_and_reported() -> None:
    """B11 runs an unmodelled operation: every execution is counted as an I15 skip."""
    outcome = explore_scenario(
        get_scenario("B11-nested-decorators"), CoreAdapter(1), strategy="random", budget=3
    )
    assert not outcome.failed
    assert outcome.i15_skipped == (("the scenario runs operations the spec does not model", 3),)
    assert outcome.i15_report == (
        "I15 skipped in 3 executions because the scenario runs operations the spec does not model",
    )
    judged = explore_scenario(FULL, CoreAdapter(0), strategy="random", budget=3)
    assert judged.i15_skipped == ()

"""The public namespace and the rendering of traces."""

from __future__ import annotations

import subprocess
import sys
import threading

import lockstep
from lockstep import Schedule, explore, replay, spawn
from lockstep.strategies import Choice


def test_import_is_free_of_hypothesis():
    """`import lockstep` does not import hypothesis (nor pytest)."""
    code = "import sys, lockstep; print('hypothesis' in sys.modules, 'pytest' in sys.modules)"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert proc.stdout.split() == ["False", "False"]


def _two_threads():
    def worker(tag):
        lockstep.checkpoint(f"work-{tag}", resource="r")

    a = spawn(worker, "a", name="alpha")
    b = spawn(worker, "b", name="beta")
    a.join()
    b.join()


def test_swimlanes_one_column_per_thread_with_preemptions_marked():
    """Each step sits in its thread's column with its op and file:line; ! marks preemptions."""
    # main starts both threads, then alpha starts and beta preempts it.
    choices = [Choice(0), Choice(0), Choice(0), Choice(1), Choice(2), Choice(2), Choice(2)]
    choices += [Choice(1), Choice(1), Choice(0), Choice(0), Choice(0)]
    result = replay(_two_threads, Schedule(choices=tuple(choices)))
    assert result.failure is None, result.failure
    text = result.trace.swimlanes()
    lines = text.splitlines()
    header = lines[0]
    assert "0:main" in header
    assert "1:alpha" in header
    assert "2:beta" in header
    step4 = next(line for line in lines if line.lstrip("! ").startswith("4 |"))
    assert step4.startswith("!")
    assert "start beta" in step4
    assert step4.index("start beta") > header.index("2:beta") - 5
    # a cell wider than its column continues on the next line (at most 100 columns)
    at = next(i for i, line in enumerate(lines) if "checkpoint work-b" in line)
    assert "@test_ls_public.py:" in lines[at] + lines[at + 1]
    assert max(len(line) for line in lines) <= 100
    rows = result.trace.to_rows()
    assert rows[4]["preemption"] is True
    assert rows[4]["thread_name"] == "beta"
    assert rows[5]["kind"] == "checkpoint"
    assert rows[5]["resource"] == "r"
    assert rows[5]["location"].endswith(f"test_ls_public.py:{_line('lockstep.checkpoint(f')}")
    assert result.trace.preemptions == 1


def _line(fragment: str) -> int:
    import pathlib

    source = pathlib.Path(__file__).read_text().splitlines()
    return next(i for i, text in enumerate(source, 1) if fragment in text)


def test_stalled_execution_is_reported_and_cleaned_up():
    """A thread stuck on a *real* lock is reported as a stall, not a hang."""
    real = threading.Lock()
    real.acquire()

    def scenario():
        t = spawn(real.acquire)  # blocks the OS thread: lockstep cannot schedule around it
        t.join()

    try:
        failure = explore(scenario, budget=1, stall_timeout=0.3, shrink=False).failure
    finally:
        real.release()  # lets the stuck worker reach a switch point and unwind
    assert failure is not None
    assert failure.kind == "stall"
    assert "stalled" in failure.message
    assert "uncontrolled" in failure.message


def test_thread_spinning_without_switch_points_is_stopped():
    """A busy loop with no switch point stalls; teardown still stops the thread."""
    spinning = []

    def scenario():
        def spin():
            spinning.append(True)
            while True:
                pass

        spawn(spin).join()

    failure = explore(scenario, budget=1, stall_timeout=0.3, shrink=False).failure
    assert failure is not None
    assert failure.kind == "stall"
    assert "stalled" in failure.message
    assert spinning == [True]
    # the autouse fixture asserts that no lockstep worker thread is left running

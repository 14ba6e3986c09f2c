"""explore/replay: finding bugs, reproducing them exactly, reporting them precisely."""

from __future__ import annotations

import pathlib
import threading

import pytest
from samples.cli_scenarios import lost_update

import lockstep
from lockstep import DFSStrategy, PCTStrategy, RandomStrategy, Schedule, explore, replay, spawn
from lockstep.strategies import Choice
from lockstep.strategies._replay import ReplayStrategy


def lock_order_deadlock():
    """Two threads take two locks in opposite orders."""
    a, b = lockstep.threading.Lock(), lockstep.threading.Lock()

    def first():
        with a, b:
            pass

    def second():
        with b, a:
            pass

    x, y = spawn(first, name="first"), spawn(second, name="second")
    x.join()
    y.join()


def test_finds_lost_update_and_replays_it_from_a_file(tmp_path):
    """A failure's schedule, saved and loaded, replays to the same failure and schedule."""
    result = explore(lost_update, budget=500)
    failure = result.failure
    assert failure is not None
    assert failure.kind == "exception"
    assert isinstance(failure.exception, AssertionError)
    assert failure.schedule.scenario_id == "samples.cli_scenarios:lost_update"
    path = failure.schedule.save(tmp_path / "lost.json")
    loaded = Schedule.load(path)
    again = replay(lost_update, loaded)
    assert again.failure is not None
    assert again.failure.kind == "exception"
    assert str(again.failure.exception) == str(failure.exception)
    assert again.schedule.choices == failure.schedule.choices
    assert again.trace.to_rows() == failure.trace.to_rows()


def test_failure_report_has_message_swimlanes_and_replay_command():
    """str(failure) = message + swimlanes + the exact replay command."""
    failure = explore(lost_update, budget=500).failure
    assert failure is not None
    text = str(failure)
    assert "lost update: 1" in text
    assert "Traceback (most recent call last)" in text
    assert 'assert count == 2, f"lost update: {count}"' in text  # the user's frame
    assert "runtime.py" not in text  # lockstep's plumbing is hidden
    assert "0:main" in text
    assert "checkpoint read" in text
    assert failure.replay_command == f"lockstep replay '{failure.schedule.to_string()}'"
    assert text.rstrip().endswith(failure.replay_command)


def test_same_seed_same_trace_different_seeds_differ():
    """The scheduler is deterministic both ways."""

    def traces(seed):
        recorded = []

        def scenario():
            box = []
            threads = [spawn(box.append, i) for i in range(3)]
            for t in threads:
                t.join()
            recorded.append(tuple(box))

        explore(scenario, strategy=RandomStrategy(seed), budget=20)
        return recorded

    assert traces(1) == traces(1)
    assert traces(1) != traces(2)


def test_same_seed_same_failure_schedule():
    """Two explorations with one seed report the identical schedule."""
    first = explore(lost_update, strategy=RandomStrategy(7), budget=500).failure
    second = explore(lost_update, strategy=RandomStrategy(7), budget=500).failure
    assert first is not None
    assert second is not None
    assert first.schedule == second.schedule


def test_deadlock_table_names_threads_resources_holders_and_lines():
    """The deadlock table: each thread, what it waits on, who holds it, where."""
    failure = explore(lock_order_deadlock, budget=500).failure
    assert failure is not None
    assert failure.kind == "deadlock"
    rows = {row.thread_name: row for row in failure.deadlock}
    assert set(rows) == {"main", "first", "second"}
    assert rows["first"].operation == "Lock.acquire"
    assert rows["first"].resource == "Lock#2"
    assert rows["first"].holders == ("2:second",)
    assert rows["second"].resource == "Lock#1"
    assert rows["second"].holders == ("1:first",)
    assert rows["main"].operation == "Thread.join"
    source = pathlib.Path(__file__).read_text().splitlines()
    line = source.index("        with a, b:") + 1
    assert rows["first"].location == f"{__file__}:{line}"
    table = failure.deadlock_table()
    assert "held by" in table
    assert "Lock#2" in table


def test_divergence_is_reported_precisely():
    """Replaying a choice that is not runnable names the step and the runnable set."""
    # main starts, starts two threads, then blocks in join: thread 0 is not runnable.
    schedule = Schedule(choices=(Choice(0), Choice(0), Choice(0), Choice(0)))
    result = replay(lost_update, schedule)
    assert result.failure is not None
    assert result.failure.kind == "divergence"
    assert result.failure.message == "step 3: expected thread 0, runnable were [1, 2]"


def test_divergence_when_the_schedule_has_leftover_choices():
    """A schedule longer than the execution is a divergence too."""
    good = explore(lost_update, strategy=DFSStrategy(), budget=1, shrink=False)
    assert good.failure is None

    def trivial():
        pass

    result = replay(trivial, Schedule(choices=(Choice(0), Choice(0), Choice(0))))
    assert result.failure is not None
    assert result.failure.kind == "divergence"
    assert "more choice(s)" in result.failure.message


def test_shrinking_reduces_preemptions():
    """A failure found with many preemptions is shrunk to the minimum (one)."""
    unshrunk = explore(lost_update, strategy=RandomStrategy(3), budget=500, shrink=False)
    shrunk = explore(lost_update, strategy=RandomStrategy(3), budget=500)
    assert unshrunk.failure is not None
    assert shrunk.failure is not None
    assert shrunk.failure.preemptions <= unshrunk.failure.preemptions
    assert shrunk.failure.preemptions == 1
    assert len(shrunk.failure.trace) <= len(unshrunk.failure.trace)
    assert shrunk.failure.signature == unshrunk.failure.signature
    # the shrunk schedule really fails that way
    again = replay(lost_update, shrunk.failure.schedule)
    assert again.failure is not None
    assert again.failure.signature == shrunk.failure.signature


def _half_way_move(state, *, concurrent_main):
    """`move` breaks a == b between its two halves; `concurrent_main` keeps the main
    thread runnable meanwhile (it passes a checkpoint before joining)."""

    def move():
        state["a"] += 1
        lockstep.checkpoint("half-way")
        state["b"] += 1

    thread = spawn(move)
    if concurrent_main:
        lockstep.checkpoint("main")
    thread.join()


def test_invariant_checked_where_another_thread_could_run():
    """An add_invariant violated where another thread could run next is a failure of kind
    "invariant"."""

    def scenario():
        state = {"a": 0, "b": 0}

        def balanced():
            assert state["a"] == state["b"], state

        lockstep.add_invariant(balanced)
        _half_way_move(state, concurrent_main=True)

    failure = explore(scenario, strategy=DFSStrategy(), budget=10).failure
    assert failure is not None
    assert failure.kind == "invariant"
    assert failure.invariant.endswith("balanced")
    assert "violated" in failure.message


def test_invariant_not_checked_while_one_thread_alone_can_go_on():
    """Where the running thread is the only one that can go on, no other thread can see
    the state: a violation that stretch repairs is not reported, and the invariant is
    not called there (it runs where a choice is made and where the execution ends)."""
    calls: list[int | None] = []

    def scenario():
        state = {"a": 0, "b": 0}

        def balanced():
            calls.append(lockstep.lowlevel.current_step())
            assert state["a"] == state["b"], state

        lockstep.add_invariant(balanced)
        _half_way_move(state, concurrent_main=False)

    result = explore(scenario, strategy=DFSStrategy(), budget=10, shrink=False)
    assert result.failure is None
    assert result.executions == 1  # never two choices: one interleaving
    calls.clear()
    # Replayed from no choices at all (every step has one), to see its trace.
    run = replay(scenario, Schedule(choices=()))
    assert run.failure is None
    steps = run.trace.steps
    alone = {  # steps where the thread that ran last alone could go on
        s.index for s in steps[1:] if s.enabled == {steps[s.index - 1].thread} and not s.timeouts
    }
    assert alone  # the moving thread's checkpoint and what follows it
    assert calls
    assert not alone & set(calls)
    assert len(steps) in calls  # where the execution ended
    # Everywhere else it ran.
    assert set(calls) == set(range(1, len(steps) + 1)) - alone


def test_an_each_step_invariant_runs_where_one_thread_alone_can_go_on_too():
    """``each_step=True`` is for bounds on resources: a violation the lone stretch
    repairs is reported at the step where it held."""
    calls: list[int | None] = []

    def scenario():
        state = {"a": 0, "b": 0}

        def balanced():
            calls.append(lockstep.lowlevel.current_step())
            assert state["a"] == state["b"], state

        lockstep.add_invariant(balanced, each_step=True)
        _half_way_move(state, concurrent_main=False)

    failure = explore(scenario, strategy=DFSStrategy(), budget=10, shrink=False).failure
    assert failure is not None
    assert failure.kind == "invariant"
    assert "{'a': 1, 'b': 0}" in failure.message
    assert calls == list(range(1, len(calls) + 1))  # at every step up to the failure


def test_add_invariant_rejects_a_non_bool_each_step():
    seen: list[str] = []

    def scenario():
        with pytest.raises(lockstep.errors.InvalidArgumentType, match="each_step must be a bool"):
            lockstep.add_invariant(lambda: None, each_step="yes")
        seen.append("raised")

    assert explore(scenario, budget=1).failure is None
    assert seen == ["raised"]


def test_a_violation_that_lasts_past_a_lone_stretch_is_reported_where_it_ends():
    """A state broken while one thread alone could go on is still reported once another
    thread can run (here: where the execution ends)."""

    def scenario():
        state = {"a": 0, "b": 0}

        def balanced():
            assert state["a"] == state["b"], state

        lockstep.add_invariant(balanced)

        def half():
            state["a"] += 1
            lockstep.checkpoint("half-way")

        spawn(half).join()

    failure = explore(scenario, strategy=DFSStrategy(), budget=10).failure
    assert failure is not None
    assert failure.kind == "invariant"
    assert "{'a': 1, 'b': 0}" in failure.message


def test_a_schedule_replays_on_past_its_end_through_steps_with_one_choice():
    """A step with one choice decides nothing: a schedule that ends before such steps
    still replays (here: a recorded schedule cut after its last real choice)."""
    failure = explore(lost_update, strategy=RandomStrategy(seed=0), budget=100)
    assert failure.failure is not None
    steps = failure.failure.trace.steps
    last_choice = max(i for i, s in enumerate(steps) if len(s.enabled) + len(s.timeouts) > 1)
    schedule = failure.failure.schedule
    assert last_choice + 1 < len(schedule.choices)  # steps with one choice follow
    cut = schedule.with_choices(schedule.choices[: last_choice + 1])
    again = replay(lost_update, cut)
    assert again.failure is not None
    assert again.failure.kind == failure.failure.kind
    assert again.failure.message == failure.failure.message
    # Cut before a step with two choices, it diverges and says where.
    early = schedule.with_choices(schedule.choices[:last_choice])
    diverged = replay(lost_update, early)
    assert diverged.failure is not None
    assert diverged.failure.kind == "divergence"
    assert "the schedule ended after" in diverged.failure.message


def test_explore_invariant_argument_and_lock_inside_invariant():
    """invariant= runs in every execution; lock operations inside it are no-ops."""
    holder = {}

    def scenario():
        holder["lock"] = lock = lockstep.threading.Lock()
        holder["n"] = 0

        def work():
            with lock:
                holder["n"] += 1

        spawn(work).join()

    def invariant():
        if "lock" in holder:
            with holder["lock"]:
                assert holder["n"] <= 1

    result = explore(scenario, budget=20, invariant=invariant)
    assert result.failure is None


def test_step_limit():
    """A spin loop hits the step limit."""

    def scenario():
        flag = lockstep.threading.Event()
        while not flag.is_set():
            pass

    failure = explore(scenario, budget=1, max_steps=50).failure
    assert failure is not None
    assert failure.kind == "step_limit"
    assert "step limit of 50" in failure.message


def test_exception_in_spawned_thread_is_a_failure_and_threads_are_torn_down():
    """An exception in any thread fails the execution; blocked threads are aborted."""

    def scenario():
        never = lockstep.threading.Event()
        spawn(never.wait, name="stuck")
        spawn(lambda: 1 / 0, name="boom")
        never.wait()

    before = threading.active_count()
    failure = explore(scenario, budget=5).failure
    assert failure is not None
    assert failure.kind == "exception"
    assert isinstance(failure.exception, ZeroDivisionError)
    assert failure.thread_name == "boom"
    assert threading.active_count() == before


def test_many_executions_leave_no_threads():
    """Thousands of executions, some failing, leave no OS threads behind."""
    before = threading.active_count()

    def scenario():
        ev = lockstep.threading.Event()
        t = spawn(ev.wait)
        lockstep.checkpoint("x")
        ev.set()
        t.join()

    result = explore(scenario, budget=300)
    assert result.executions == 300
    assert threading.active_count() == before


def test_pct_reports_its_bound():
    """PCT's result carries 1/(n*k^(d-1)) for the observed n and k."""
    result = explore(lost_update, strategy=PCTStrategy(seed=0, depth=2), budget=1, shrink=False)
    n = result.max_threads
    k = result.max_steps_seen
    assert result.pct_bound == pytest.approx(1 / (n * k))
    # said in words a reader without the PCT paper understands
    assert f"probability at least {result.pct_bound:.3g}]" in result.summary()
    assert "PCT bound" not in result.summary()


def test_replay_strategy_is_one_execution():
    """ReplayStrategy says "no more" after one execution."""
    failure = explore(lost_update, budget=500).failure
    assert failure is not None
    result = explore(lost_update, strategy=ReplayStrategy(failure.schedule), budget=10)
    assert result.executions == 1
    assert result.failure is not None


def test_argument_validation():
    """Bad arguments raise precise errors before anything runs."""
    with pytest.raises(lockstep.errors.InvalidArgumentType, match="scenario must be"):
        explore(42)  # type: ignore[arg-type]
    with pytest.raises(lockstep.InvalidArgument, match="budget must be >= 1"):
        explore(lost_update, budget=0)
    with pytest.raises(lockstep.InvalidArgument, match="granularity"):
        explore(lost_update, granularity="bytecode")
    with pytest.raises(lockstep.errors.InvalidArgumentType, match="strategy must implement"):
        explore(lost_update, strategy=object())  # type: ignore[arg-type]
    with pytest.raises(lockstep.errors.NotInRunError):
        lockstep.add_invariant(lambda: None)
    with pytest.raises(lockstep.errors.InvalidArgumentType, match="label must be a str"):
        lockstep.checkpoint(3)  # type: ignore[arg-type]


def test_line_granularity_finds_unsynchronised_race():
    """granularity="line" adds switch points inside the chosen module's lines."""
    import samples.racy_module as racy

    def scenario():
        counter = racy.Counter()
        threads = [spawn(counter.increment) for _ in range(2)]
        for t in threads:
            t.join()
        assert counter.value == 2

    op = explore(scenario, budget=200, shrink=False)
    assert op.failure is None  # no switch point inside increment at op granularity
    line = explore(scenario, budget=200, granularity="line", line_modules=[racy])
    assert line.failure is not None
    assert line.failure.schedule.granularity == "line"
    again = replay(scenario, line.failure.schedule, line_modules=[racy])
    assert again.failure is not None
    assert again.schedule.choices == line.failure.schedule.choices
    # The schedule records the traced module, so replay needs no line_modules.
    assert line.failure.schedule.line_modules == ("samples.racy_module",)
    recorded = replay(scenario, Schedule.from_string(line.failure.schedule.to_string()))
    assert recorded.failure is not None
    assert recorded.schedule.choices == line.failure.schedule.choices


def patched_lost_update():
    """Races only when samples.counter_module is patched."""
    from samples import counter_module

    counter = counter_module.Counter(locked=False)
    threads = [spawn(counter.increment), spawn(counter.increment)]
    for t in threads:
        t.join()
    assert counter.value == 2, f"patched lost update: {counter.value}"


def test_schedules_record_the_patch_and_replay_uses_it():
    """explore(patch=...) records the module names in every schedule; replay() patches
    them unless told otherwise, and records what it used."""
    from samples import counter_module

    unpatched = explore(patched_lost_update, budget=200)
    assert unpatched.failure is None  # real time.sleep: no switch point, no race
    result = explore(patched_lost_update, budget=300, patch=[counter_module])
    failure = result.failure
    assert failure is not None
    assert failure.schedule.patch == ("samples.counter_module",)
    assert failure.schedule.line_modules == ()

    loaded = Schedule.from_json(failure.schedule.to_json())
    again = replay(patched_lost_update, loaded)
    assert again.failure is not None
    assert str(again.failure.exception).startswith("patched lost update: 1")
    assert again.schedule == failure.schedule
    assert again.failure.replay_command == f"lockstep replay '{loaded.to_string()}'"

    # An explicit patch list replaces the recorded one (here: nothing patched).
    bare = replay(patched_lost_update, loaded, patch=())
    assert bare.failure is not None
    assert bare.failure.kind == "divergence"
    assert bare.schedule.patch == ()
    assert bare.failure.replay_command is not None
    assert Schedule.from_string(bare.failure.replay_command.split("'")[1]).patch == ()


def test_patch_names_are_validated_before_running():
    """A module that cannot be imported, or a non-module, is rejected up front."""
    with pytest.raises(lockstep.InvalidArgument, match="cannot import module 'no_such_mod_q'"):
        explore(lost_update, budget=1, patch=["no_such_mod_q"])
    with pytest.raises(lockstep.errors.InvalidArgumentType, match="expected a module"):
        explore(lost_update, budget=1, patch=[3])  # type: ignore[list-item]
    schedule = Schedule(choices=(Choice(0),), patch=("no_such_mod_q",))
    with pytest.raises(lockstep.InvalidArgument, match="cannot import module 'no_such_mod_q'"):
        replay(lost_update, schedule)

"""One home each: a lenient replay, the building of a Failure, the argument errors.

* ``GuidedStrategy`` is lockstep's one lenient replay (the shrinker's candidates and
  models_spec's "follow" mode used two copies of it).
* A ``Failure`` of an execution is built by the Run only (``Run.failure`` and
  ``Run.failure_after``), not assembled again by explore() and replay().
* ``InvalidArgument`` stays one per package, under each package's root: lockstep
  and modelmanager do not import each other, and a caller catches one root per
  package.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import lockstep
import modelmanager
from lockstep import Schedule
from lockstep.errors import InvalidArgumentType, LockstepError, NondeterminismDetected
from lockstep.strategies import (
    Capabilities,
    Choice,
    ExecutionOutcome,
    GuidedStrategy,
    StepContext,
)


def _two_workers() -> None:
    log: list[str] = []
    lock = lockstep.threading.Lock()

    def work(name: str) -> None:
        with lock:
            log.append(name)

    threads = [lockstep.spawn(work, "a"), lockstep.spawn(work, "b")]
    for t in threads:
        t.join()


class _Recorded(GuidedStrategy):
    """A GuidedStrategy that keeps the choices of each execution it ends."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.runs: list[tuple[Choice, ...]] = []

    def end_execution(self, outcome: ExecutionOutcome) -> bool:
        self.runs.append(outcome.choices)
        return super().end_execution(outcome)


class _Recorder:
    """Wraps a strategy and keeps the choices of each execution."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.capabilities = inner.capabilities
        self.runs: list[tuple[Choice, ...]] = []

    def begin_execution(self) -> None:
        self.inner.begin_execution()

    def choose(self, choices: Sequence[Choice], step: StepContext) -> Choice:
        chosen: Choice = self.inner.choose(choices, step)
        return chosen

    def end_execution(self, outcome: ExecutionOutcome) -> bool:
        self.runs.append(outcome.choices)
        more: bool = self.inner.end_execution(outcome)
        return more


def test_guided_skips_a_choice_that_is_not_offered_then_runs_the_default() -> None:
    """An impossible choice is skipped; past the guide's end the execution goes on
    non-preemptively; one execution, whatever the budget."""
    guide = (Choice.of(5), Choice.of(0), Choice.of(7))
    strategy = _Recorded(guide, name="follow")
    result = lockstep.explore(_two_workers, strategy=strategy, budget=5, progress=False)
    assert result.ok
    assert result.executions == 1
    assert result.strategy == "follow"
    (run,) = strategy.runs
    assert run[0] == Choice.of(0)
    assert all(choice.thread in (0, 1, 2) for choice in run)


def test_guided_follows_a_schedule_exactly_where_it_can() -> None:
    """On the code it was recorded on, a guide gives the recorded choices back."""
    random = _Recorder(lockstep.RandomStrategy(3))
    lockstep.explore(_two_workers, strategy=random, budget=1, progress=False)
    (recorded,) = random.runs
    guided = _Recorded(Schedule(recorded))
    result = lockstep.explore(_two_workers, strategy=guided, budget=1, progress=False)
    assert guided.runs == [recorded]
    assert result.strategy == "guided"


@pytest.mark.parametrize(
    ("choices", "name"),
    [((Choice.of(0), "1"), "guided"), ((Choice.of(0),), 3)],
)
def test_guided_refuses_what_is_not_a_choice_or_a_name(choices: object, name: object) -> None:
    """Validated when built (InvalidArgumentType, a LockstepError)."""
    with pytest.raises(InvalidArgumentType):
        GuidedStrategy(choices, name=name)  # type: ignore[arg-type]


def test_guided_takes_a_schedule() -> None:
    """A Schedule's choices are the guide."""
    assert GuidedStrategy(Schedule((Choice.of(1),))).choices == (Choice.of(1),)


def _calls_named(path: Path, name: str) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Name) and node.func.id == name)
            or (isinstance(node.func, ast.Attribute) and node.func.attr == name)
        )
    ]


def test_a_failure_is_built_by_the_run_only() -> None:
    """No module but the scheduler constructs a Failure."""
    package = Path(lockstep.__file__).parent
    builders = {
        path.relative_to(package).as_posix(): lines
        for path in sorted(package.rglob("*.py"))
        if (lines := _calls_named(path, "Failure"))
    }
    assert list(builders) == ["_runtime.py"]
    assert len(builders["_runtime.py"]) == 1


def test_a_strategy_failure_carries_the_execution() -> None:
    """A strategy that declares a failure after an execution gets a Failure with that
    execution's schedule and trace (``Run.failure_after``)."""

    class Refuses:
        capabilities = Capabilities(name="refuses")

        def begin_execution(self) -> None:
            pass

        def choose(self, choices, step):  # type: ignore[no-untyped-def]
            return choices[0]

        def end_execution(self, outcome):  # type: ignore[no-untyped-def]
            raise NondeterminismDetected("told so")

    result = lockstep.explore(_two_workers, strategy=Refuses(), budget=3, progress=False)
    failure = result.failure
    assert failure is not None
    assert failure.kind == "nondeterminism"
    assert failure.message == "told so"
    assert failure.thread is None
    assert failure.schedule.choices
    assert len(failure.trace.steps) == len(failure.schedule.choices)


def test_each_package_has_its_own_invalid_argument_under_its_root() -> None:
    """Two classes on purpose: one root error per package, no import between them."""
    assert issubclass(lockstep.InvalidArgument, LockstepError)
    assert issubclass(modelmanager.InvalidArgument, modelmanager.ModelManagerError)
    assert not issubclass(lockstep.InvalidArgument, modelmanager.ModelManagerError)
    assert not issubclass(modelmanager.InvalidArgument, LockstepError)
    for cls in (lockstep.InvalidArgument, modelmanager.InvalidArgument):
        assert issubclass(cls, ValueError)

"""One execution, and what explore(), replay() and shrinking derive from their Settings."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from types import ModuleType

import attrs

from lockstep import _primitives as primitives
from lockstep._backend import resolve_backend
from lockstep._backend_protocol import Backend
from lockstep._imports import main_module_name
from lockstep._patching import exit_hooks_for, resolve_module
from lockstep._runtime import Run, in_run
from lockstep._schedule import Choice, Schedule
from lockstep._settings import Settings
from lockstep.errors import InvalidArgument, InvalidArgumentType, LockstepError, ScheduleDivergence
from lockstep.strategies._base import ExecutionOutcome, StepContext, Strategy
from lockstep.strategies._capabilities import Capabilities
from lockstep.strategies._replay import describe_choice

__all__ = [
    "ModuleRef",
    "Options",
    "Scenario",
    "check_scenario",
    "make_options",
    "module_names",
    "replay_command_for",
    "run_execution",
    "scenario_id_of",
]

Scenario = Callable[[], object]
ModuleRef = ModuleType | str


@attrs.frozen
class Options:
    """What one exploration, replay or shrink runs with: the caller's Settings, and what
    was derived from them and from the code under test once, before the first execution
    (the invariants as a tuple, the traced files, the backend resolved to a name)."""

    settings: Settings
    invariants: tuple[Callable[[], object], ...] = ()
    line_files: frozenset[str] = frozenset()
    backend: str = "thread"


def scenario_id_of(scenario: object) -> str | None:
    """ "module:qualname" when ``scenario`` can be imported back by that name, else None.

    A function of a script run as ``__main__`` is named by the module it would be
    imported as: ``python -m pkg.mod`` gives ``pkg.mod``, ``python path/to/script.py``
    gives ``script`` (the schedule records the script's directory in its import paths,
    so ``lockstep replay`` finds it from any directory). Closures and lambdas
    (``<locals>`` / ``<lambda>`` in the qualname) cannot be imported: None (pass
    ``scenario_id=`` to explore).
    """
    module = getattr(scenario, "__module__", None)
    qualname = getattr(scenario, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str):
        return None
    if "<" in qualname:
        return None
    if module == "__main__":
        module = main_module_name()
        if module is None:
            return None
    return f"{module}:{qualname}"


def module_names(modules: Iterable[ModuleRef]) -> tuple[str, ...]:
    """Dotted names of modules given as objects or names (what a Schedule records).

    Raises InvalidArgumentType for anything else and InvalidArgument for a name that
    cannot be imported (names are resolved, so a schedule records only real modules).
    """
    names = []
    for m in modules:
        name = resolve_module(m).__name__
        if name == "__main__":
            name = main_module_name() or name  # the name a replay imports it by
        names.append(name)
    return tuple(names)


def replay_command_for(
    schedule: Schedule,
    *,
    patch: Iterable[ModuleRef] | None = None,
    line_modules: Iterable[ModuleRef] | None = None,
) -> str | None:
    """The shell command replaying ``schedule`` (None without a scenario id).

    The schedule string records the modules to patch and to trace, so the command needs
    no ``--patch`` / ``--line-module`` flags: ``patch`` / ``line_modules``, when given,
    replace the recorded lists inside the encoded string.
    """
    if schedule.scenario_id is None:
        return None
    recorded = schedule.with_modules(
        patch=None if patch is None else module_names(patch),
        line_modules=None if line_modules is None else module_names(line_modules),
    )
    return f"lockstep replay '{recorded.to_string()}'"


def run_execution(
    scenario: Scenario, strategy: Strategy, options: Options, template: Schedule, backend: Backend
) -> Run:
    """Run one execution on ``backend`` (begin_execution is the caller's job); return the Run.

    ``backend`` is opened by the caller for the whole series of executions
    (``open_backend(options.backend)``).

    With races reported, the reads of a watched attribute are recorded from its first
    write in the process on (``lockstep._memory._instances``): an execution that writes
    one whose earlier reads went unrecorded stops there (``Run.restart``) and runs again
    from the start with the same choices, then goes on with ``strategy``, recording
    them. Only the last attempt is returned: the same execution, checked in full.
    """
    attempt: Strategy = strategy
    settings = options.settings
    for _ in range(_MAX_RESTARTS + 1):
        run = Run(
            attempt,
            max_steps=settings.max_steps,
            schedule_template=template,
            invariants=options.invariants,
            line_files=options.line_files,
            stall_timeout=settings.stall_timeout,
            stall_diagnosis=settings.stall_diagnosis,
            backend=backend,
            exit_hooks=exit_hooks_for,
            thread_factory=primitives.Thread._ls_for_run,
            races=settings.races,
        )
        try:
            run.execute(scenario)
        finally:
            run.restore_exit_globals()
            if run.memory is not None:
                run.memory.close()
        if not run.restart:
            return run
        attempt = _Resumed(tuple(run.choices), strategy)
    raise LockstepError(  # each restart adds a descriptor for good: never reached
        f"an execution was run again {_MAX_RESTARTS} times to record reads of watched "
        "attributes and still met one unrecorded (a bug in lockstep)"
    )


_MAX_RESTARTS = 1000


class _Resumed:
    """The strategy of an execution run again (``Run.restart``): the choices the attempt
    before made, then ``strategy``, which made them, going on from where it was (it is
    not told of a new execution: to it this is the same one)."""

    name = "resumed"
    capabilities = Capabilities(name="resumed")

    def __init__(self, prefix: tuple[Choice, ...], strategy: Strategy) -> None:
        self._prefix = prefix
        self._strategy = strategy
        self._position = 0

    def begin_execution(self) -> None:
        """Never called: the execution began already."""

    def choose(self, choices: Sequence[Choice], step: StepContext) -> Choice:
        """The attempt's choice again while they last, then ``strategy``'s."""
        position = self._position
        if position < len(self._prefix):
            self._position = position + 1
            wanted = self._prefix[position]
            if wanted not in choices:
                raise ScheduleDivergence(
                    f"step {step.step}: an execution run again from the start (to record "
                    f"reads of a watched attribute) met different choices: expected "
                    f"{describe_choice(wanted)}, runnable were {sorted(step.enabled)}; "
                    "the scenario does not behave the same for the same choices"
                )
            return wanted
        return self._strategy.choose(choices, step)

    def end_execution(self, outcome: ExecutionOutcome) -> bool:
        """Never called: the caller ends the execution with ``strategy``."""
        return False


def check_scenario(scenario: object) -> None:
    if not callable(scenario):
        raise InvalidArgumentType(f"scenario must be a zero-argument callable, got {scenario!r}")
    if in_run():
        raise LockstepError("explore()/replay() cannot be called from inside a lockstep run")


def _module_file(module: ModuleRef) -> str:
    resolved = resolve_module(module)
    filename = getattr(resolved, "__file__", None)
    if not isinstance(filename, str) or not filename:
        raise InvalidArgument(f"module {resolved.__name__!r} has no source file to trace")
    return os.path.abspath(filename)


def make_options(
    settings: Settings,
    *,
    invariant: Callable[[], object] | Sequence[Callable[[], object]] | None,
    line_modules: Iterable[ModuleRef],
) -> Options:
    """Check ``settings`` against the code under test and derive what every execution
    needs (raises InvalidArgument / InvalidArgumentType; the settings validated
    themselves when they were built)."""
    if not isinstance(settings, Settings):
        raise InvalidArgumentType(f"settings must be a lockstep.Settings, got {settings!r}")
    invariants: tuple[Callable[[], object], ...]
    if invariant is None:
        invariants = ()
    elif callable(invariant):
        invariants = (invariant,)
    else:
        invariants = tuple(invariant)
        for fn in invariants:
            if not callable(fn):
                raise InvalidArgumentType(f"invariant must be callable, got {fn!r}")
    modules = tuple(line_modules)
    if settings.granularity == "line" and not modules:
        raise InvalidArgument("granularity='line' needs line_modules=[module, ...] to trace")
    if settings.granularity == "op" and modules:
        raise InvalidArgument("line_modules only makes sense with granularity='line'")
    backend_name = resolve_backend(settings.backend)
    files = frozenset(_module_file(m) for m in modules)
    return Options(settings, invariants, files, backend_name)

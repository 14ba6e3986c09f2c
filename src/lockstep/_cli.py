"""The ``lockstep`` command: replay, show, explore, check, compare.

Exit codes (every subcommand):
  0    success: no failure found / the replay passed / every case of every suite passed
  1    a failure was found (FAIL, CORE-FAIL, ESCAPED, ERROR) / the replay reproduced the
       recorded failure / ``compare``: something fails that did not before
  2    usage: a bad option, or an input that cannot be used (a schedule, scenario,
       target or output path), said in one line
  3    replay: a different failure than the schedule recorded
  4    replay: diverged: the code no longer takes a recorded step (the bug may be
       fixed; re-record)
  130  interrupted (Ctrl-C); ``check`` prints and saves what finished first

``replay`` of several schedules exits with the code of the most urgent outcome
among them: 3, then 1, then 4, then 0 (``lockstep._outcome``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

from lockstep._backend import BACKEND_NAMES
from lockstep._backend import ENV_VAR as BACKEND_ENV_VAR
from lockstep._check import CheckUsageError, available_cpus, run_check
from lockstep._compare import compare
from lockstep._explore import explore, replay
from lockstep._failure import format_exception
from lockstep._imports import add_import_roots
from lockstep._outcome import (
    REPLAY_EXIT_CODES,
    ReplayOutcome,
    classify_replay,
    combined_exit_code,
)
from lockstep._patching import resolve_module
from lockstep._replay_files import expand_sources, outcome_table
from lockstep._results import ExecutionResult
from lockstep._schedule import Schedule, choices_to_string
from lockstep._settings import Settings
from lockstep._text import abbreviate
from lockstep._version import LOCKSTEP_VERSION
from lockstep.errors import LockstepError, ScenarioImportError
from lockstep.strategies._registry import STRATEGY_NAMES, make_strategy
from lockstep.suites import Shard, SuiteOptions

__all__ = [
    "EXIT_DIFFERENT_FAILURE",
    "EXIT_DIVERGED",
    "EXIT_FAILURE",
    "EXIT_INPUT",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "build_parser",
    "load_scenario",
    "main",
    "settings_from_args",
]

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INPUT = EXIT_USAGE  # an unusable input is a usage error: one line says which and why
EXIT_INTERRUPTED = 130
EXIT_DIFFERENT_FAILURE = REPLAY_EXIT_CODES["different failure"]  # replay: not the recorded one
EXIT_DIVERGED = REPLAY_EXIT_CODES["diverged"]  # replay: the code no longer takes a recorded step

_EPILOG = """exit codes:
  0    success: no failure found / the replay passed / every suite passed
  1    a failure was found (FAIL, CORE-FAIL, ESCAPED, ERROR) / replay: reproduced,
       the recorded failure again / compare: something fails that did not before
  2    usage: a bad option, or an input that could not be loaded (schedule, scenario,
       target, output path); one line says which and why
  3    replay: a different failure than the schedule recorded
  4    replay: diverged, the code no longer takes a recorded step: the code
       changed here, the bug may be fixed; re-record
  130  interrupted (Ctrl-C); check prints and saves what finished first
replay of several schedules: the most urgent code among them (3, 1, 4, 0)"""


_DEFAULTS = Settings()  # the flags' defaults are the settings' own


class _InputError(Exception):
    """An input could not be loaded: exit code 2 with this message."""


def _import_error_cause(exc: BaseException) -> str:
    """The root cause of an import failure, in one line."""
    cause: BaseException = exc
    while cause.__cause__ is not None and cause.__cause__ is not cause:
        cause = cause.__cause__
    text = str(cause).strip().splitlines()[0] if str(cause).strip() else ""
    return abbreviate(f"{type(cause).__name__}: {text}" if text else type(cause).__name__, 200)


def load_scenario(scenario_id: str) -> Callable[[], object]:
    """Import "module:qualname" (the current directory is importable) and return it.

    Raises ScenarioImportError with one line naming the module or attribute and why.
    """
    shown = abbreviate(scenario_id)
    module_name, sep, qualname = scenario_id.partition(":")
    if not sep or not module_name or not qualname:
        raise ScenarioImportError(f"scenario must look like 'module:qualname', got {shown!r}")
    if module_name == "pytest":
        raise ScenarioImportError(
            f"this schedule belongs to the pytest test {abbreviate(qualname)!r}; replay it "
            f"with `pytest '{abbreviate(qualname, 200)}' --lockstep-replay FILE`"
        )
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ScenarioImportError(
            f"cannot import module {abbreviate(module_name)!r}: {_import_error_cause(exc)}"
        ) from exc
    except Exception as exc:  # the module raised while importing
        raise ScenarioImportError(
            f"importing module {abbreviate(module_name)!r} failed: {_import_error_cause(exc)}"
        ) from exc
    for part in qualname.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            detail = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise ScenarioImportError(
                f"module {abbreviate(module_name)!r} has no attribute {abbreviate(qualname)!r}"
                + (f" ({abbreviate(detail, 200)})" if detail and part not in detail else "")
            ) from exc
    if not callable(obj):
        raise ScenarioImportError(f"{shown!r} is not callable")
    scenario: Callable[[], object] = obj
    return scenario


def _load_schedule(source: str) -> Schedule:
    try:
        if source.startswith("ls1:"):
            return Schedule.from_string(source)
        return Schedule.load(source)
    except (LockstepError, OSError) as exc:
        raise _InputError(
            f"cannot load schedule {abbreviate(source, 60)!r}: {abbreviate(str(exc), 300)}"
        ) from exc


def _scenario_for(schedule: Schedule, override: str | None) -> Callable[[], object]:
    scenario_id = override or schedule.scenario_id
    if scenario_id is None:
        raise _InputError("the schedule names no scenario; pass --scenario module:qualname")
    missing = [p for p in schedule.import_paths if not os.path.isdir(p)]
    add_import_roots(schedule.import_paths)
    try:
        return load_scenario(scenario_id)
    except ScenarioImportError as exc:
        hint = ""
        if missing:
            hint = (
                f" (the schedule was recorded with its modules in {', '.join(missing)}, "
                "which does not exist here: run from the project's directory)"
            )
        raise _InputError(f"{exc}{hint}") from exc


def _check_recorded_modules(schedule: Schedule, args: argparse.Namespace) -> None:
    """The modules the schedule records (unless overridden) must import: else exit 2."""
    recorded = [
        *(schedule.patch if args.patch is None else ()),
        *(schedule.line_modules if args.line_module is None else ()),
    ]
    for name in recorded:
        try:
            resolve_module(name)
        except LockstepError as exc:
            raise _InputError(
                f"the schedule's recorded module {abbreviate(name)!r}: {abbreviate(str(exc), 300)}"
            ) from exc


def _replay(args: argparse.Namespace, out: TextIO) -> int:
    sources = expand_sources(args.schedule)
    if not sources:
        raise _InputError(f"no schedule files in {', '.join(args.schedule)}")
    loaded = [(source, _load_schedule(source)) for source in sources]
    outcomes: list[tuple[str, ReplayOutcome]] = []
    for source, schedule in loaded:
        scenario = _scenario_for(schedule, args.scenario)
        _check_recorded_modules(schedule, args)
        result = replay(
            scenario,
            schedule,
            settings_from_args(args),
            patch=args.patch,
            line_modules=args.line_module,
        )
        outcome = classify_replay(schedule, result)
        outcomes.append((source, outcome))
        if len(loaded) == 1:
            said = f"replay outcome: {outcome.headline} (exit {outcome.exit_code})"
            description = scenario_description(scenario)
            if result.failure is None:
                if description:
                    print(description, end="\n\n", file=out)
                print(
                    f"replayed {result.steps} steps of {schedule.scenario_id}: no failure", file=out
                )
                print(said, file=out)
            else:
                # The outcome goes before the replay command, which stays the last line.
                command = _same_command(args, source)
                text = result.failure.with_replay_command(command).render(
                    verbose=args.verbose, description=description
                )
                head, sep, tail = text.rpartition("\n\nReplay it with:")
                print(f"{head}\n\n{said}{sep}{tail}" if sep else f"{text}\n\n{said}", file=out)
    if len(loaded) > 1:
        for line in outcome_table(outcomes):
            print(line, file=out)
    return combined_exit_code(outcome for _, outcome in outcomes)


def scenario_description(scenario: object) -> str:
    """What a scenario callable says it does (its ``__lockstep_description__`` string: a
    title and each thread's operations), printed before its replay; "" when it says
    nothing."""
    description = getattr(scenario, "__lockstep_description__", "")
    return description.strip() if isinstance(description, str) else ""


def _same_command(args: argparse.Namespace, source: str) -> str:
    """The command line that replays `source` as this ``lockstep replay`` invocation did."""
    if not source.startswith("ls1:") and os.path.exists(source):
        source = os.path.abspath(source)  # pasted from any directory, it still finds it
    parts = ["lockstep", "replay", source]
    if args.scenario:
        parts += ["--scenario", args.scenario]
    for module in args.patch or ():
        parts += ["--patch", module]
    for module in args.line_module or ():
        parts += ["--line-module", module]
    if args.backend is not None:
        parts += ["--backend", args.backend]
    return shlex.join(parts)


def _show(args: argparse.Namespace, out: TextIO) -> int:
    schedule = _load_schedule(args.schedule)
    print(f"scenario:  {schedule.scenario_id}", file=out)
    print(f"strategy:  {schedule.strategy} (seed {schedule.seed})", file=out)
    print(
        f"versions:  python {schedule.python_version}, lockstep {schedule.lockstep_version}, "
        f"format {schedule.format_version}, granularity {schedule.granularity}",
        file=out,
    )
    print(f"patch:     {_names(schedule.patch)}", file=out)
    if schedule.import_paths:
        print(f"imports:   {_names(schedule.import_paths)}", file=out)
    if schedule.granularity == "line":
        print(f"lines of:  {_names(schedule.line_modules)}", file=out)
    choices = choices_to_string(schedule.choices)
    print(f"choices:   {len(schedule.choices)}: {abbreviate(choices, 400)}", file=out)
    try:
        scenario = _scenario_for(schedule, args.scenario)
        _check_recorded_modules(schedule, args)
    except _InputError as exc:
        print(f"(no trace: {exc})", file=out)
        return EXIT_INPUT if args.html else EXIT_OK
    result: ExecutionResult = replay(
        scenario,
        schedule,
        settings_from_args(args),
        patch=args.patch,
        line_modules=args.line_module,
    )
    description = scenario_description(scenario)
    if description:
        print(description, file=out)
    print(result.trace.swimlanes(limit=None), file=out)
    if result.failure is not None:
        print(f"\noutcome: {result.failure.kind}: {result.failure.message}", file=out)
    else:
        print("\noutcome: no failure", file=out)
    if args.html:
        _write_html(args.html, result, result.schedule.with_choices(schedule.choices), description)
        print(f"HTML timeline written to {os.path.abspath(args.html)}", file=out)
    return EXIT_OK


def _names(modules: tuple[str, ...]) -> str:
    return ", ".join(modules) if modules else "(none)"


def _write_html(
    path: str, result: ExecutionResult, schedule: Schedule, description: str = ""
) -> None:
    from lockstep._html import render_html  # noqa: PLC0415 - only when asked for

    extra: list[tuple[str, str]] = []
    message: str | None = None
    failure = result.failure
    if failure is not None:
        message = f"{failure.kind}: {abbreviate(failure.message, 4000)}"
        if failure.exception is not None and failure.shows_traceback:
            extra.append(("Traceback", format_exception(failure.exception)))
        if failure.deadlock:
            extra.append(("Blocked threads", failure.deadlock_table()))
        if failure.race is not None:
            extra.append(("Data race", failure.race.describe()))
    extra.append(("Replay", f"lockstep replay '{schedule.to_string()}'"))
    text = render_html(
        result.trace.to_rows(),
        title=f"lockstep: {schedule.scenario_id or 'schedule'}",
        thread_names=list(result.trace.thread_names),
        extra_sections=tuple(extra),
        failure_message=message,
        marked_steps=() if failure is None or failure.race is None else failure.race.marks(),
        description=description or None,
    )
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise _InputError(f"cannot write {abbreviate(path)!r}: {exc.strerror or exc}") from exc


def _explore(args: argparse.Namespace, out: TextIO) -> int:
    try:
        scenario = load_scenario(args.scenario)
    except ScenarioImportError as exc:
        raise _InputError(str(exc)) from exc
    options: dict[str, Any] = {}
    if args.depth is not None:
        options["depth"] = args.depth
    if args.preemption_bound is not None:
        options["preemption_bound"] = args.preemption_bound
    if args.no_timeouts:
        options["timeouts"] = False
    strategy = make_strategy(args.strategy, seed=args.seed, **options)
    result = explore(
        scenario,
        settings_from_args(args),
        strategy=strategy,
        patch=args.patch or [],
        scenario_id=args.scenario,
        line_modules=args.line_module or [],
    )
    print(result.summary(), file=out)
    for module in args.patch or ():
        resolved = resolve_module(module)
        filename = os.path.abspath(str(getattr(resolved, "__file__", "") or ""))
        reached = sum(n for f, n in result.switch_points.items() if os.path.abspath(f) == filename)
        if result.failure is None and filename and reached == 0:
            print(
                f"warning: 0 switch points in {resolved.__name__}: the executions never reached "
                "a controlled primitive there, so it was not interleaved (does it use its own "
                "threading names? is the code under test in another module?)",
                file=out,
            )
    if result.failure is None:
        return EXIT_OK
    failure = result.failure
    save_dir = Path(args.save_dir)
    stem = "".join(c if c.isalnum() or c in "-_" else "_" for c in args.scenario)[:80]
    path = _save_unique(failure.schedule, save_dir, f"{stem}-{failure.kind}").resolve()
    html = path.with_suffix(".html")
    description = scenario_description(scenario)
    _write_html(
        str(html),
        ExecutionResult(failure.schedule, failure.trace, failure),
        failure.schedule,
        description,
    )
    # The file records the patch and line modules: the command needs no flags.
    command = shlex.join(["lockstep", "replay", str(path)])
    text = failure.with_replay_command(command).render(description=description)
    head, sep, tail = text.rpartition("\n\nReplay it with:")
    saved = f"\n\nSchedule saved to {path}\nHTML timeline:     {html}"
    print(head + saved + sep + tail if sep else text + saved, file=out)
    return EXIT_FAILURE


def _save_unique(schedule: Schedule, directory: Path, stem: str) -> Path:
    """Save under directory/stem.json, or stem-2.json, ... (exclusive creation)."""
    for n in range(1, 10_000):
        path = directory / (f"{stem}.json" if n == 1 else f"{stem}-{n}.json")
        if not path.exists():
            try:
                return schedule.save(path)
            except FileExistsError:
                continue
            except OSError as exc:
                raise _InputError(
                    f"cannot save the schedule under --save-dir {abbreviate(str(directory))}: "
                    f"{exc.strerror or exc}"
                ) from exc
    raise _InputError(f"too many saved schedules named {stem!r} in {directory}")


def _check(args: argparse.Namespace, out: TextIO) -> int:
    if args.backend is None:
        return _check_suites(args, out)
    # The default backend of this process and of the suites' worker processes.
    saved = os.environ.get(BACKEND_ENV_VAR)
    os.environ[BACKEND_ENV_VAR] = args.backend
    try:
        return _check_suites(args, out)
    finally:
        if saved is None:
            del os.environ[BACKEND_ENV_VAR]
        else:
            os.environ[BACKEND_ENV_VAR] = saved


def _check_suites(args: argparse.Namespace, out: TextIO) -> int:
    options = SuiteOptions(
        budget=args.budget,
        seed=args.seed,
        strategy=args.strategy,
        jobs=args.jobs,
        target=args.target,
        shard=args.shard,
        quiet=args.quiet,
        verbose=args.verbose,
        settings=settings_from_args(args),
    )
    try:
        return run_check(
            options,
            output_dir=Path(args.output_dir),
            junit_path=None if args.junit_xml is None else Path(args.junit_xml),
            json_path=None if args.json is None else Path(args.json),
            out=out,
            err=sys.stderr,
        )
    except CheckUsageError as exc:
        raise _InputError(str(exc)) from exc


def settings_from_args(args: argparse.Namespace) -> Settings:
    """The :class:`lockstep.Settings` a parsed command line asks for.

    Each subcommand's flags that are settings: ``explore``'s ``--budget``,
    ``--max-steps``, ``--time-budget``, ``--no-races`` and ``--line-module`` (line
    granularity); every running subcommand's ``--stall-diagnosis`` and ``--backend``.
    ``check --budget`` is not ``Settings.budget``: the suite scales it per cell (it
    stays ``SuiteOptions.budget``). A flag not given leaves the field at its default.
    """
    given = vars(args)
    fields: dict[str, Any] = {}
    if given.get("stall_diagnosis") is not None:
        fields["stall_diagnosis"] = given["stall_diagnosis"]
    if given.get("backend") is not None:
        fields["backend"] = given["backend"]
    if args.command == "explore":
        fields["budget"] = args.budget
        fields["max_steps"] = args.max_steps
        fields["time_budget"] = args.time_budget
        fields["races"] = not args.no_races
        fields["granularity"] = "line" if args.line_module else "op"
    return Settings(**fields)


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text}")
    return value


def _preemption_bound(text: str) -> int | str:
    """``--preemption-bound``: an integer >= 0, or "iterative" (DPOR)."""
    if text == "iterative":
        return text
    try:
        return _non_negative(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f'expected an integer >= 0 or "iterative", got {text!r}'
        ) from None


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text}")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds > 0, got {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected seconds > 0, got {text}")
    return value


def _shard(text: str) -> Shard:
    try:
        return Shard.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the epilog's layout; wraps help at 100 columns."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=32, width=100)


def _add_backend(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--backend",
        choices=BACKEND_NAMES,
        default=None,
        help="where logical threads run: greenlet (one OS thread, fast; the default where "
        "it can run) or thread (an OS thread each, for code that needs real threads; the "
        "default where greenlet is missing or would turn a free-threaded Python's GIL on); "
        "same schedules",
    )


def _add_verbose(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="also print each failure's detail in the checker's own terms (a suite's "
        "internal encodings and state, for whoever debugs the checker; default: off)",
    )


def _add_stall(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--stall-diagnosis",
        type=_seconds,
        default=_DEFAULTS.stall_diagnosis,
        metavar="SECONDS",
        help="report a thread blocked in an uncontrolled primitive (a real lock of an "
        "unpatched module) after this many seconds of evidence (default: %(default)s)",
    )


class _Parser(argparse.ArgumentParser):
    """A usage error is one line (no usage block) and exit 2, pointing at the help of the
    parser it belongs to: an argument a subcommand does not know is its error
    (``lockstep check: error: ... (see lockstep check --help)``), not the top level's."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: Subcommand name -> its parser (filled by `build_parser`).
        self.commands: dict[str, argparse.ArgumentParser] = {}

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        """`argparse` leaves the arguments no parser took to the top level; they are
        reported by the subcommand that was chosen, so the hint names its help."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            owner = self.commands.get(str(getattr(parsed, "command", "")), self)
            owner.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed


def build_parser() -> _Parser:
    """The argument parser (exposed for documentation and tests)."""
    parser = _Parser(
        prog="lockstep",
        description="Deterministic scheduling for threaded Python code: run code with one "
        "thread at a time, explore and replay the interleavings, check suites.",
        epilog=_EPILOG,
        formatter_class=_Formatter,
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"lockstep {LOCKSTEP_VERSION} (Python {sys.version.split()[0]})",
        help="print the version and exit",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add_patch(p: argparse.ArgumentParser, *, recorded: bool) -> None:
        default = (
            " (default: the modules the schedule records; given, the flags replace that list)"
            if recorded
            else " (default: none; recorded in every saved schedule)"
        )
        p.add_argument(
            "--patch",
            action="append",
            default=None,
            metavar="MODULE",
            help="swap threading/time/queue/heapq/datetime names in MODULE (repeatable)" + default,
        )
        p.add_argument(
            "--line-module",
            action="append",
            default=None,
            metavar="MODULE",
            help="line granularity: a switch point at every line of MODULE (repeatable)" + default,
        )

    p_replay = sub.add_parser(
        "replay",
        help="replay schedules (files, directories of them, or ls1: strings)",
        description="Run each schedule's scenario once, following its recorded choices "
        "exactly, and say what it showed: reproduced (the recorded failure again, same kind "
        "and invariant: exit 1), different failure (exit 3), diverged (the code no longer "
        "takes a recorded step: the code changed here, the bug may be fixed; re-record: "
        "exit 4) or passed (exit 0). Several schedules run in one process (the code under "
        "test is imported once), one line each.",
        epilog=_EPILOG,
        formatter_class=_Formatter,
    )
    p_replay.add_argument(
        "schedule",
        nargs="+",
        help="schedule JSON file, directory (its *.json schedules) or 'ls1:...' string",
    )
    p_replay.add_argument(
        "--scenario", help="module:qualname to run instead (default: the schedule's)"
    )
    add_patch(p_replay, recorded=True)
    _add_verbose(p_replay)
    _add_stall(p_replay)
    _add_backend(p_replay)
    p_replay.set_defaults(handler=_replay)

    p_show = sub.add_parser(
        "show",
        help="print a schedule and its swimlanes",
        description="Print a schedule's provenance and replay it to show its swimlanes.",
        epilog=_EPILOG,
        formatter_class=_Formatter,
    )
    p_show.add_argument("schedule", help="schedule JSON file or 'ls1:...' string")
    p_show.add_argument(
        "--scenario", help="module:qualname to run instead (default: the schedule's)"
    )
    p_show.add_argument(
        "--html", metavar="OUT", help="also write an HTML timeline to OUT (default: none)"
    )
    add_patch(p_show, recorded=True)
    _add_backend(p_show)
    p_show.set_defaults(handler=_show)

    p_explore = sub.add_parser(
        "explore",
        help="explore a scenario's schedules",
        description="Run a zero-argument scenario under a search strategy until the budget "
        "is spent or a failure is found; a failure is shrunk, saved and explained.",
        epilog=_EPILOG,
        formatter_class=_Formatter,
    )
    p_explore.add_argument("scenario", help="module:qualname of a zero-argument callable")
    p_explore.add_argument(
        "--strategy",
        choices=STRATEGY_NAMES,
        default="random",
        help="search strategy (default: %(default)s)",
    )
    p_explore.add_argument(
        "--budget",
        type=_positive,
        default=_DEFAULTS.budget,
        help="executions at most (default: %(default)s)",
    )
    p_explore.add_argument(
        "--seed", type=int, default=0, help="seed of random/pct (default: %(default)s)"
    )
    p_explore.add_argument(
        "--depth", type=_positive, help="PCT bug depth (default: the strategy's, 3)"
    )
    p_explore.add_argument(
        "--preemption-bound",
        type=_preemption_bound,
        help='dfs/dpor preemption bound (default: the strategy\'s); for dpor also "iterative": '
        "bounds 0, 1, 2, ... in turn, shallow bugs first",
    )
    p_explore.add_argument(
        "--max-steps",
        type=_positive,
        default=_DEFAULTS.max_steps,
        help="steps per execution at most (default: %(default)s)",
    )
    p_explore.add_argument(
        "--time-budget",
        type=_positive_seconds,
        metavar="SECONDS",
        help="stop cleanly after this much wall time (the verdict says it was cut short; "
        "default: no time limit)",
    )
    p_explore.add_argument(
        "--no-timeouts",
        action="store_true",
        help="fire a timed wait's timeout only when no thread can run (a smaller space; "
        "default: timeouts are scheduling choices)",
    )
    p_explore.add_argument(
        "--no-races",
        action="store_true",
        help="do not report data races on watched state (search for what they lead to; "
        "default: races are reported)",
    )
    p_explore.add_argument(
        "--save-dir",
        default="lockstep-failures",
        help="where a failing schedule and its HTML timeline are saved (default: %(default)s)",
    )
    add_patch(p_explore, recorded=False)
    _add_stall(p_explore)
    _add_backend(p_explore)
    p_explore.set_defaults(handler=_explore)

    cpus = available_cpus()
    p_check = sub.add_parser(
        "check",
        help="run the suites registered under lockstep.suites (a CI step)",
        description="Run every suite registered under the lockstep.suites entry point group "
        "(the model-manager suite: every scenario against the core and the known-bug "
        "variants, or against your --target). Failures are explained, saved and replayable "
        "from any directory.",
        epilog=_EPILOG,
        formatter_class=_Formatter,
    )
    p_check.add_argument(
        "--target",
        metavar="MODULE:FACTORY",
        help="check your implementation: an adapter (or a factory of one) importable from the "
        "current directory (default: the suite's own implementations)",
    )
    p_check.add_argument(
        "--budget",
        type=_positive,
        help="executions per strategy and cell (default: the suite's; modelmanager: 30)",
    )
    p_check.add_argument(
        "--seed", type=int, help="seed of the random and pct strategies (default: 0)"
    )
    p_check.add_argument(
        "--strategy",
        choices=STRATEGY_NAMES,
        help="run only this strategy (default: the suite's; modelmanager: pct, dpor, random)",
    )
    p_check.add_argument(
        "--jobs",
        type=_positive,
        default=cpus,
        help="parallel worker processes (default: the available CPUs, %(default)s here)",
    )
    p_check.add_argument(
        "--shard",
        type=_shard,
        metavar="K/N",
        help="run only shard K of N (1 <= K <= N): a deterministic, disjoint slice of the "
        "cells; the N shards together are exactly the unsharded run (default: all)",
    )
    p_check.add_argument(
        "--output-dir",
        metavar="DIR",
        default="lockstep-report",
        help="where failing schedules and HTML timelines go, in a run-... directory of their "
        "own per run (default: %(default)s)",
    )
    p_check.add_argument(
        "--junit-xml", metavar="FILE", help="write JUnit XML, one testcase per cell (default: none)"
    )
    p_check.add_argument(
        "--json", metavar="FILE", help="write the table and every cell as JSON (default: none)"
    )
    p_check.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="no progress and no table: only failures and the summary (default: off)",
    )
    _add_verbose(p_check)
    _add_stall(p_check)
    _add_backend(p_check)
    p_check.set_defaults(handler=_check)

    p_compare = sub.add_parser(
        "compare",
        help="compare two check --json files: fixed, still failing, changed, new failure",
        description="Compare two `lockstep check --json` files case by case: fixed (FAIL -> "
        "PASS), still failing (the same invariant broken first), changed (another one first), new "
        "failure (PASS -> FAIL), not judged (SKIP or ERROR on either side), passing; then the "
        "totals. Exit 1 when anything fails that did not before, else 0.",
        epilog=_EPILOG,
        formatter_class=_Formatter,
    )
    p_compare.add_argument("before", help="the earlier run's --json file")
    p_compare.add_argument("after", help="the later run's --json file")
    p_compare.add_argument(
        "--labels",
        nargs=2,
        metavar=("BEFORE", "AFTER"),
        default=("before", "after"),
        help="column titles for the two runs, e.g. 1.8.3 pr-2821 (default: before after)",
    )
    p_compare.set_defaults(handler=_compare)
    parser.commands.update(sub.choices)
    return parser


def _compare(args: argparse.Namespace, out: TextIO) -> int:
    lines, code = compare(
        args.before, args.after, before_label=args.labels[0], after_label=args.labels[1]
    )
    for line in lines:
        print(line, file=out)
    return code


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None) -> int:
    """Run the CLI; returns the exit code (see the module docstring)."""
    stream = out if out is not None else sys.stdout
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
    handler: Callable[[argparse.Namespace, TextIO], int] = args.handler
    try:
        return handler(args, stream)
    except _InputError as exc:
        print(f"lockstep {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except LockstepError as exc:
        print(f"lockstep {args.command}: error: {abbreviate(str(exc), 500)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"lockstep {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

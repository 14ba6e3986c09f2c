"""The ``lockstep`` command: replay, show, explore, check.

Exit codes:
  0  success: no failure found / the replay passed / every suite passed
  1  a failure was found or reproduced (also a replay divergence)
  2  usage error (bad arguments)
  3  could not load the input: schedule file or string, scenario, suite
"""

from __future__ import annotations

import argparse
import importlib
import os
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from lockstep._explore import explore, replay
from lockstep._failure import Failure, format_exception
from lockstep._patching import resolve_module
from lockstep._results import ExecutionResult
from lockstep._schedule import Schedule, choices_to_string
from lockstep.errors import LockstepError, ScenarioImportError
from lockstep.strategies._registry import STRATEGY_NAMES, make_strategy
from lockstep.suites import SuiteOptions, discover_suites

__all__ = ["EXIT_FAILURE", "EXIT_INPUT", "EXIT_OK", "EXIT_USAGE", "load_scenario", "main"]

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INPUT = 3

_EPILOG = """exit codes:
  0  success: no failure found / the replay passed / every suite passed
  1  a failure was found or reproduced (a replay divergence counts as one)
  2  usage error
  3  could not load the input (schedule, scenario or suite)"""


class _InputError(Exception):
    """An input could not be loaded: exit code 3 with this message."""


def load_scenario(scenario_id: str) -> Callable[[], object]:
    """Import "module:qualname" (the current directory is importable) and return it.

    Raises ScenarioImportError with the reason.
    """
    module_name, sep, qualname = scenario_id.partition(":")
    if not sep or not module_name or not qualname:
        raise ScenarioImportError(f"scenario must look like 'module:qualname', got {scenario_id!r}")
    if module_name == "pytest":
        raise ScenarioImportError(
            f"this schedule belongs to the pytest test {qualname!r}; replay it with "
            f"`pytest '{qualname}' --lockstep-replay FILE`"
        )
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ScenarioImportError(f"cannot import module {module_name!r}: {exc}") from exc
    for part in qualname.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            raise ScenarioImportError(
                f"module {module_name!r} has no attribute {qualname!r}"
            ) from exc
    if not callable(obj):
        raise ScenarioImportError(f"{scenario_id!r} is not callable")
    scenario: Callable[[], object] = obj
    return scenario


def _load_schedule(source: str) -> Schedule:
    try:
        if source.startswith("ls1:"):
            return Schedule.from_string(source)
        return Schedule.load(source)
    except (LockstepError, OSError) as exc:
        raise _InputError(f"cannot load schedule {source[:60]!r}: {exc}") from exc


def _scenario_for(schedule: Schedule, override: str | None) -> Callable[[], object]:
    scenario_id = override or schedule.scenario_id
    if scenario_id is None:
        raise _InputError("the schedule names no scenario; pass --scenario module:qualname")
    try:
        return load_scenario(scenario_id)
    except ScenarioImportError as exc:
        raise _InputError(str(exc)) from exc


def _check_recorded_modules(schedule: Schedule, args: argparse.Namespace) -> None:
    """The modules the schedule records (unless overridden) must import: else exit 3."""
    recorded = [
        *(schedule.patch if args.patch is None else ()),
        *(schedule.line_modules if args.line_module is None else ()),
    ]
    for name in recorded:
        try:
            resolve_module(name)
        except LockstepError as exc:
            raise _InputError(f"the schedule's recorded module {name!r}: {exc}") from exc


def _print_failure(failure: Failure, out: TextIO) -> None:
    print(str(failure), file=out)


def _replay(args: argparse.Namespace, out: TextIO) -> int:
    schedule = _load_schedule(args.schedule)
    scenario = _scenario_for(schedule, args.scenario)
    _check_recorded_modules(schedule, args)
    result = replay(scenario, schedule, patch=args.patch, line_modules=args.line_module)
    if result.failure is not None:
        _print_failure(result.failure.with_replay_command(_same_command(args)), out)
        return EXIT_FAILURE
    print(f"replayed {result.steps} steps of {schedule.scenario_id}: no failure", file=out)
    return EXIT_OK


def _same_command(args: argparse.Namespace) -> str:
    """The command line that replays what this ``lockstep replay`` invocation replayed."""
    parts = ["lockstep", "replay", args.schedule]
    if args.scenario:
        parts += ["--scenario", args.scenario]
    for module in args.patch or ():
        parts += ["--patch", module]
    for module in args.line_module or ():
        parts += ["--line-module", module]
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
    if schedule.granularity == "line":
        print(f"lines of:  {_names(schedule.line_modules)}", file=out)
    print(f"choices:   {len(schedule.choices)}: {choices_to_string(schedule.choices)}", file=out)
    try:
        scenario = _scenario_for(schedule, args.scenario)
        _check_recorded_modules(schedule, args)
    except _InputError as exc:
        print(f"(no trace: {exc})", file=out)
        return EXIT_INPUT if args.html else EXIT_OK
    result: ExecutionResult = replay(
        scenario, schedule, patch=args.patch, line_modules=args.line_module
    )
    print(result.trace.swimlanes(limit=None), file=out)
    if result.failure is not None:
        print(f"\noutcome: {result.failure.kind}: {result.failure.message}", file=out)
    else:
        print("\noutcome: no failure", file=out)
    if args.html:
        _write_html(args.html, result, result.schedule.with_choices(schedule.choices))
        print(f"HTML timeline written to {args.html}", file=out)
    return EXIT_OK


def _names(modules: tuple[str, ...]) -> str:
    return ", ".join(modules) if modules else "(none)"


def _write_html(path: str, result: ExecutionResult, schedule: Schedule) -> None:
    try:
        html = importlib.import_module("lockstep._html")
    except ImportError as exc:
        raise _InputError(f"the HTML renderer (lockstep._html) is not available: {exc}") from exc
    render = getattr(html, "render_html", None)
    if render is None:
        raise _InputError("lockstep._html has no render_html(rows, ...) yet")
    extra: list[tuple[str, str]] = []
    message: str | None = None
    failure = result.failure
    if failure is not None:
        message = f"{failure.kind}: {failure.message}"
        if failure.exception is not None and failure.kind in ("exception", "invariant"):
            extra.append(("Traceback", format_exception(failure.exception)))
        if failure.deadlock:
            extra.append(("Blocked threads", failure.deadlock_table()))
        if failure.race is not None:
            extra.append(("Data race", failure.race.describe()))
    extra.append(("Replay", f"lockstep replay '{schedule.to_string()}'"))
    text = render(
        result.trace.to_rows(),
        title=f"lockstep: {schedule.scenario_id or 'schedule'}",
        thread_names=list(result.trace.thread_names),
        extra_sections=tuple(extra),
        failure_message=message,
        marked_steps=() if failure is None or failure.race is None else failure.race.steps,
    )
    Path(path).write_text(str(text), encoding="utf-8")


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
    line_modules = args.line_module or []
    result = explore(
        scenario,
        strategy=strategy,
        budget=args.budget,
        patch=args.patch or [],
        max_steps=args.max_steps,
        scenario_id=args.scenario,
        granularity="line" if line_modules else "op",
        line_modules=line_modules,
        races=not args.no_races,
        time_budget=args.time_budget,
    )
    print(result.summary(), file=out)
    if result.failure is None:
        return EXIT_OK
    failure = result.failure
    save_dir = Path(args.save_dir)
    stem = args.scenario.replace(":", "-").replace(".", "_")
    path = _save_unique(failure.schedule, save_dir, f"{stem}-{failure.kind}")
    # The file records the patch and line modules: the command needs no flags.
    _print_failure(failure.with_replay_command(shlex.join(["lockstep", "replay", str(path)])), out)
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
    raise _InputError(f"too many saved schedules named {stem!r} in {directory}")


def _check(args: argparse.Namespace, out: TextIO) -> int:
    loaded = discover_suites()
    options = SuiteOptions(
        budget=args.budget,
        seed=args.seed,
        strategy=args.strategy,
        jobs=args.jobs,
        output_dir=Path(args.output_dir) if args.output_dir else None,
        target=args.target,
    )
    code = EXIT_OK
    ran = 0
    for entry in loaded:
        if entry.suite is None:
            print(f"cannot load suite {entry.name} ({entry.value}): {entry.error}", file=sys.stderr)
            code = max(code, EXIT_INPUT)
            continue
        print(f"== suite {entry.name} ==", file=out)
        out.flush()
        suite_code = entry.suite.run(options)
        ran += 1
        print(f"== suite {entry.name}: exit {suite_code} ==", file=out)
        code = max(code, suite_code)
    if ran == 0:
        print("no suites registered", file=out)
    return code


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text}")
    return value


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text}")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for documentation and tests)."""
    parser = argparse.ArgumentParser(
        prog="lockstep",
        description="Deterministic scheduling for threaded Python code.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add_patch(p: argparse.ArgumentParser, *, recorded: bool) -> None:
        default = (
            " (default: the modules the schedule records; given, the flags replace that list)"
            if recorded
            else " (recorded in every saved schedule)"
        )
        p.add_argument(
            "--patch",
            action="append",
            default=None,
            metavar="MODULE",
            help="swap threading/time/queue names in MODULE (repeatable)" + default,
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
        help="replay a schedule (file or ls1: string)",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p_replay.add_argument("schedule", help="schedule JSON file or 'ls1:...' string")
    p_replay.add_argument("--scenario", help="module:qualname (default: the schedule's)")
    add_patch(p_replay, recorded=True)
    p_replay.set_defaults(handler=_replay)

    p_show = sub.add_parser(
        "show",
        help="print a schedule and its swimlanes",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p_show.add_argument("schedule", help="schedule JSON file or 'ls1:...' string")
    p_show.add_argument("--scenario", help="module:qualname (default: the schedule's)")
    p_show.add_argument("--html", metavar="OUT", help="also write an HTML timeline to OUT")
    add_patch(p_show, recorded=True)
    p_show.set_defaults(handler=_show)

    p_explore = sub.add_parser(
        "explore",
        help="explore a scenario's schedules",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p_explore.add_argument("scenario", help="module:qualname of a zero-argument callable")
    p_explore.add_argument("--strategy", choices=STRATEGY_NAMES, default="random")
    p_explore.add_argument("--budget", type=_positive, default=1000)
    p_explore.add_argument("--seed", type=int, default=0)
    p_explore.add_argument("--depth", type=_positive, help="PCT bug depth")
    p_explore.add_argument("--preemption-bound", type=_non_negative, help="dfs/dpor bound")
    p_explore.add_argument("--max-steps", type=_positive, default=10_000)
    p_explore.add_argument(
        "--time-budget",
        type=_positive_seconds,
        metavar="SECONDS",
        help="stop cleanly after this much wall time (the verdict says it was cut short)",
    )
    p_explore.add_argument(
        "--no-timeouts",
        action="store_true",
        help="fire a timed wait's timeout only when no thread can run (a smaller space)",
    )
    p_explore.add_argument(
        "--no-races",
        action="store_true",
        help="do not report data races on watched state (search for what they lead to)",
    )
    p_explore.add_argument(
        "--save-dir",
        default="lockstep-failures",
        help="where a failing schedule is saved (default %(default)s)",
    )
    add_patch(p_explore, recorded=False)
    p_explore.set_defaults(handler=_explore)

    p_check = sub.add_parser(
        "check",
        help="run the suites registered under lockstep.suites",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p_check.add_argument("--budget", type=_positive)
    p_check.add_argument("--seed", type=int)
    p_check.add_argument("--strategy", choices=STRATEGY_NAMES)
    p_check.add_argument("--jobs", type=_positive, default=1)
    p_check.add_argument("--output-dir", metavar="DIR")
    p_check.add_argument(
        "--target",
        metavar="MODULE:FACTORY",
        help="the implementation to check (default: the suite's own)",
    )
    p_check.set_defaults(handler=_check)
    return parser


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
        print(f"lockstep {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""pytest plugin: ``@pytest.mark.lockstep`` turns a test function into an exploration.

The marked test function (with its fixtures) is the scenario: it runs as thread 0 of
every execution, so it should build fresh state, spawn threads, join them and assert.
Fixture values are created once per test, not per execution.

Marker keywords: ``settings`` (a :class:`lockstep.Settings`), any field of
:class:`lockstep.Settings` (``budget``, ``max_steps``, ``shrink``, ``granularity``,
``races``, ``stall_diagnosis``, ``backend``: "greenlet" or "thread", ...; applied to
``settings``), and what describes the test's code: ``strategy`` (a name or a Strategy
instance), ``seed``, ``patch`` (modules or dotted names), ``invariant``,
``line_modules``. The plugin builds one Settings from them (a bad value fails the test
with the field, the value and what is allowed). Command-line options override the marker:
``--lockstep-budget``, ``--lockstep-seed``, ``--lockstep-strategy``; a budget below 1 is
a usage error (pytest exits 4 before running anything). ``--lockstep-backend`` is the
backend of the tests whose marker names none (a test that needs real OS threads keeps
``backend="thread"``).

A failing exploration saves its schedule and an HTML timeline under
``--lockstep-save-dir`` (default ``./lockstep-failures``) and the failure explains
itself: the message, the shrunk swimlanes, both paths and the command that replays it,
``pytest --rootdir <rootdir> '<rootdir>/<nodeid>' --lockstep-replay <absolute file>``,
which works pasted from any directory. ``--lockstep-replay FILE`` replays the schedule
in the test it was recorded from (other marked tests explore as usual); a file
recorded for a test that is not selected, or not by a pytest test at all, is a usage
error naming the command to use. A replay patches the marker's ``patch`` modules when
the marker names them, else the modules the schedule records (likewise
``line_modules``). A replay says which of the four outcomes it had
(``lockstep.classify_replay``): the test passes when the replay passed and fails
otherwise, its message starting with ``lockstep replay reproduced: ...``,
``... different failure: ...`` or ``... diverged at step N: the code no longer takes the
recorded step ...; re-record``; the outcome is the test's ``lockstep replay`` user
property (in JUnit XML) and a line of the terminal summary's "lockstep" section.

This module is registered as a ``pytest11`` entry point: it must always import cleanly
and cheaply, so lockstep itself is imported only when a marked test runs.
"""

from __future__ import annotations

import functools
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

__all__ = [
    "pytest_addoption",
    "pytest_collection_modifyitems",
    "pytest_configure",
    "pytest_pyfunc_call",
    "pytest_terminal_summary",
]

_VERDICTS = pytest.StashKey[list[tuple[str, str]]]()

# Besides the fields of lockstep.Settings (read from it when a marked test runs: this
# module must not import lockstep at load time).
_CODE_KEYS = frozenset({"settings", "strategy", "seed", "patch", "invariant", "line_modules"})
_USAGE_ERROR = 4  # pytest.ExitCode.USAGE_ERROR


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the --lockstep-* options."""
    group = parser.getgroup("lockstep", "lockstep deterministic scheduling")
    group.addoption(
        "--lockstep-budget",
        type=int,
        default=None,
        metavar="N",
        help="executions per @pytest.mark.lockstep test (overrides the marker)",
    )
    group.addoption(
        "--lockstep-seed",
        type=int,
        default=None,
        metavar="S",
        help="seed for random/pct strategies (overrides the marker)",
    )
    group.addoption(
        "--lockstep-strategy",
        default=None,
        metavar="NAME",
        help="strategy name: random, pct, dfs, dpor (overrides the marker)",
    )
    group.addoption(
        "--lockstep-backend",
        default=None,
        choices=("greenlet", "thread"),
        help="backend of the @pytest.mark.lockstep tests whose marker names none "
        "(default: greenlet where it can run, else thread; thread gives each logical "
        "thread an OS thread)",
    )
    group.addoption(
        "--lockstep-replay",
        default=None,
        metavar="FILE",
        help="replay this saved schedule instead of exploring (patching the marker's "
        "patch modules, or else the ones the schedule records)",
    )
    group.addoption(
        "--lockstep-save-dir",
        default="lockstep-failures",
        metavar="DIR",
        help="where failing schedules are saved (default: %(default)s)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker (the project runs with --strict-markers); check the options."""
    budget = config.getoption("--lockstep-budget")
    if budget is not None and budget < 1:
        raise pytest.UsageError(
            f"--lockstep-budget must be at least 1 execution per marked test (got {budget})"
        )
    config.addinivalue_line(
        "markers",
        "lockstep(settings=lockstep.Settings(), strategy='random', seed=0, patch=(), "
        "invariant=None, line_modules=(), or any Settings field such as budget=1000, "
        "max_steps=10000, shrink=True, backend=None): run the test as a lockstep scenario "
        "under explore()",
    )


def _replay_file_error(replay_file: str, nodeids: set[str]) -> str | None:
    """Why ``--lockstep-replay replay_file`` cannot run here (None: it can)."""
    import lockstep  # noqa: PLC0415 - keep the plugin import cheap
    from lockstep.report import abbreviate  # noqa: PLC0415

    try:
        schedule = lockstep.Schedule.load(replay_file)
    except (lockstep.LockstepError, OSError) as exc:
        return f"--lockstep-replay {replay_file}: cannot load it: {abbreviate(str(exc), 300)}"
    scenario_id = schedule.scenario_id
    if scenario_id is None:
        return None  # an anonymous schedule: every marked test may replay it
    if not scenario_id.startswith("pytest:"):
        return (
            f"--lockstep-replay {replay_file} was recorded for the scenario "
            f"{abbreviate(scenario_id)!r}, not by a pytest test: replay it with "
            f"`lockstep replay {replay_file}`"
        )
    nodeid = scenario_id.removeprefix("pytest:")
    if nodeid not in nodeids:
        return (
            f"--lockstep-replay {replay_file} was recorded for the test {abbreviate(nodeid)!r}, "
            f"which is not among the selected tests: run `pytest '{abbreviate(nodeid, 300)}' "
            f"--lockstep-replay {replay_file}`"
        )
    return None


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """A replay file must belong to a selected test: else stop with a usage error."""
    replay_file = config.getoption("--lockstep-replay")
    if not replay_file:
        return
    problem = _replay_file_error(replay_file, {item.nodeid for item in items})
    if problem is not None:
        pytest.exit(problem, returncode=_USAGE_ERROR)


def _safe_name(nodeid: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_")[:150] or "test"


def _fail(message: str) -> None:
    pytest.fail(message, pytrace=False)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> object:
    """Run a lockstep-marked test as an exploration (or a replay); others are untouched."""
    marker = pyfuncitem.get_closest_marker("lockstep")
    if marker is None:
        return None
    import lockstep  # noqa: PLC0415 - keep the plugin import cheap
    from lockstep._settings import FIELD_NAMES  # noqa: PLC0415
    from lockstep.report import abbreviate  # noqa: PLC0415
    from lockstep.strategies._registry import make_strategy  # noqa: PLC0415

    if marker.args:
        _fail(f"@pytest.mark.lockstep takes keyword arguments only, got {marker.args!r}")
    marker_keys = _CODE_KEYS | set(FIELD_NAMES)
    unknown = sorted(set(marker.kwargs) - marker_keys)
    if unknown:
        _fail(
            f"@pytest.mark.lockstep: unknown keyword(s) {unknown}; expected {sorted(marker_keys)}"
        )
    kwargs: dict[str, Any] = dict(marker.kwargs)
    config = pyfuncitem.config
    function = pyfuncitem.obj
    argnames = pyfuncitem._fixtureinfo.argnames
    funcargs = {name: pyfuncitem.funcargs[name] for name in argnames}

    @functools.wraps(function)
    def scenario() -> None:
        function(**funcargs)

    nodeid = pyfuncitem.nodeid
    # None: not named by the marker, so a replay uses the schedule's recorded list.
    patch = tuple(kwargs["patch"]) if "patch" in kwargs else None
    line_modules = tuple(kwargs["line_modules"]) if "line_modules" in kwargs else None
    invariant = kwargs.get("invariant")
    # Absolute test path and rootdir: the command works from any directory, with the
    # same node id (the rootdir decides it) as the one the schedule records.
    runnable = shlex.join(["--rootdir", str(config.rootpath), f"{config.rootpath}/{nodeid}"])
    try:
        settings = _settings_for(kwargs, config)
        replay_file = config.getoption("--lockstep-replay")
        schedule = lockstep.Schedule.load(replay_file) if replay_file else None
        if schedule is not None and schedule.scenario_id in (None, f"pytest:{nodeid}"):
            result = lockstep.replay(
                scenario,
                schedule,
                settings,
                patch=patch,
                line_modules=line_modules,
                invariant=invariant,
            )
            outcome = lockstep.classify_replay(schedule, result)
            pyfuncitem.user_properties.append(("lockstep replay", outcome.name))
            config.stash.setdefault(_VERDICTS, []).append((nodeid, f"replay {outcome.headline}"))
            if result.failure is not None:
                replayed = result.failure.with_replay_command(
                    f"pytest {runnable} --lockstep-replay {Path(replay_file).resolve()}"
                )
                _fail(f"lockstep replay {outcome.headline}\n\n{replayed}")
            return True

        seed_option = config.getoption("--lockstep-seed")
        seed = seed_option if seed_option is not None else kwargs.get("seed", 0)
        strategy: Any = config.getoption("--lockstep-strategy") or kwargs.get("strategy", "random")
        if isinstance(strategy, str):
            strategy = make_strategy(strategy, seed=seed)
        result_explore = lockstep.explore(
            scenario,
            settings,
            strategy=strategy,
            scenario_id=f"pytest:{nodeid}",
            line_modules=line_modules or (),
            patch=patch or (),
            invariant=invariant,
        )
    except (lockstep.LockstepError, OSError) as exc:
        _fail(f"lockstep could not run {nodeid}: {abbreviate(str(exc), 500)}")
        raise  # unreachable: pytest.fail raises
    failure = result_explore.failure
    pyfuncitem.user_properties.append(("lockstep verdict", result_explore.verdict.describe()))
    config.stash.setdefault(_VERDICTS, []).append((nodeid, result_explore.summary()))
    if failure is None:
        return True
    save_dir = Path(config.getoption("--lockstep-save-dir"))
    stem = f"{_safe_name(nodeid)}-{failure.kind}"
    path = _save_unique(failure.schedule, save_dir, stem).resolve()
    failure = failure.with_replay_command(f"pytest {runnable} --lockstep-replay {path}")
    html = _save_html(failure, path.with_suffix(".html"), title=nodeid)
    text = str(failure)
    head, sep, tail = text.rpartition("\n\nReplay it with:")
    saved = f"\n\nSchedule saved to {path}\nHTML timeline:     {html}\n({result_explore.summary()})"
    _fail(head + saved + sep + tail if sep else text + saved)
    return True


def _settings_for(marker: dict[str, Any], config: pytest.Config) -> Any:
    """The lockstep.Settings a marked test runs with: the marker's ``settings`` (default:
    lockstep's) with the marker's Settings fields applied, then ``--lockstep-budget`` over
    the budget and ``--lockstep-backend`` where neither names a backend; never a progress
    line (pytest owns the terminal). Raises what Settings raises for a bad value
    (InvalidArgument naming the field, the value and what is allowed)."""
    import lockstep  # noqa: PLC0415 - keep the plugin import cheap
    from lockstep._settings import FIELD_NAMES  # noqa: PLC0415

    base = marker.get("settings", lockstep.Settings())
    if not isinstance(base, lockstep.Settings):
        raise lockstep.errors.InvalidArgumentType(
            f"@pytest.mark.lockstep(settings=...) must be a lockstep.Settings, got {base!r}"
        )
    settings = base.replace(**{k: v for k, v in marker.items() if k in FIELD_NAMES})
    budget = config.getoption("--lockstep-budget")
    if budget is not None:
        settings = settings.replace(budget=budget)
    backend = config.getoption("--lockstep-backend")
    if settings.backend is None and backend is not None:
        settings = settings.replace(backend=backend)
    return settings.replace(progress=False)


def _save_html(failure: Any, path: Path, *, title: str) -> Path:
    """The failure's self-contained HTML timeline next to its schedule."""
    from lockstep.report import abbreviate, render_html  # noqa: PLC0415

    path.write_text(
        render_html(
            failure.trace.to_rows(),
            title=f"lockstep: {title}",
            thread_names=list(failure.trace.thread_names),
            failure_message=abbreviate(f"{failure.kind}: {failure.message}", 4000),
            extra_sections=[("Reproduce", failure.replay_command or "")],
            marked_steps=() if failure.race is None else failure.race.marks(),
        ),
        encoding="utf-8",
    )
    return path


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """A "lockstep" section: what each explored test established (its verdict:
    every interleaving up to a bound, cut short by a budget, or sampled)."""
    verdicts = terminalreporter.config.stash.get(_VERDICTS, [])
    if not verdicts:
        return
    terminalreporter.section("lockstep")
    for nodeid, summary in verdicts:
        terminalreporter.write_line(f"{nodeid}: {summary}")


def _save_unique(schedule: Any, directory: Path, stem: str) -> Path:
    for n in range(1, 10_000):
        path = directory / (f"{stem}.json" if n == 1 else f"{stem}-{n}.json")
        if path.exists():
            continue
        try:
            saved: Path = schedule.save(path)
        except FileExistsError:
            continue
        return saved
    raise RuntimeError(f"too many saved schedules named {stem!r} in {directory}")

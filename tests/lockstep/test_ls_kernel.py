"""Lockstep's kernel is untied: a graph without circles, and seams that are typed.

The *kernel* is what runs one execution: :mod:`lockstep._execution`, which builds a
``Run`` and runs it, and every lockstep module it imports, directly or not (the
scheduler, the backends, the controlled primitives and the stand-ins the patcher
installs, the patcher, the strategies' protocol, the records). It is computed here
from the modules' own import statements (``ast``), not listed by hand, so a new
module the kernel imports is held to the same rules.

* No import inside a function in the kernel: every arrow of the graph is visible
  at the top of a module (imports only for type checking, ``if TYPE_CHECKING:``,
  do not run and do not count).
* The kernel's run-time import graph has no cycle: each module can be imported
  first, on its own.
* ``Run`` imports nothing above it: the backend, the interpreter-exit hooks of the
  patched modules and the factory of main's Thread object come in through its
  constructor, from whoever builds the execution.
* What a blocked thread waits on is a typed :class:`lockstep._runtime.Blocker`,
  never probed with ``getattr``.
* The virtual clock has one writer, the Run.
"""

from __future__ import annotations

import ast
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from ls_helpers import FirstChoiceMethods

import lockstep
from lockstep import _primitives, _runtime
from lockstep._backend import open_backend, resolve_backend
from lockstep._runtime import Blocker, ExitHook, LogicalThread, Run
from lockstep._schedule import Schedule
from lockstep.strategies import Capabilities
from tests.import_graph import cycle

ROOT = "lockstep._execution"
PACKAGE = Path(lockstep.__file__).parent


def _source(module: str) -> Path | None:
    """The source file of lockstep module ``module`` (None: not a lockstep module, or a
    name inside one, such as ``lockstep.errors.InvalidArgument``).

    Found by path, never by importing: ``importlib.util.find_spec`` of a dotted name
    imports its parent, and importing ``lockstep._greenlet_backend`` on a free-threaded
    Python would turn the GIL back on for the whole test process."""
    parts = module.split(".")
    if parts[0] != "lockstep":
        return None
    base = PACKAGE.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(tree: ast.Module) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement that runs, with whether it sits inside a function or a
    class body (``if TYPE_CHECKING:`` blocks left out)."""

    def walk(node: ast.AST, nested: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
        for child in ast.iter_child_nodes(node):
            if _is_type_checking(child):
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child, nested
            inside = nested or isinstance(
                child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda
            )
            yield from walk(child, inside)

    yield from walk(tree, False)


def _lockstep_targets(node: ast.Import | ast.ImportFrom, module: str) -> set[str]:
    """The lockstep modules an import statement of ``module`` runs (not the packages
    above them, whose ``__init__`` is the facade on top of everything)."""
    names: list[str] = []
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = module.split(".")[: -node.level]
            base = ".".join([*package, base] if base else package)
        for alias in node.names:
            candidate = f"{base}.{alias.name}"
            names.append(candidate if _source(candidate) is not None else base)
    found = set()
    for name in names:
        target = name
        while target and _source(target) is None:
            target = target.rpartition(".")[0]
        source = _source(target) if target and target != module else None
        if source is not None and source.name != "__init__.py":
            found.add(target)
    return found


def _graph(*roots: str) -> tuple[dict[str, set[str]], dict[str, list[str]]]:
    """The run-time import graph of the modules ``roots`` reach, and the imports that
    sit inside a function or class body, by module."""
    graph: dict[str, set[str]] = {}
    nested: dict[str, list[str]] = {}
    pending = list(roots)
    while pending:
        module = pending.pop()
        if module in graph:
            continue
        source = _source(module)
        assert source is not None, module
        tree = ast.parse(source.read_text(encoding="utf-8"))
        graph[module] = set()
        for node, inside in _imports(tree):
            targets = _lockstep_targets(node, module)
            graph[module] |= targets
            if inside:
                nested.setdefault(module, []).append(f"line {node.lineno}: {ast.unparse(node)}")
        pending.extend(graph[module] - graph.keys())
    return graph, nested


KERNEL, NESTED = _graph(ROOT)


def test_the_kernel_is_what_runs_an_execution() -> None:
    """The computed kernel holds the scheduler, its backends, the primitives, the
    clock, the stand-ins and the patcher (a guard on the computation itself)."""
    for module in (
        "lockstep._runtime",
        "lockstep._backend",
        "lockstep._greenlet_backend",
        "lockstep._thread_backend",
        "lockstep._primitives",
        "lockstep._clock",
        "lockstep._patching",
        "lockstep.threading",
        "lockstep.time",
        "lockstep.queue",
        "lockstep._datetime",
    ):
        assert module in KERNEL, module
    assert "lockstep._explore" not in KERNEL  # explorations sit above one execution
    assert "lockstep._cli" not in KERNEL


OPTIONAL_EXTENSION = {
    "lockstep._backend": [
        "import greenlet",
        "from lockstep._greenlet_backend import GreenletBackend",
    ]
}
"""The one deliberate exception: greenlet is imported only once it is known to run here.
On a free-threaded Python an extension that does not declare free-threading support
turns the GIL back on for good when it is imported, so ``lockstep._backend`` asks a
child interpreter first (``greenlet_unavailable``) and imports the greenlet backend
inside ``make_backend``."""


def _without_lines(nested: dict[str, list[str]]) -> dict[str, list[str]]:
    return {
        module: [entry.split(": ", 1)[1] for entry in entries] for module, entries in nested.items()
    }


def test_no_import_inside_a_function_in_the_kernel() -> None:
    """Every arrow of the kernel's graph is at the top of its module, but the optional
    greenlet extension's (see ``OPTIONAL_EXTENSION``)."""
    assert _without_lines(NESTED) == OPTIONAL_EXTENSION


def test_the_kernel_import_graph_has_no_cycle() -> None:
    """No module of the kernel reaches itself through the imports that run."""
    assert cycle(KERNEL) == []


def _every_lockstep_module() -> list[str]:
    package = Path(lockstep.__file__).parent
    names = []
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package).with_suffix("").parts
        if parts[-1] != "__init__":
            names.append(".".join(("lockstep", *parts)))
    return names


def test_no_lockstep_module_reaches_itself_at_run_time() -> None:
    """Beyond the kernel too: the whole package's imports that run (top level and
    inside functions, the lazy ones of the CLI and the plugin included) form no
    cycle."""
    graph, _ = _graph(*_every_lockstep_module())
    assert len(graph) > len(KERNEL)
    assert cycle(graph) == []


def test_the_scheduler_imports_nothing_that_builds_or_patches() -> None:
    """``_runtime`` imports no primitive, no patcher, no backend choice, even for
    type checking: they come in through ``Run``'s constructor."""
    source = _source("lockstep._runtime")
    assert source is not None
    tree = ast.parse(source.read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
    for above in ("lockstep._primitives", "lockstep._patching", "lockstep._backend"):
        assert above not in imported


class _FirstChoice(FirstChoiceMethods):
    """A strategy that always runs the first thread it is offered."""

    capabilities = Capabilities(name="first")


def _run_with(
    scenario: object,
    exit_hooks: object,
    thread_factory: object,
) -> Run:
    with open_backend(resolve_backend(None)) as backend:
        run = Run(
            _FirstChoice(),
            max_steps=1000,
            schedule_template=Schedule(()),
            backend=backend,
            exit_hooks=exit_hooks,  # type: ignore[arg-type]
            thread_factory=thread_factory,  # type: ignore[arg-type]
        )
        run.execute(scenario)  # type: ignore[arg-type]
        run.restore_exit_globals()
    return run


def test_run_takes_its_exit_hooks_and_main_thread_from_its_builder() -> None:
    """A Run built with other exit hooks and another main Thread factory uses them:
    main's ``current_thread()`` is the factory's object, and the exit hooks it was
    given run (once, with the Run) when main is done while a worker still waits."""
    made: list[threading.Thread] = []
    seen: dict[str, object] = {}
    asked: list[Run] = []
    namespace = {"stopped": False}
    release = lockstep.threading.Event()

    def factory(lt: LogicalThread) -> threading.Thread:
        thread = _primitives.Thread._ls_for_run(lt)
        made.append(thread)
        return thread

    def stop_workers() -> None:
        namespace["stopped"] = True
        release.set()

    def hooks(run: Run) -> list[ExitHook]:
        asked.append(run)
        return [ExitHook(stop_workers, namespace)]

    def scenario() -> None:
        seen["main"] = lockstep.threading.current_thread()
        worker = lockstep.threading.Thread(target=release.wait)
        worker.start()
        seen["worker"] = worker

    run = _run_with(scenario, hooks, factory)
    assert run.failure() is None
    assert len(made) == 1
    assert seen["main"] is made[0]
    assert made[0].name == "main"
    assert made[0].ident == run.threads[0].ident
    assert asked == [run]
    assert namespace == {"stopped": False}  # what the hook rebound is given back
    assert run.threads[1].thread_obj is seen["worker"]


def test_without_exit_hooks_the_waiting_worker_is_a_deadlock() -> None:
    """The hooks matter: with none, the same scenario ends in a deadlock."""
    release = lockstep.threading.Event()

    def scenario() -> None:
        lockstep.threading.Thread(target=release.wait).start()

    run = _run_with(scenario, lambda run: [], _primitives.Thread._ls_for_run)
    failure = run.failure()
    assert failure is not None
    assert failure.kind == "deadlock"
    assert failure.deadlock[0].holders == ("nobody: waiting for set()",)


def test_every_blocker_is_a_typed_blocker() -> None:
    """``Run.switch``'s blocker and ``LogicalThread.blocker`` are typed ``Blocker``, and
    the scheduler asks it without probing (no ``getattr`` on ``_ls_`` names)."""
    hints = Run.switch.__annotations__
    assert hints["blocker"] == "Blocker | None"
    source = _source("lockstep._runtime")
    assert source is not None
    tree = ast.parse(source.read_text(encoding="utf-8"))
    probes = [
        ast.unparse(node)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in {"getattr", "hasattr"}
        and len(node.args) > 1
        and isinstance(node.args[1], ast.Constant)
        and str(node.args[1].value).startswith("_ls_")
    ]
    assert probes == []
    assert "_ls_holders" in Blocker.__dict__


def test_a_deadlock_names_who_holds_each_blocker() -> None:
    """A blocker answers for itself in a deadlock's report (a lock: its holder)."""

    def scenario() -> None:
        first = lockstep.threading.Lock()
        second = lockstep.threading.Lock()

        def one() -> None:
            with first:
                lockstep.checkpoint("between")
                with second:
                    pass

        def other() -> None:
            with second:
                lockstep.checkpoint("between")
                with first:
                    pass

        threads = [lockstep.spawn(one), lockstep.spawn(other)]
        for t in threads:
            t.join()

    result = lockstep.explore(scenario, strategy=lockstep.DFSStrategy(), budget=50, progress=False)
    failure = result.failure
    assert failure is not None
    assert failure.kind == "deadlock"
    holders = {row.thread: row.holders for row in failure.deadlock}
    assert holders[0] == ("1:Thread-1 (one) (still running)",)
    assert set(holders[1] + holders[2]) == {"1:Thread-1 (one)", "2:Thread-2 (other)"}


def _clock_writers(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    writers = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Attribute) and target.attr in {"clock", "_now"}:
                writers.append(f"{path.name}:{node.lineno}")
    return writers


def test_the_virtual_clock_has_one_writer() -> None:
    """Only the Run moves its clock: no other module assigns a run's ``clock``, and the
    attribute is read-only."""
    package = Path(lockstep.__file__).parent
    writers = [
        where
        for path in sorted(package.rglob("*.py"))
        if path.name != "_runtime.py"
        for where in _clock_writers(path)
    ]
    assert writers == []
    assert isinstance(Run.__dict__["clock"], property)
    assert Run.__dict__["clock"].fset is None


@pytest.mark.parametrize("seconds", [0.5, 2.0])
def test_a_sleep_moves_the_clock_by_its_length(seconds: float) -> None:
    """``time.sleep(x)`` ends at ``start + x`` on the Run's clock (Run.sleep)."""
    seen: list[float] = []

    def scenario() -> None:
        start = lockstep.time.monotonic()
        lockstep.time.sleep(seconds)
        seen.append(lockstep.time.monotonic() - start)

    lockstep.explore(scenario, budget=1, progress=False)
    assert seen == [seconds]


def test_runtime_module_keeps_its_kernel_names() -> None:
    """The seams are part of the scheduler module's declared names."""
    for name in ("Blocker", "ExitHook", "ExitHooks", "ThreadFactory"):
        assert name in _runtime.__all__

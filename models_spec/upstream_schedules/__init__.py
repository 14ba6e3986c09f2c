"""The real roboflow `inference` manager's failures, as schedules that watch upstream.

Each ``*.json`` here is the shortest failing `lockstep.Schedule` found for
one (implementation, scenario, invariant) of
``lockstep check --target models_spec.targets.roboflow_inference``,
recorded against the `inference` version in `MANIFEST.json` by
``python3 -m models_spec.targets.roboflow_inference.record``.  A schedule
names its scenario and adapter (``models_spec.replayable:<scenario>@target=
models_spec/targets/roboflow_inference:<adapter>``) and the modules to patch
by importable names, so ``lockstep replay FILE`` reproduces it from any
directory where this project and `inference` are installed.

`MANIFEST.json` says, per file, what the replay must reproduce (the broken
invariant and the first line of its message), the bug it is in
``docs/bugs.md`` (by B-number) and the version it was recorded on.
`reproduce(entry)` replays one; `changed_message` is what a replay that no
longer reproduces reports: upstream changed, the bug may be fixed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

import attrs

__all__ = [
    "DIRECTORY",
    "MANIFEST",
    "RECORD_COMMAND",
    "Reproduction",
    "UpstreamSchedule",
    "changed_message",
    "failure_line",
    "load_manifest",
    "reproduce",
    "write_manifest",
]

DIRECTORY: Final = Path(__file__).resolve().parent
MANIFEST: Final = "MANIFEST.json"
RECORD_COMMAND: Final = "python3 -m models_spec.targets.roboflow_inference.record"
_STEP_PREFIX: Final = re.compile(r"^invariant \S+ violated after step \d+: ")


@attrs.frozen
class UpstreamSchedule:
    """One recorded failure of the real code and what its replay must show."""

    file: str
    scenario: str
    target: str
    implementation: str
    invariant: str
    message: str
    bug: str
    inference_version: str
    found_by: str
    steps: int

    def path(self, directory: Path = DIRECTORY) -> Path:
        """The schedule file."""
        return directory / self.file


@attrs.frozen
class Reproduction:
    """What replaying one recorded schedule on the installed code did.

    `outcome`: the replay's outcome (``lockstep.classify_replay``: "reproduced",
    "different failure", "diverged" or "passed").  `refound`: when the replay did
    not reproduce, the search that found the same invariant broken again in the
    same scenario ("pct after 3 executions"), or None when none did within the
    budget.
    """

    entry: UpstreamSchedule
    reproduced: bool
    detail: str
    refound: str | None = None
    outcome: str = "reproduced"


def failure_line(message: str) -> str:
    """The first line of a failure message without its "invariant In violated after
    step N:" prefix (the step number changes with the schedule, the rest does not)."""
    return _STEP_PREFIX.sub("", message.splitlines()[0] if message else "")


def load_manifest(directory: Path = DIRECTORY) -> tuple[UpstreamSchedule, ...]:
    """The manifest's entries in file order (empty when there is no manifest)."""
    path = directory / MANIFEST
    if not path.exists():
        return ()
    data: dict[str, dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return tuple(UpstreamSchedule(file=name, **fields) for name, fields in sorted(data.items()))


def write_manifest(entries: Iterable[UpstreamSchedule], directory: Path = DIRECTORY) -> Path:
    """Write ``MANIFEST.json`` (sorted by file name)."""
    data = {
        e.file: {k: v for k, v in attrs.asdict(e).items() if k != "file"}
        for e in sorted(entries, key=lambda e: e.file)
    }
    path = directory / MANIFEST
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path


def reproduce(
    entry: UpstreamSchedule, directory: Path = DIRECTORY, *, search_budget: int = 30
) -> Reproduction:
    """Replay `entry` exactly on the installed code: does it still break its invariant?

    Imports the target (`TargetUnavailable` when `inference` is missing).
    A replay that passes, diverges (upstream's lock operations changed) or
    fails differently did not reproduce; `detail` says what it did.  Then
    the scenario is searched again (pct, dpor, random, `search_budget`
    executions each, seed 0) for the same invariant, so a report can tell a
    schedule that no longer fits from a bug that is gone.
    """
    import lockstep  # noqa: PLC0415 - the check layers are imported on use
    from models_spec._check.check import explore_scenario, replay_scenario  # noqa: PLC0415
    from models_spec._harness.scenario_index import get_scenario  # noqa: PLC0415
    from models_spec.adapter import load_adapter  # noqa: PLC0415

    scenario, adapter = get_scenario(entry.scenario), load_adapter(entry.target)
    schedule = lockstep.Schedule.load(entry.path(directory))
    outcome = replay_scenario(scenario, adapter, schedule)
    failure = outcome.failure
    trace = failure.trace if failure is not None else lockstep.report.Trace((), ())
    expected = schedule.with_failure(lockstep.RecordedFailure("invariant", entry.invariant))
    said = lockstep.classify_replay(expected, lockstep.ExecutionResult(expected, trace, failure))
    if failure is None:
        detail = "the replay ran to the end without a failure"
    else:
        first_line = failure_line(failure.message)
        if said.name == "reproduced":
            return Reproduction(entry, True, first_line)
        detail = f"{said.name}: {outcome.kind} {outcome.label}: {first_line}"
        if said.name == "diverged":
            detail = said.headline
    for strategy in ("pct", "dpor", "random"):
        found = explore_scenario(
            scenario, adapter, strategy=strategy, budget=search_budget, seed=0, shrink=False
        )
        if found.kind == "invariant" and found.label == entry.invariant:
            refound = f"{strategy} after {found.executions} executions"
            return Reproduction(entry, False, detail, refound, said.name)
    return Reproduction(entry, False, detail, None, said.name)


def changed_message(reproduction: Reproduction, version: str) -> str:
    """The report for a recorded failure that no longer reproduces on `version`."""
    entry = reproduction.entry
    where = (
        f"{entry.file} (recorded on {entry.inference_version}: {entry.invariant}) now: "
        f"{reproduction.detail}"
    )
    if reproduction.refound is not None:
        return (
            f"upstream changed: the recorded schedule of {entry.bug} no longer replays on "
            f"version {version}, but the bug is still there ({entry.invariant} found again "
            f"by {reproduction.refound}): re-record and update the table ({RECORD_COMMAND}). "
            + where
        )
    return (
        f"upstream changed: {entry.bug} may be fixed in version {version} ({entry.invariant} "
        f"not found again by pct, dpor or random): re-record and update the table "
        f"({RECORD_COMMAND}). " + where
    )

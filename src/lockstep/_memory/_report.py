"""A data race as data: the two unordered accesses and what each thread synchronised last."""

from __future__ import annotations

import attrs

__all__ = ["DataRace", "RaceAccess", "where_text"]


def where_text(where: tuple[str, int]) -> str:
    """``file:line`` of a (file, line) pair ("?" when unknown)."""
    return "?" if where[0] == "?" else f"{where[0]}:{where[1]}"


@attrs.frozen(slots=True)
class RaceAccess:
    """One side of a data race.

    ``thread`` / ``thread_name``: who; ``mode``: "read" or "write"; ``operation``:
    what the code did (``in``, ``[]=``, ``append``, ``write``...); ``location``:
    what it touched (``Manager#1._models['X']``); ``code``: file:line of the access;
    ``step``: its step in the failing trace when ``switch`` (the access was a switch
    point), else the thread's last step before it (the access ran right after that
    step; None when the thread had none); ``last_sync``: the last synchronisation
    the thread did before it (None: none since it started).
    """

    thread: int
    thread_name: str
    mode: str
    operation: str
    location: str
    code: str
    step: int | None
    last_sync: str | None
    switch: bool = True

    def describe(self) -> str:
        """One line: who did what where, and the last synchronisation before it."""
        if self.step is None:
            step = ""
        elif self.switch:
            step = f" (step {self.step})"
        else:
            step = f" (right after step {self.step})"
        sync = self.last_sync or "nothing since the thread started"
        return (
            f"thread {self.thread}:{self.thread_name} {self.mode}s {self.location} "
            f"({self.operation}) at {self.code}{step}; its last synchronisation before: {sync}"
        )


@attrs.frozen(slots=True)
class DataRace:
    """Two accesses to one watched location, at least one a write, with no
    happens-before order between them (``first`` happened first in this trace).

    ``order``: the two change the key order of one container in ways that do not
    commute (two inserts, a ``move_to_end`` and an insert, a set's insert and
    removal): each is atomic, but which ran first decides the order, and
    ``observed`` is the access made after both that read it (an iteration, a
    ``popitem``...); ``location`` then names the container's key order.
    """

    location: str
    first: RaceAccess
    second: RaceAccess
    # Real (uncontrolled) primitives the second access's thread could reach, one phrase
    # each (lockstep._memory._uncontrolled): when there are any, the race is unproven.
    uncontrolled: tuple[str, ...] = ()
    order: bool = False
    observed: RaceAccess | None = None

    def observed_code(self) -> str:
        """``file:line`` of the access that read the order ("?" when there is none)."""
        return "?" if self.observed is None else self.observed.code

    def _sides(self) -> tuple[RaceAccess, ...]:
        if self.observed is None:
            return (self.first, self.second)
        return (self.first, self.second, self.observed)

    @property
    def steps(self) -> tuple[int, ...]:
        """The trace steps that mark the accesses (the access itself when it was a
        switch point, else the thread's step right before it)."""
        return tuple(s.step for s in self._sides() if s.step is not None)

    def marks(self) -> dict[int, str]:
        """Step -> the note that marks a race access on that step's row."""
        notes: dict[int, str] = {}
        for side in self._sides():
            if side.step is None:
                continue
            if side.switch:
                note = "<< RACE"
            else:
                where = side.code.replace("\\", "/").rsplit("/", 1)[-1]
                note = f"<< RACE: then {side.mode}s {side.location} @{where}"
            notes[side.step] = f"{notes[side.step]}; {note}" if side.step in notes else note
        return notes

    def describe(self) -> str:
        """The race in a few lines (what ``str(failure)`` shows under the message)."""
        lines = [
            f"Data race on {self.location}:",
            f"  1. {self.first.describe()}",
            f"  2. {self.second.describe()}",
        ]
        if self.observed is not None:
            lines.append(f"  then {self.observed.describe()}")
        if self.uncontrolled:
            lines.append(
                "Unproven: nothing lockstep controls orders the two accesses, but thread "
                f"{self.second.thread} can reach synchronisation that lockstep does not "
                "control, which may order them:"
            )
            lines.extend(f"  - {found}" for found in self.uncontrolled)
            lines.append(
                "Patch the module that creates it (`explore(..., patch=[module])`, "
                "`patch_modules()` of a `lockstep check` adapter; a lock created at import "
                "time must be created again after patching) and run again: lockstep then "
                "sees that synchronisation and reports a race only if there is one."
            )
            return "\n".join(lines)
        if self.order:
            lines.append(
                "Nothing orders the two changes: no lock, condition, event, semaphore, "
                "queue, barrier or join between them. Each is atomic, but they change the "
                "container's key order, and the last access reads that order (a loop, "
                "list(), an LRU eviction, popitem), so what it sees depends on which ran "
                "first. Guard both changes with the same lock, or, if what reads the order "
                "does not depend on it (it sorts, say), declare the container intentionally "
                "racy: `__benign_races__ = {attribute: reason}` on the class that holds "
                "it, or `lockstep.watch(obj, racy={attribute: reason})`; its writes are "
                "then switch points and every search explores both orders."
            )
            return "\n".join(lines)
        lines.append(
            "Nothing orders the two accesses: no lock, condition, event, semaphore, queue, "
            "barrier or join between them. Guard both with the same lock, or, if the race "
            "is intended (e.g. a lock-free read rechecked under the lock), declare it: "
            "`__benign_races__ = {attribute: reason}` on the class, or "
            "`lockstep.watch(obj, racy={attribute: reason})`."
        )
        return "\n".join(lines)

"""Shared by the B1-B3 variants: a lifecycle table whose holder retires the entry itself.

Upstream deleted an id's lock entry from the table itself instead of counting
reservations.  `RetiringTable` is the core's `LifecycleTable` with one
method, `hold`, replaced by a small copy (reserve, bounded wait, depth
under the state lock, release) that also retires the entry when
`retire_while_holding` / `retire_after_release` say so; the three variants
differ only in those two answers.  `manager_with(table_cls)` names the table
class of a `ModelManager` (construction wiring, no behaviour).
"""

from __future__ import annotations

from typing import Any

from modelmanager import LockTimeout, ModelManager
from modelmanager.lifecycle import LifecycleTable

__all__ = ["RetiringTable", "manager_with"]


class RetiringTable(LifecycleTable):
    """`LifecycleTable` whose outermost holder deletes the entry (upstream)."""

    def retire_while_holding(self, failed: bool) -> bool:
        """Whether the holder deletes the entry before releasing its lock."""
        return False

    def retire_after_release(self, failed: bool) -> bool:
        """Whether the holder deletes the entry right after releasing its lock."""
        return False

    def retire(self, entry: Any) -> None:
        """Delete `entry` from the table if it is still the current one."""
        resolved_id: str = entry.resolved_id
        with self.state_lock:
            if self._entries.get(resolved_id) is entry:
                del self._entries[resolved_id]

    def hold(self, resolved_id: str, timeout: float) -> Any:
        """The core's `hold` (reserve, bounded wait, release), plus upstream's retirement."""
        return _RetiringHold(self, resolved_id, timeout)


class _RetiringHold:
    """One use of `RetiringTable.hold` (a context manager, like the core's)."""

    def __init__(self, table: RetiringTable, resolved_id: str, timeout: float) -> None:
        self._table = table
        self._resolved_id = resolved_id
        self._timeout = timeout
        self._entry: Any = None
        self._outermost = False

    def __enter__(self) -> None:
        table = self._table
        entry = table._reserve(self._resolved_id)
        if not entry.lock.acquire(True, self._timeout):
            table._release_reservation(entry)
            if table._on_timeout is not None:  # counted, like the core's hold
                table._on_timeout()
            raise LockTimeout(f"the lifecycle lock of model {self._resolved_id!r}", self._timeout)
        with table.state_lock:
            self._outermost = entry.depth == 0
            entry.depth += 1
        self._entry = entry

    def __exit__(self, exc_type: object, exc: object, traceback: object) -> None:
        table, entry = self._table, self._entry
        failed = exc_type is not None
        with table.state_lock:
            entry.depth -= 1
        if self._outermost and table.retire_while_holding(failed):
            table.retire(entry)
        entry.lock.release()
        if self._outermost and table.retire_after_release(failed):
            table.retire(entry)
        table._release_reservation(entry)


def manager_with(table_cls: type[RetiringTable]) -> type[ModelManager]:
    """A `ModelManager` subclass using `table_cls` as its lifecycle table."""

    class Manager(ModelManager):
        _lifecycle_table_class = table_cls

    Manager.__name__ = Manager.__qualname__ = f"ModelManagerWith{table_cls.__name__}"
    return Manager

"""Shared by the B1-B3 variants: a lifecycle table whose holder retires the entry itself.

Upstream deleted an id's lock entry from the table itself instead of counting
reservations.  `RetiringTable` is the core's `LifecycleTable` with one
method, `hold`, replaced by a copy that retires the entry when
`retire_while_holding` / `retire_after_release` say so; the three variants
differ only in those two answers.  `manager_with(table_cls)` swaps the table
into a `ModelManager` (construction wiring, no behaviour).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
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

    def _retire(self, entry: Any) -> None:
        with self._state_lock:
            if self._entries.get(entry.resolved_id) is entry:
                del self._entries[entry.resolved_id]

    @contextmanager
    def hold(self, resolved_id: str, timeout: float) -> Iterator[None]:
        """The core's `hold`, plus the retirement upstream did by hand."""
        entry = self._reserve(resolved_id)
        try:
            if not entry.lock.acquire(timeout=timeout):
                raise LockTimeout(f"the lifecycle lock of model {resolved_id!r}", timeout)
            outermost = entry.depth == 0
            failed = True
            try:
                entry.depth += 1
                yield
                failed = False
            finally:
                entry.depth -= 1
                if outermost and self.retire_while_holding(failed):
                    self._retire(entry)
                entry.lock.release()
                if outermost and self.retire_after_release(failed):
                    self._retire(entry)
        finally:
            self._release_reservation(entry)


def manager_with(table_cls: type[RetiringTable]) -> type[ModelManager]:
    """A `ModelManager` subclass using `table_cls` as its lifecycle table."""

    class Manager(ModelManager):
        def __init__(self, registry: Any, *, lock_timeout: float = 60.0) -> None:
            super().__init__(registry, lock_timeout=lock_timeout)
            self._lifecycle = table_cls()

    Manager.__name__ = Manager.__qualname__ = f"ModelManagerWith{table_cls.__name__}"
    return Manager

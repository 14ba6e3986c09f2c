"""A small third-party-style module with an atomicity violation (a quality-test sample).

It uses the standard ``threading`` module only; lockstep explores it by patching
this module's ``threading`` name (``lockstep.patched``).  The bug: ``take`` checks
the stock under the lock, releases it, then decrements under a second
acquisition, so two concurrent takers of the last item both succeed and the
stock goes negative.
"""

from __future__ import annotations

import threading


class Inventory:
    """Item counts guarded by one lock (the check and the update are not atomic)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stock: dict[str, int] = {}

    def add(self, item: str, count: int) -> None:
        with self._lock:
            self._stock[item] = self._stock.get(item, 0) + count

    def take(self, item: str, count: int) -> bool:
        with self._lock:
            available = self._stock.get(item, 0)
        if available < count:
            return False
        with self._lock:  # BUG: the stock may have changed since the check
            self._stock[item] = self._stock.get(item, 0) - count
        return True

    def stock(self, item: str) -> int:
        with self._lock:
            return self._stock.get(item, 0)

"""B14 admission overshoot: admission ignores loads in flight.

Bug path: `WithFixedSizeCache._in_flight_locked` (one override).  Each of K
concurrent cold adds sees `len < max_size` before any registers, so up to
`max_size - 1 + K` models end up loaded or loading (I11).
"""

from __future__ import annotations

from modelmanager import WithFixedSizeCache
from models_spec.variants._base import VariantAdapter, cache_over_manager

__all__ = ["BUG", "NoInFlightCache", "adapter"]

BUG = "B14"


class NoInFlightCache(WithFixedSizeCache):
    """Counts only registered models against `max_size` (upstream)."""

    def _in_flight_locked(self) -> int:
        return 0


def adapter() -> VariantAdapter:
    """`NoInFlightCache(Manager)`."""
    return VariantAdapter(
        BUG,
        "variant-B14-admission-overshoot",
        __name__,
        cache_over_manager(cache_cls=NoInFlightCache),
    )

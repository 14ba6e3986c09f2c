"""B19 lease body raises: ``acquire`` gives the lease back after ``yield``, not in ``finally``.

Bug path: `ModelManager._give_back_after_raise` (one override: it does
nothing), the give-back of the generator behind ``ModelManager.acquire``
when its body raised.  When the ``with`` body raises (an
inference error), the exception leaves the generator at its ``yield`` and
the give-back after it never runs: the lease outlives its context (I18) and
the model can never be removed (a later remove waits out its timeout).  The
hand-written bug this catalogues had slipped past every test of its time.
Only a plain manager runs this path (the cache's acquire takes the inner
manager's lease context), so the variant is a bare manager.
"""

from __future__ import annotations

from modelmanager import ModelManager
from models_spec._harness.catalogue import Bug, Variant
from models_spec.bugs._support import BARE_CAPABILITIES, bare_manager
from models_spec.scenarios import Op, Scenario, Setup

__all__ = ["BUG", "LeakyAcquireManager"]


class LeakyAcquireManager(ModelManager):
    """`acquire` whose give-back is skipped when the body raises."""

    def _give_back_after_raise(self, resolved_id: str) -> None:
        return None  # upstream gave the lease back after the yield, not in a finally


BUG = Bug(
    id="B19",
    title="lease body raises",
    story=(
        "U acquires X (load and lease) and its inference raises inside the with block; "
        "the give-back after the yield is skipped, so X keeps a lease nobody holds "
        "(I18). U's own remove of X, and every later one, waits for that lease until "
        "its timeout: the model can never be unloaded."
    ),
    scenario=Scenario(
        "B19-lease-body-raises",
        ("B19",),
        "a lease or acquire whose body raises gives its lease back: X is removable after",
        [
            ("U", [Op("acquire", "X", body_raises=True), Op("remove", "X")]),
            ("V", [Op("lease", "X", body_raises=True)]),
        ],
        Setup(max_size=2),
    ),
    variants=Variant(bare_manager(LeakyAcquireManager), capabilities=BARE_CAPABILITIES),
    breaks=("I17", "I18"),
    caught_by=("pct", "dpor", "random"),
)

"""Hypothesis profiles for the stateful tests, chosen by HYPOTHESIS_PROFILE.

* ``dev`` (default): few examples, quick local runs.
* ``ci``: more examples and steps, derandomized so CI is deterministic.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile(
    "dev",
    max_examples=25,
    stateful_step_count=20,
    deadline=None,
)
settings.register_profile(
    "ci",
    max_examples=200,
    stateful_step_count=30,
    deadline=None,
    derandomize=True,
    print_blob=True,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

"""Make the repository root importable so ``examples`` resolves under plain ``pytest``.

``python3 -m pytest`` puts the working directory on ``sys.path``; the bare
``pytest`` entry point does not, and ``examples`` is not an installed package.
"""

from __future__ import annotations

import pathlib
import sys

_ROOT = str(pathlib.Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

"""Where an access was made: the first frame outside lockstep and the standard library."""

from __future__ import annotations

import os
import sys
import sysconfig
from typing import Any

from lockstep._memory._report import where_text

__all__ = ["access_location", "access_where"]

_LOCKSTEP_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_STDLIB_DIR = os.path.abspath(sysconfig.get_paths()["stdlib"]) + os.sep


def _skipped(filename: str) -> bool:
    if filename.startswith((_LOCKSTEP_DIR, "<frozen ")):
        return True
    return (
        filename.startswith(_STDLIB_DIR)
        and "site-packages" not in filename
        and "dist-packages" not in filename
    )


_SKIPPED_CODE: dict[Any, bool] = {}


def access_where() -> tuple[str, int]:
    """(file, line) of the code that made an access: the first frame outside lockstep and
    the standard library (``for k in d.keys()`` is attributed to the loop, not to
    ``_collections_abc``). Cheap: whether a code object is skipped is cached."""
    frame: Any = sys._getframe(1)
    skipped = _SKIPPED_CODE
    while frame is not None:
        code = frame.f_code
        skip = skipped.get(code)
        if skip is None:
            skip = skipped[code] = _skipped(code.co_filename)
        if not skip:
            return code.co_filename, frame.f_lineno
        frame = frame.f_back
    return "?", 0


def access_location() -> str:
    """file:line of the code that made an access (see :func:`access_where`)."""
    return where_text(access_where())

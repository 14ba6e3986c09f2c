"""Where an access was made: the first frame outside lockstep and the standard library.

The race detector records the place of every access it keeps, but reads it only
for a report, so the hot path keeps a *site*: the code object and the offset of the
instruction that made the access (what the frame holds anyway, no string built, no
line table read). :func:`site_text` turns a site into ``file:line`` when a race
report or a trace line needs it.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from types import CodeType
from typing import Any

__all__ = [
    "UNKNOWN_SITE",
    "USER_CODE",
    "Site",
    "access_frame",
    "access_location",
    "access_site",
    "frame_location",
    "is_skipped_code",
    "is_skipped_file",
    "site_line",
    "site_of",
    "site_text",
]

_LOCKSTEP_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_STDLIB_DIR = os.path.abspath(sysconfig.get_paths()["stdlib"]) + os.sep

Site = tuple[CodeType | None, int]
"""(code object, instruction offset) of an access; ``(None, 0)`` when unknown."""

UNKNOWN_SITE: Site = (None, 0)


def _skipped(filename: str) -> bool:
    if filename.startswith((_LOCKSTEP_DIR, "<frozen ")):
        return True
    return (
        filename.startswith(_STDLIB_DIR)
        and "site-packages" not in filename
        and "dist-packages" not in filename
    )


USER_CODE: dict[int, CodeType] = {}
"""id(code) -> code, for the code objects whose frames are *not* skipped (the code under
test), filled by :func:`site_of`. A hot path tests ``USER_CODE.get(id(code)) is code``
(hashing a code object hashes its contents, so it is looked up by identity; the
value keeps the code alive, so its id is not reused)."""
_SKIPPED_CODE: dict[int, CodeType] = {}  # the same, for the frames that are skipped


def access_site(skip: int) -> Site:
    """The site of the code that made an access: the first frame, from ``skip`` frames
    above this one, outside lockstep and the standard library (``for k in d.keys()``
    is attributed to the loop, not to ``_collections_abc``).

    ``skip`` must not exceed the number of lockstep frames between this call and the
    code under test (frames below it are walked, which only costs time). Cheap:
    whether a code object is skipped is cached, and no line is computed.
    """
    try:
        frame: Any = sys._getframe(skip)
    except ValueError:  # the stack is not that deep
        return UNKNOWN_SITE
    return site_of(frame)


def site_of(frame: Any) -> Site:
    """The site of ``frame``, or of the first frame below it that is not skipped."""
    found = _user_frame(frame)
    return UNKNOWN_SITE if found is None else (found.f_code, found.f_lasti)


def is_skipped_file(filename: str) -> bool:
    """Whether ``filename`` is lockstep's or the standard library's (not code under test)."""
    return _skipped(filename)


def is_skipped_code(code: CodeType) -> bool:
    """Whether frames running ``code`` are lockstep's or the standard library's (not the
    code under test)."""
    key = id(code)
    if USER_CODE.get(key) is code:
        return False
    if _SKIPPED_CODE.get(key) is code:
        return True
    if _skipped(code.co_filename):
        _SKIPPED_CODE[key] = code
        return True
    USER_CODE[key] = code
    return False


def _user_frame(frame: Any) -> Any:
    """``frame`` or the first frame below it that is not skipped (None: none is)."""
    user = USER_CODE
    skipped = _SKIPPED_CODE
    while frame is not None:
        code = frame.f_code
        key = id(code)
        if user.get(key) is code:
            return frame
        if skipped.get(key) is not code:
            if not _skipped(code.co_filename):
                user[key] = code
                return frame
            skipped[key] = code
        frame = frame.f_back
    return None


def access_frame(skip: int) -> Any:
    """The frame of the code that made an access (None: unknown). ``skip`` as for
    :func:`access_site`."""
    try:
        return _user_frame(sys._getframe(skip))
    except ValueError:
        return None


def frame_location(frame: Any) -> str:
    """``file:line`` of ``frame`` now ("?" for None): its own line number, no line
    table read."""
    return "?" if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


def access_location(skip: int) -> str:
    """``file:line`` of the code that made an access, now (for a switch point's label).
    ``skip`` as for :func:`access_site`."""
    try:
        frame: Any = _user_frame(sys._getframe(skip))
    except ValueError:
        return "?"
    return frame_location(frame)


def site_line(site: Site) -> int:
    """The source line of ``site`` (what the frame's ``f_lineno`` said at the access)."""
    code, offset = site
    if code is None:
        return 0
    line: int | None = None
    for start, end, number in code.co_lines():
        if start <= offset < end:
            line = number
            break
    return code.co_firstlineno if line is None else line


def site_text(site: Site) -> str:
    """``file:line`` of ``site`` ("?" when unknown)."""
    code = site[0]
    if code is None:
        return "?"
    return f"{code.co_filename}:{site_line(site)}"

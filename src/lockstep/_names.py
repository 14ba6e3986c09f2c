"""Refusing a misspelt keyword with a sentence: the nearest known name, then all of them.

A settings object or a capabilities record that took an unknown keyword silently would
run with the default instead of what was meant (a misspelt ``systematic`` makes a
complete search report itself as sampled). Python's own ``unexpected keyword argument``
names the culprit but not the fix; :func:`check_names` says both.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from lockstep.errors import InvalidArgument

__all__ = ["check_names"]


def check_names(
    owner: str, given: Iterable[str], known: Iterable[str], *, kind: str = "field"
) -> None:
    """Raise InvalidArgument for the first of ``given`` that is not in ``known``.

    The message names ``owner`` and the unknown name, suggests the closest known one
    when there is a close one, and lists every known name (sorted).
    """
    allowed = sorted(known)
    for name in given:
        if name in allowed:
            continue
        near = difflib.get_close_matches(name, allowed, n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        raise InvalidArgument(f"{owner} has no {kind} {name!r}{hint} (known: {', '.join(allowed)})")

"""A stand-in for the ``datetime`` module whose "now" is the run's virtual clock.

Inside a run, :mod:`lockstep._clock` makes ``time.time()`` virtual; code that reads the
wall clock through ``datetime`` instead (``datetime.now()``, ``datetime.utcnow()``,
``date.today()``: a cron-like scheduler, an expiry stamp) would see real time barely
move while virtual timeouts fire. In a patched module (``explore(patch=...)``,
:func:`lockstep.patched`) the ``datetime`` name, and the ``datetime`` and ``date``
classes imported from it, are swapped for this module's: their "now" is
``time.time()``'s virtual value (a fixed epoch plus the run's clock), in the local
time zone as the real ones (or the given ``tz``). Outside a run they are the real
functions.

The stand-in classes only answer those calls: constructing one (``datetime(2026, 1,
1)``) and every other class method (``fromisoformat``, ``combine``...) give instances
of the real classes, and ``isinstance(x, datetime)`` / ``issubclass`` answer as for
the real classes, so values flow between patched and unpatched code unchanged. Every
other name of the module (``timedelta``, ``timezone``...) is the real one.
"""

from __future__ import annotations

import datetime as _real
from typing import Any

from lockstep._clock import time as _virtual_or_real_time
from lockstep._runtime import current_logical_thread

__all__ = ["date", "datetime"]


def _virtual_timestamp() -> float | None:
    """The run's virtual ``time.time()``, or None outside a run."""
    if current_logical_thread() is None:
        return None
    return _virtual_or_real_time()


class _PassThrough(type):
    """Instance and subclass checks answer as for the real class."""

    _ls_real: type

    def __instancecheck__(cls, instance: object) -> bool:
        return isinstance(instance, cls._ls_real)

    def __subclasscheck__(cls, subclass: type) -> bool:
        return issubclass(subclass, cls._ls_real)


class date(_real.date, metaclass=_PassThrough):
    """``datetime.date`` whose ``today()`` is virtual inside a run."""

    _ls_real = _real.date

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        return _real.date(*args, **kwargs)

    @classmethod
    def today(cls) -> Any:
        stamp = _virtual_timestamp()
        return _real.date.today() if stamp is None else _real.date.fromtimestamp(stamp)


class datetime(_real.datetime, metaclass=_PassThrough):
    """``datetime.datetime`` whose ``now()``, ``utcnow()`` and ``today()`` are virtual
    inside a run."""

    _ls_real = _real.datetime

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        return _real.datetime(*args, **kwargs)

    @classmethod
    def now(cls, tz: _real.tzinfo | None = None) -> Any:
        stamp = _virtual_timestamp()
        return _real.datetime.now(tz) if stamp is None else _real.datetime.fromtimestamp(stamp, tz)

    @classmethod
    def today(cls) -> Any:
        return cls.now()

    @classmethod
    def utcnow(cls) -> Any:
        stamp = _virtual_timestamp()
        if stamp is None:
            return _real.datetime.now(_real.UTC).replace(tzinfo=None)
        return _real.datetime.fromtimestamp(stamp, _real.UTC).replace(tzinfo=None)


def __getattr__(name: str) -> Any:
    return getattr(_real, name)

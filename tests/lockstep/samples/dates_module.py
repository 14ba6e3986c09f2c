"""Code that reads the wall clock through ``datetime``, both ways it is imported."""

import datetime
from datetime import date, timedelta
from datetime import datetime as DateTime


def stamp() -> DateTime:
    return DateTime.now()


def stamp_utc() -> DateTime:
    return datetime.datetime.now(datetime.UTC)


def today() -> date:
    return date.today()


def is_due(due: DateTime) -> bool:
    return isinstance(due, DateTime) and DateTime.now() >= due


def later(seconds: float) -> DateTime:
    return DateTime.now() + timedelta(seconds=seconds)

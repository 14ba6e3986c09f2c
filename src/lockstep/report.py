"""What a failure is made of, and its renderings.

A :class:`~lockstep.Failure` carries a :class:`Trace` (the :class:`StepRecord` of every
step: thread, operation, location, preemption) and, for a deadlock, a table of
:class:`BlockedThread`, for a data race a :class:`DataRace` (its two :class:`RaceAccess`
sides). ``Trace.swimlanes()`` renders text swimlanes;
:func:`render_html` writes a self-contained HTML timeline of a failure, optionally with
extra :class:`HtmlSection` parts such as a linearizability :func:`history_fragment`
(:func:`render_history_html` renders a history alone). :func:`abbreviate` shortens
a long value for a message (head and tail around the count left out);
:func:`format_exception` is a traceback without lockstep's frames nor a harness's
(``__tracebackhide__``).
"""

from lockstep._failure import FAILURE_KINDS, BlockedThread, FailureKind, format_exception
from lockstep._html import HtmlSection, history_fragment, render_history_html, render_html
from lockstep._memory._report import DataRace, RaceAccess
from lockstep._text import abbreviate
from lockstep._trace import StepRecord, Trace

__all__ = [
    "FAILURE_KINDS",
    "BlockedThread",
    "DataRace",
    "FailureKind",
    "HtmlSection",
    "RaceAccess",
    "StepRecord",
    "Trace",
    "abbreviate",
    "format_exception",
    "history_fragment",
    "render_history_html",
    "render_html",
]

"""Self-contained HTML renderings: an execution timeline and a linearizability history.

Both functions return one complete HTML document as a string, with inline CSS,
no script and no external resource, so the file can be attached to a CI run,
mailed, or opened offline years later.  Every piece of text that comes from
the run (thread names, labels, file paths, reprs of inputs and outputs) is
HTML-escaped: a hostile ``repr`` cannot inject markup.

* :func:`render_html` draws a step table with one column per thread: each
  step sits in the column of the thread that ran it, with its operation and
  ``file:line``; preemptions and fired timeouts are marked, the failing step
  and the failure message are highlighted.  Rows are plain dicts as produced
  by ``Trace.to_rows()``.
* :func:`render_history_html` draws a history as lanes, one per process, each
  operation a bar from call to return (open-ended when it never returned),
  with the shortest non-linearizable prefix and its culprit highlighted and
  the longest linearization numbered.  :func:`history_fragment` gives the same
  drawing as a fragment to embed in a timeline through ``extra_sections``.
"""

from __future__ import annotations

import html as _html
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from lockstep._linearizability import CheckResult, HistoryRecorder, Operation

__all__ = ["HtmlSection", "history_fragment", "render_history_html", "render_html"]


@attrs.frozen
class HtmlSection:
    """An extra section appended to a rendered page.

    ``body`` is plain text (escaped, shown preformatted) unless ``raw`` is
    True, in which case it must be trusted HTML produced by this module
    (e.g. :func:`history_fragment`).
    """

    heading: str
    body: str
    raw: bool = False


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:1.5em;color:#1d1d1f}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}
table.timeline{border-collapse:collapse;font-size:13px}
table.timeline th,table.timeline td{border:1px solid #d0d0d7;padding:3px 6px;vertical-align:top}
table.timeline th{background:#f0f0f5;position:sticky;top:0}
td.num{text-align:right;color:#666;font-variant-numeric:tabular-nums}
td.op{background:#eef5ff}
td.op code{font-size:12px}
.loc{color:#666;font-size:11px;display:block}
.note{color:#7a4b00;font-size:11px;display:block}
tr.preempt td.num{background:#ffe9b3;font-weight:bold}
tr.preempt td.op{border-left:3px solid #e6a100}
tr.timeout td.op{background:#f3e8ff}
tr.failure td{background:#ffd9d9 !important}
tr.race td.op{background:#ffe0e6;border:2px solid #d81b60}
.badge{display:inline-block;font-size:10px;padding:0 4px;border-radius:3px;margin-right:4px}
.b-pre{background:#e6a100;color:#fff}.b-to{background:#8a4fd8;color:#fff}
.b-fail{background:#c62828;color:#fff}.b-race{background:#d81b60;color:#fff}
.failure-box{border:2px solid #c62828;background:#fff4f4;padding:.6em 1em;white-space:pre-wrap;
font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
pre{background:#f7f7fa;padding:.6em;overflow:auto;font-size:12px}
.legend{font-size:12px;color:#555}
.lanes{position:relative;border:1px solid #d0d0d7;font-size:11px}
.lane{position:relative;border-bottom:1px dashed #e0e0e6}
.lane-name{position:absolute;left:0;width:9em;padding:2px 4px;overflow:hidden;
white-space:nowrap;text-overflow:ellipsis;font-weight:bold}
.track{position:absolute;left:9.5em;right:.5em;top:0;bottom:0}
.bar{position:absolute;height:18px;background:#cfe3ff;border:1px solid #5b8fd9;border-radius:3px;
overflow:hidden;white-space:nowrap;text-overflow:ellipsis;padding:0 3px;box-sizing:border-box}
.bar.pending{border-style:dashed;background:repeating-linear-gradient(45deg,#eef3fb,#eef3fb 4px,
#dfe8f7 4px,#dfe8f7 8px)}
.bar.prefix{background:#ffe0b2;border-color:#e08a00}
.bar.culprit{background:#ffb3b3;border-color:#c62828;border-width:2px}
.verdict-ok{color:#1b7f3b}.verdict-illegal{color:#c62828}.verdict-unknown{color:#8a6d00}
"""

_REQUIRED_INT_KEYS = ("step", "thread")


def _e(value: object) -> str:
    return _html.escape("" if value is None else str(value), quote=True)


def _page(title: str, body: Iterable[str]) -> str:
    return "".join(
        [
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
            f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
            f"<h1>{_e(title)}</h1>",
            *body,
            "</body></html>\n",
        ]
    )


def _validate_rows(rows: object) -> list[Mapping[str, Any]]:
    if isinstance(rows, str | bytes) or not isinstance(rows, Iterable):
        raise TypeError(f"render_html: rows must be a sequence of dicts (got {rows!r})")
    checked: list[Mapping[str, Any]] = []
    for k, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise TypeError(f"render_html: rows[{k}] must be a dict (got {row!r})")
        for key in _REQUIRED_INT_KEYS:
            value = row.get(key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(
                    f"render_html: rows[{k}][{key!r}] must be a non-negative int (got {value!r})"
                )
        checked.append(row)
    return checked


def _sections(extra_sections: Iterable[HtmlSection | tuple[str, str]]) -> list[str]:
    parts: list[str] = []
    for k, item in enumerate(extra_sections):
        section = (
            HtmlSection(str(item[0]), str(item[1]))
            if isinstance(item, tuple) and len(item) == 2
            else item
        )
        if not isinstance(section, HtmlSection):
            raise TypeError(
                f"render_html: extra_sections[{k}] must be an HtmlSection or a "
                f"(heading, text) pair (got {item!r})"
            )
        body = section.body if section.raw else f"<pre>{_e(section.body)}</pre>"
        parts.append(f"<section><h2>{_e(section.heading)}</h2>{body}</section>")
    return parts


def render_html(
    rows: Sequence[Mapping[str, Any]],
    *,
    title: str,
    thread_names: Sequence[str],
    extra_sections: Iterable[HtmlSection | tuple[str, str]] = (),
    failure_message: str | None = None,
    failure_step: int | None = None,
    marked_steps: Collection[int] | Mapping[int, str] = (),
    description: str | None = None,
) -> str:
    """Render an execution as a self-contained HTML timeline (one column per thread).

    Each row is a dict with the keys ``step`` (int), ``thread`` (int),
    ``thread_name``, ``op``, ``resource``, ``location`` ("file:line" or
    None), ``preemption`` (bool) and ``note`` (str or None); ``label`` and
    ``kind`` (as in ``Trace.to_rows()``) are shown when present, other keys
    are ignored, and missing optional keys count as None/False.
    ``thread_names`` names the columns by thread index (threads beyond it
    take the row's ``thread_name``).  ``failure_message`` is shown in a red
    box at the top; ``failure_step`` (default: the last step when a failure
    message is given) is highlighted.  ``marked_steps`` (a data race's two
    accesses: ``Failure.race.marks()``, step -> note) get a "race" badge and
    their note.  ``description`` (what the scenario does: its title and each thread's
    operations) is shown first, under the title, as preformatted text.  ``extra_sections``
    are appended.

    Raises ``TypeError``/``ValueError`` naming the offending row or argument.
    Pure function; thread-safe.
    """
    checked = _validate_rows(rows)
    if not isinstance(title, str):
        raise TypeError(f"render_html: title must be a str (got {title!r})")
    if isinstance(thread_names, str) or not all(isinstance(n, str) for n in thread_names):
        raise TypeError(
            f"render_html: thread_names must be a sequence of str (got {thread_names!r})"
        )
    names = list(thread_names)
    for row in checked:
        while len(names) <= row["thread"]:
            names.append(f"T{len(names)}")
        if row["thread"] >= len(thread_names) and row.get("thread_name"):
            names[row["thread"]] = str(row["thread_name"])
    if failure_step is None and failure_message is not None and checked:
        failure_step = checked[-1]["step"]
    sections = _sections(extra_sections)

    body: list[str] = []
    if description is not None:
        if not isinstance(description, str):
            raise TypeError(f"render_html: description must be a str (got {description!r})")
        body.append(f'<pre class="description">{_e(description)}</pre>')
    if failure_message is not None:
        body.append(f'<div class="failure-box">{_e(failure_message)}</div>')
    preemptions = sum(1 for row in checked if row.get("preemption"))
    body.append(
        f'<p class="legend">{len(checked)} step(s), {len(names)} thread(s), '
        f"{preemptions} preemption(s). "
        '<span class="badge b-pre">preempt</span>the previous thread could have continued (or '
        "went on after a sleep or a timeout while another could run); "
        '<span class="badge b-to">timeout</span>a timed wait timed out; '
        + (
            '<span class="badge b-race">race</span>an access of the data race; '
            if marked_steps
            else ""
        )
        + '<span class="badge b-fail">failure</span>the failing step.</p>'
    )
    head = "".join(f"<th>{index}: {_e(name)}</th>" for index, name in enumerate(names))
    body.append(f'<table class="timeline"><thead><tr><th>step</th>{head}</tr></thead><tbody>')
    for row in checked:
        thread = row["thread"]
        classes = []
        badges = []
        if row.get("preemption"):
            classes.append("preempt")
            badges.append('<span class="badge b-pre">preempt</span>')
        if row.get("kind") == "timeout":
            classes.append("timeout")
            badges.append('<span class="badge b-to">timeout</span>')
        if row["step"] in marked_steps:
            classes.append("race")
            badges.append('<span class="badge b-race">race</span>')
        if failure_step is not None and row["step"] == failure_step:
            classes.append("failure")
            badges.append('<span class="badge b-fail">failure</span>')
        op = str(row.get("op") or "")
        label = row.get("label")
        resource = row.get("resource")
        text = f"{op} {label}" if label and str(label) not in op else op
        if resource is not None and (label is None or str(resource) != str(label)):
            text = f"{text} [{resource}]"
        cell = f"{''.join(badges)}<code>{_e(text)}</code>"
        if row.get("location"):
            cell += f'<span class="loc">{_e(row["location"])}</span>'
        if row.get("note"):
            cell += f'<span class="note">{_e(row["note"])}</span>'
        if isinstance(marked_steps, Mapping) and row["step"] in marked_steps:
            cell += f'<span class="note">{_e(marked_steps[row["step"]])}</span>'
        cells = "".join(
            f'<td class="op">{cell}</td>' if index == thread else "<td></td>"
            for index in range(len(names))
        )
        class_attr = f' class="{" ".join(classes)}"' if classes else ""
        body.append(f'<tr{class_attr}><td class="num">{row["step"]}</td>{cells}</tr>')
    body.append("</tbody></table>")
    body.extend(sections)
    return _page(title, body)


def _same_op(a: Operation, b: Operation) -> bool:
    # Prefix operations cut mid-flight are copies with ret=None; match on the
    # fields the cut keeps.
    return a.process == b.process and a.call == b.call and a.input == b.input


def history_fragment(
    history: Iterable[Operation] | HistoryRecorder, result: CheckResult | None = None
) -> str:
    """The lanes drawing of :func:`render_history_html` as an HTML fragment.

    Trusted output of this module: embed it with ``HtmlSection(heading,
    fragment, raw=True)``.  Raises ``TypeError`` for a non-Operation element
    or a ``result`` that is not a :class:`CheckResult`.
    """
    ops = list(history.history() if isinstance(history, HistoryRecorder) else history)
    for k, op in enumerate(ops):
        if not isinstance(op, Operation):
            raise TypeError(f"render_history_html: history[{k}] must be an Operation (got {op!r})")
    if result is not None and not isinstance(result, CheckResult):
        raise TypeError(f"render_history_html: result must be a CheckResult (got {result!r})")
    parts: list[str] = []
    if result is not None:
        parts.append(
            f'<p><b class="verdict-{_e(result.verdict)}">{_e(result.verdict.upper())}</b> '
            f"({result.steps} spec step(s))</p>"
        )
    if not ops:
        parts.append("<p>(empty history)</p>")
        return "".join(parts)
    start = min(op.call for op in ops)
    end = max(max(op.call, op.ret if op.ret is not None else op.call) for op in ops)
    span = end - start
    # Open-ended bars of operations that never returned run 5% past the end.
    scale = (span * 1.05) if span > 0 else 1.0
    prefix = list(result.prefix) if result is not None else []
    culprit = result.culprit if result is not None else None
    order = {
        id(op): k + 1
        for k, lin in enumerate(result.longest_linearization if result is not None else ())
        for op in ops
        if _same_op(op, lin)
    }
    lanes: dict[Hashable, list[list[Operation]]] = {}
    for op in sorted(ops, key=lambda o: o.call):
        rows = lanes.setdefault(op.process, [])
        for row in rows:  # first sub-row where it does not overlap
            last = row[-1]
            if last.ret is not None and last.ret < op.call:
                row.append(op)
                break
        else:
            rows.append([op])
    parts.append('<div class="lanes">')
    for process, rows in lanes.items():
        height = 6 + 22 * len(rows)
        parts.append(
            f'<div class="lane" style="height:{height}px">'
            f'<div class="lane-name" title="{_e(process)}">{_e(process)}</div><div class="track">'
        )
        for r, row in enumerate(rows):
            for op in row:
                left = 100.0 * (op.call - start) / scale
                stop = (op.ret - start) if op.ret is not None else span * 1.05
                width = max(100.0 * stop / scale - left, 0.8)
                classes = ["bar"]
                if op.ret is None:
                    classes.append("pending")
                if any(_same_op(op, p) for p in prefix):
                    classes.append("prefix")
                if culprit is not None and _same_op(op, culprit):
                    classes.append("culprit")
                number = order.get(id(op))
                shown = f"#{number} " if number else ""
                shown += f"{op.input!r} → {'?' if op.ret is None else repr(op.output)}"
                parts.append(
                    f'<div class="{" ".join(classes)}" title="{_e(op.describe())}" '
                    f'style="left:{left:.3f}%;width:{width:.3f}%;top:{3 + 22 * r}px">'
                    f"{_e(shown)}</div>"
                )
        parts.append("</div></div>")
    parts.append("</div>")
    parts.append(
        '<p class="legend"><span class="badge" style="background:#ffe0b2">prefix</span>'
        "shortest non-linearizable prefix; "
        '<span class="badge" style="background:#ffb3b3">culprit</span>'
        "its last return; dashed: never returned; #k: position in the longest "
        "linearization found.</p>"
    )
    rows_html = "".join(
        f"<tr><td>{_e(op.process)}</td><td>{_e(op.call)}</td>"
        f"<td>{'never' if op.ret is None else _e(op.ret)}</td>"
        f"<td><code>{_e(repr(op.input))}</code></td>"
        f"<td><code>{'?' if op.ret is None else _e(repr(op.output))}</code></td></tr>"
        for op in ops
    )
    parts.append(
        '<table class="timeline"><thead><tr><th>process</th><th>call</th><th>return</th>'
        f"<th>input</th><th>output</th></tr></thead><tbody>{rows_html}</tbody></table>"
    )
    if result is not None:
        parts.append(f"<h2>Explanation</h2><pre>{_e(result.explanation)}</pre>")
    return "".join(parts)


def render_history_html(
    history: Iterable[Operation] | HistoryRecorder,
    result: CheckResult | None = None,
    *,
    title: str = "Linearizability history",
) -> str:
    """Render a history as a self-contained HTML page: one lane per process,
    each operation a bar from call to return, the shortest non-linearizable
    prefix (``result.prefix``) and its culprit highlighted, the longest
    linearization numbered, then a table of all operations and the
    explanation.  Raises as :func:`history_fragment`; pure and thread-safe.
    """
    if not isinstance(title, str):
        raise TypeError(f"render_history_html: title must be a str (got {title!r})")
    return _page(title, [history_fragment(history, result)])

"""Tests for lockstep._html: well-formed, self-contained, escaped, complete."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

import pytest

from lockstep._html import HtmlSection, history_fragment, render_history_html, render_html
from lockstep._linearizability import Operation, check_linearizability

from ._specs import register_step

_VOID = {"meta", "br", "hr", "img", "input", "link"}
HOSTILE = '<script>alert("x")</script>&<b onclick=1>'


class _Checker(HTMLParser):
    """Collects tags and text, and fails on unbalanced markup."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in _VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"unexpected </{tag}> with open {self.stack[-3:]}")
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(document: str) -> _Checker:
    checker = _Checker()
    checker.feed(document)
    checker.close()
    assert checker.errors == []
    assert checker.stack == []
    return checker


def assert_self_contained(checker: _Checker) -> None:
    names = {tag for tag, _ in checker.tags}
    assert "script" not in names
    for tag, attributes in checker.tags:
        for key, value in attributes.items():
            assert key not in {"src", "href"} or not value, (tag, key, value)
            assert not key.startswith("on"), (tag, key)


def rows(n: int) -> list[dict[str, Any]]:
    return [
        {
            "step": i,
            "thread": i % 3,
            "thread_name": f"worker-{i % 3}",
            "op": "Lock.acquire" if i % 2 else "checkpoint",
            "resource": "Lock#1" if i % 2 else None,
            "location": f"app/service.py:{10 + i}",
            "preemption": i == 4,
            "note": "the lost update happens here" if i == 5 else None,
        }
        for i in range(n)
    ]


def test_timeline_is_well_formed_and_complete() -> None:
    """Each step appears in its thread's column with op and location."""
    document = render_html(rows(9), title="run 7", thread_names=["main", "a", "b"])
    checker = parse(document)
    assert_self_contained(checker)
    text = "".join(checker.text)
    for i in range(9):
        assert f"app/service.py:{10 + i}" in text
    assert document.count('<td class="op">') == 9
    assert document.count('class="preempt"') == 1
    assert "the lost update happens here" in text
    assert "1 preemption(s)" in text
    assert document.startswith("<!DOCTYPE html>")


def test_timeline_marks_failure_and_timeouts() -> None:
    """The failure message is shown and the failing step highlighted."""
    data = rows(3)
    data[1] = {**data[1], "kind": "timeout", "label": "Lock#1"}
    document = render_html(
        data,
        title="t",
        thread_names=["main"],
        failure_message="AssertionError: counter == 1",
        extra_sections=[("Schedule", "0.1.2"), HtmlSection("Raw", "<p>kept</p>", raw=True)],
    )
    checker = parse(document)
    assert 'class="failure"' in document
    assert 'class="timeout"' in document
    assert "AssertionError: counter == 1" in "".join(checker.text)
    assert "<p>kept</p>" in document
    assert "0.1.2" in document
    # Threads missing from thread_names take the rows' names.
    assert "worker-2" in "".join(checker.text)


def test_timeline_escapes_hostile_text() -> None:
    """Names, ops, locations, notes and titles cannot inject markup."""
    row = {
        "step": 0,
        "thread": 0,
        "thread_name": HOSTILE,
        "op": HOSTILE,
        "resource": HOSTILE,
        "location": HOSTILE,
        "preemption": False,
        "note": HOSTILE,
    }
    document = render_html(
        [row],
        title=HOSTILE,
        thread_names=[HOSTILE],
        extra_sections=[(HOSTILE, HOSTILE)],
        failure_message=HOSTILE,
    )
    checker = parse(document)
    assert_self_contained(checker)
    assert "<script" not in document
    assert "<b onclick" not in document
    assert HOSTILE in "".join(checker.text)


def test_timeline_rejects_bad_rows() -> None:
    """Bad arguments are named in the error."""
    with pytest.raises(ValueError, match=r"rows\[0\]\['thread'\]"):
        render_html([{"step": 0, "thread": -1}], title="t", thread_names=[])
    with pytest.raises(TypeError, match=r"rows\[1\] must be a dict"):
        render_html([{"step": 0, "thread": 0}, 3], title="t", thread_names=[])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="title must be a str"):
        render_html([], title=3, thread_names=[])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="thread_names"):
        render_html([], title="t", thread_names="main")
    with pytest.raises(TypeError, match=r"extra_sections\[0\]"):
        render_html([], title="t", thread_names=[], extra_sections=[3])  # type: ignore[list-item]


def test_empty_timeline_renders() -> None:
    """No rows still gives a valid document."""
    parse(render_html([], title="nothing", thread_names=[]))


def test_history_rendering_highlights_the_prefix() -> None:
    """Lanes per process; prefix and culprit highlighted; pending ops dashed."""
    history = [
        Operation("writer", 0, 10, ("w", 1)),
        Operation("r1", 1, 2, ("r",), 1),
        Operation("r2", 3, 4, ("r",), 0),
        Operation("late", 20, None, ("w", 2)),
    ]
    result = check_linearizability(history, register_step, initial=0)
    assert result.verdict == "illegal"
    document = render_history_html(history, result, title=HOSTILE)
    checker = parse(document)
    assert_self_contained(checker)
    assert document.count('class="lane"') == 4
    assert document.count("bar culprit") + document.count("prefix culprit") == 1
    assert 'class="bar pending"' in document  # "late" never returned, not in the prefix
    assert "ILLEGAL" in "".join(checker.text)
    assert "<script" not in document
    assert result.explanation.splitlines()[0] in "".join(checker.text)


def test_history_rendering_escapes_reprs_and_handles_empty() -> None:
    """Inputs and outputs are escaped; an empty history renders."""
    history = [Operation(HOSTILE, 0, 1, HOSTILE, HOSTILE)]
    document = render_history_html(history)
    parse(document)
    assert "<script" not in document
    parse(render_history_html([]))
    fragment = history_fragment(history)
    assert fragment.startswith('<div class="lanes">')
    with pytest.raises(TypeError, match=r"history\[0\]"):
        render_history_html([3])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="result must be a CheckResult"):
        render_history_html(history, "ok")  # type: ignore[arg-type]


def test_renders_a_real_failure_trace() -> None:
    """Trace.to_rows() of a real lockstep failure renders: every step, the failure."""
    import lockstep

    def scenario() -> None:
        box = {"n": 0}

        def increment() -> None:
            value = box["n"]
            lockstep.checkpoint("read", resource="n")
            box["n"] = value + 1

        threads = [lockstep.spawn(increment) for _ in range(2)]
        for t in threads:
            t.join()
        assert box["n"] == 2, "lost update"

    result = lockstep.explore(scenario, strategy=lockstep.RandomStrategy(0), budget=100)
    failure = result.failure
    assert failure is not None
    rows = failure.trace.to_rows()
    document = render_html(
        rows,
        title="lost update",
        thread_names=list(failure.trace.thread_names),
        failure_message=str(failure),
        extra_sections=[("Schedule", failure.schedule.to_string())],
    )
    checker = parse(document)
    assert_self_contained(checker)
    assert document.count('<td class="op">') == len(rows)
    assert document.count('class="preempt') == failure.trace.preemptions
    text = "".join(checker.text)
    assert "lost update" in text
    assert failure.schedule.to_string() in text
    for row in rows:
        assert str(row["location"]) in text

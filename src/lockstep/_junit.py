"""JUnit XML for ``lockstep check --junit-xml``: one testsuite per suite, one testcase per case.

The dialect CI systems read (GitHub test reporters, GitLab, Jenkins): ``<testsuites>``
with ``tests``/``failures``/``errors``/``skipped``/``time`` totals, a ``<testsuite>``
per lockstep suite, a ``<testcase classname=... name=... time=...>`` per case. A
failed case carries ``<failure message="one line" type="VERDICT">`` whose text is the
full explanation (message, swimlanes, schedule and HTML paths) ending with the command
that reproduces it; an error ``<error>`` likewise; a skipped case ``<skipped
message=...>``. Characters XML 1.0 cannot hold (control characters from a repr) are
replaced, so the file always parses.
"""

from __future__ import annotations

import re
import socket
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from lockstep._text import abbreviate
from lockstep.suites import CaseResult

__all__ = ["junit_xml"]

_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _clean(text: str) -> str:
    return _INVALID_XML.sub("?", text)


def _case(parent: ET.Element, result: CaseResult) -> None:
    case = ET.SubElement(
        parent,
        "testcase",
        classname=_clean(result.group),
        name=_clean(result.name),
        time=f"{result.elapsed:.3f}",
    )
    message = _clean(abbreviate(result.summary or result.verdict, 1000))
    body = result.details or result.summary
    if result.replay and result.replay not in body:
        body = f"{body}\n\nreproduce: {result.replay}"
    if result.outcome == "failed":
        node = ET.SubElement(case, "failure", message=message, type=result.verdict or "FAIL")
        node.text = _clean(body)
    elif result.outcome == "error":
        node = ET.SubElement(case, "error", message=message, type=result.verdict or "ERROR")
        node.text = _clean(body)
    elif result.outcome == "skipped":
        ET.SubElement(case, "skipped", message=message)
    else:
        out = ET.SubElement(case, "system-out")
        text = f"{result.verdict}: {result.summary}" if result.summary else result.verdict
        if result.artifacts:
            text += "\n" + "\n".join(result.artifacts)
        out.text = _clean(text)


def junit_xml(
    suites: Mapping[str, Sequence[CaseResult]],
    *,
    properties: Mapping[str, str] | None = None,
    timestamp: datetime | None = None,
) -> str:
    """The JUnit XML document for ``suites`` (suite name -> its finished cases)."""
    stamp = (timestamp or datetime.now(UTC)).isoformat(timespec="seconds")
    root = ET.Element("testsuites", name="lockstep check")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    total_time = 0.0
    for name, results in suites.items():
        counts = {
            "tests": len(results),
            "failures": sum(1 for r in results if r.outcome == "failed"),
            "errors": sum(1 for r in results if r.outcome == "error"),
            "skipped": sum(1 for r in results if r.outcome == "skipped"),
        }
        elapsed = sum(r.elapsed for r in results)
        attributes = {
            "name": _clean(name),
            "timestamp": stamp,
            "hostname": _clean(socket.gethostname()),
            "time": f"{elapsed:.3f}",
            **{key: str(value) for key, value in counts.items()},
        }
        suite = ET.SubElement(root, "testsuite", attributes)
        if properties:
            props = ET.SubElement(suite, "properties")
            for key, value in properties.items():
                ET.SubElement(props, "property", name=_clean(key), value=_clean(value))
        for result in results:
            _case(suite, result)
        for key, count in counts.items():
            totals[key] += count
        total_time += elapsed
    for key, total in totals.items():
        root.set(key, str(total))
    root.set("time", f"{total_time:.3f}")
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"

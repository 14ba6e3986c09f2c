"""One run's numbers from what the client and the server saw; medians, ratios, the table.

A run's summary (`summarize`) holds: requests, req/s, p50/p99 latency, errors
by HTTP status and the exceptions upstream logged for them (and the client's
own errors: timeouts, refused connections), the "not found" answers of
inferences split by cause, and the fakes' counts (`_fakes.Recorder`).

"Not found" is an inference answered 503 with ``InferenceModelNotFound``
logged. Its cause, from the server's intervals (one clock, ``time.monotonic``
in the server process):

* ``remove``: a ``/model/remove`` of that id, or a ``/model/clear``, was in
  flight at some point during the inference's request;
* ``eviction``: otherwise, an unload (``clear_cache``) of that id overlapped
  the request: with no remove in flight, the cache evicted it;
* ``neither``: no remove in flight and no unload of that id while the
  request ran; the server lost the model on its own.
"""

from __future__ import annotations

import bisect
import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Any, Final

__all__ = ["GUARANTEES", "guarantee_failures", "median_summary", "render", "summarize"]

_NOT_FOUND: Final = "InferenceModelNotFound"


def _percentile(values: Sequence[float], fraction: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


class _Intervals:
    """Intervals per key, answering "does one overlap [start, end]?" by bisection."""

    def __init__(self, intervals: list[tuple[str, float, float]]) -> None:
        by_key: dict[str, list[tuple[float, float]]] = {}
        for key, start, end in intervals:
            by_key.setdefault(key, []).append((start, end))
        self._starts: dict[str, list[float]] = {}
        self._ends: dict[str, list[float]] = {}
        for key, spans in by_key.items():
            spans.sort()
            self._starts[key] = [s for s, _ in spans]
            # the running maximum of the ends, so one bisection answers
            running, ends = float("-inf"), []
            for _, end in spans:
                running = max(running, end)
                ends.append(running)
            self._ends[key] = ends

    def overlaps(self, key: str, start: float, end: float) -> bool:
        starts = self._starts.get(key)
        if not starts:
            return False
        # intervals starting before `end`; does the latest end among them reach `start`?
        last = bisect.bisect_left(starts, end) - 1
        return last >= 0 and self._ends[key][last] > start


def _not_found_causes(server: dict[str, Any]) -> dict[str, int]:
    removes = _Intervals(
        [
            (model, start, end)
            for op, model, start, end, _, _ in server["requests"]
            if op in ("remove", "clear")
        ]
    )
    unloads = _Intervals(
        [
            (model, start, end if end is not None else float("inf"))
            for model, start, end in server["unloads"]
        ]
    )
    causes = Counter({"remove": 0, "eviction": 0, "neither": 0})
    for op, model, start, end, status, exceptions in server["requests"]:
        if op != "infer" or status != 503 or _NOT_FOUND not in exceptions:
            continue
        if removes.overlaps(model, start, end) or removes.overlaps("*", start, end):
            causes["remove"] += 1
        elif unloads.overlaps(model, start, end):
            causes["eviction"] += 1
        else:
            causes["neither"] += 1
    return dict(causes)


def summarize(results: Sequence[Any], elapsed: float, server: dict[str, Any]) -> dict[str, Any]:
    """One run: the client's `ClientResult` list, its elapsed seconds, the server's report."""
    latencies = [r.latency for r in results]
    errors: Counter[str] = Counter()
    for _, _, _, _, status, exceptions in server["requests"]:
        if status >= 400:
            errors[f"{status} {'+'.join(sorted(set(exceptions))) or '-'}"] += 1
    client_errors = Counter(r.error for r in results if r.error)
    loaded, lru = server["loaded"], server["lru"]
    max_size = server["max_size"]
    return {
        "requests": len(results),
        "req_s": len(results) / elapsed if elapsed > 0 else 0.0,
        "p50_ms": 1000 * _percentile(latencies, 0.50),
        "p99_ms": 1000 * _percentile(latencies, 0.99),
        "http_500": sum(1 for r in server["requests"] if r[4] == 500),
        "errors": dict(errors),
        "client_errors": dict(client_errors),
        "not_found": _not_found_causes(server),
        "constructions": server["constructions"],
        "double_constructions": server["double_constructions"],
        "leaked": server["leaked"],
        "inferences": server["inferences"],
        "inferences_while_unloading": server["inferences_while_unloading"],
        "double_unloads": server["double_unloads"],
        "max_live": server["max_live"],
        "full_collections": server["full_collections"],
        "full_collection_s": server["full_collection_seconds"],
        "explicit_collections": server["explicit_collections"],
        "loaded": loaded,
        "lru": lru,
        "lru_equals_loaded": len(lru) == len(set(lru)) and sorted(lru) == sorted(loaded),
        "bound_held": len(loaded) <= max_size and server["live"] <= max_size,
    }


GUARANTEES: Final[tuple[tuple[str, str], ...]] = (
    ("http_500", "HTTP 500"),
    ("client_errors", "client-side errors (timeouts, refused connections)"),
    ("double_constructions", "concurrent double constructions"),
    ("leaked", "leaked models"),
    ("inferences_while_unloading", "inferences on a model being unloaded"),
    ("double_unloads", "double unloads"),
)
"""Counts that must be 0 for the drop-in in every run."""


def guarantee_failures(run: dict[str, Any]) -> list[str]:
    """The drop-in's hard guarantees this run broke (empty: all held)."""
    failures = []
    for key, label in GUARANTEES:
        value = run[key]
        count = sum(value.values()) if isinstance(value, dict) else value
        if count:
            failures.append(f"{label}: {count}")
    if run["not_found"]["neither"]:
        failures.append(f"'not found' with neither cause: {run['not_found']['neither']}")
    if not run["bound_held"]:
        failures.append(f"bound not held at the end (loaded {run['loaded']})")
    if not run["lru_equals_loaded"]:
        failures.append(f"LRU {run['lru']} != loaded {run['loaded']} at the end")
    return failures


def _median_counts(dicts: Sequence[dict[str, int]]) -> dict[str, float]:
    keys = sorted({key for d in dicts for key in d})
    return {key: statistics.median([d.get(key, 0) for d in dicts]) for key in keys}


def median_summary(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Medians of the runs' numbers (per key for the error tables); booleans as "held in k of n"."""
    numeric = [
        "requests",
        "req_s",
        "p50_ms",
        "p99_ms",
        "http_500",
        "constructions",
        "double_constructions",
        "leaked",
        "inferences",
        "inferences_while_unloading",
        "double_unloads",
        "max_live",
        "full_collections",
        "full_collection_s",
        "explicit_collections",
    ]
    summary: dict[str, Any] = {key: statistics.median([r[key] for r in runs]) for key in numeric}
    for key in ("errors", "client_errors", "not_found"):
        summary[key] = _median_counts([r[key] for r in runs])
    for key in ("lru_equals_loaded", "bound_held"):
        summary[key] = sum(1 for r in runs if r[key])
    summary["runs"] = len(runs)
    summary["req_s_runs"] = [round(r["req_s"], 1) for r in runs]
    summary["p99_runs"] = [round(r["p99_ms"], 1) for r in runs]
    return summary


def _number(value: float) -> str:
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.1f}"
    return f"{int(value):,}"


def _ratio(new: float, old: float) -> str:
    if old == 0:
        return "-" if new == 0 else "inf"
    return f"{new / old:.2f}x"


def render(title: str, stock: dict[str, Any], dropin: dict[str, Any]) -> str:
    """A Markdown table: stock and drop-in medians side by side, ratios where they mean much."""
    rows: list[tuple[str, str, str, str]] = []

    def row(label: str, key: str, ratio: bool = False) -> None:
        rows.append(
            (
                label,
                _number(stock[key]),
                _number(dropin[key]),
                _ratio(dropin[key], stock[key]) if ratio else "",
            )
        )

    def counted(label: str, table: str, key: str) -> None:
        """One count of a per-kind table of both runs (a kind a run never saw: 0)."""
        rows.append(
            (
                label,
                _number(stock[table].get(key, 0)),
                _number(dropin[table].get(key, 0)),
                "",
            )
        )

    row("requests", "requests", ratio=True)
    row("req/s", "req_s", ratio=True)
    row("p50 latency (ms)", "p50_ms", ratio=True)
    row("p99 latency (ms)", "p99_ms", ratio=True)
    row("HTTP 500", "http_500")
    for table, name in (("errors", "HTTP"), ("client_errors", "client error")):
        for key in sorted(set(stock[table]) | set(dropin[table])):
            counted(f"{name} {key}", table, key)
    for cause, label in (
        ("remove", "a concurrent remove"),
        ("eviction", "an eviction"),
        ("neither", "neither"),
    ):
        counted(f"not found: {label}", "not_found", cause)
    row("constructions", "constructions")
    row("concurrent double constructions", "double_constructions")
    row("leaked models", "leaked")
    row("inferences", "inferences")
    row("inferences on a model being unloaded", "inferences_while_unloading")
    row("double unloads", "double_unloads")
    row("most models alive at once", "max_live")
    row("full garbage collections", "full_collections")
    row("of which asked for (gc.collect())", "explicit_collections")
    row("time in full garbage collections (s)", "full_collection_s")
    for key, label in (
        ("lru_equals_loaded", "LRU = loaded at the end"),
        ("bound_held", "bound held at the end"),
    ):
        rows.append(
            (
                label,
                f"{stock[key]} of {stock['runs']} runs",
                f"{dropin[key]} of {dropin['runs']} runs",
                "",
            )
        )
    lines = [
        f"### {title}",
        "",
        f"req/s per run: stock {stock['req_s_runs']}, drop-in {dropin['req_s_runs']}; "
        f"p99 ms per run: stock {stock['p99_runs']}, drop-in {dropin['p99_runs']}",
        "",
        "| | stock | drop-in | drop-in / stock |",
        "| --- | --- | --- | --- |",
    ]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    return "\n".join(lines)

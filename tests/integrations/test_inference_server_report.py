"""The benchmark's bookkeeping, without a server: "not found" causes, leaks, the guarantees.

``benchmarks.inference_server._report`` and ``._fakes`` on hand-made data, so
the classification the smoke run relies on is pinned by deterministic tests.
"""

from __future__ import annotations

from typing import Any

from benchmarks.inference_server._fakes import Costs, FakeRegistry, Recorder
from benchmarks.inference_server._report import guarantee_failures, summarize


class _Result:
    def __init__(self, latency: float, error: str = "") -> None:
        self.op, self.status, self.error, self.latency = "infer", 200, error, latency


def _server(requests: list[list[Any]], unloads: list[list[Any]], **extra: Any) -> dict[str, Any]:
    report = {
        "max_size": 2,
        "requests": requests,
        "unloads": unloads,
        "constructions": 1,
        "double_constructions": 0,
        "inferences": 1,
        "inferences_while_unloading": 0,
        "double_unloads": 0,
        "leaked": 0,
        "live": 1,
        "max_live": 1,
        "loaded": ["a/1"],
        "lru": ["a/1"],
        "full_collections": 0,
        "full_collection_seconds": 0.0,
        "explicit_collections": 0,
    }
    return report | extra


_NOT_FOUND = ["InferenceModelNotFound"]


def test_not_found_is_split_by_its_cause() -> None:
    requests = [
        ["remove", "a/1", 1.0, 2.0, 200, []],
        ["clear", "*", 10.0, 11.0, 200, []],
        ["infer", "a/1", 1.5, 2.5, 503, _NOT_FOUND],  # a remove of a/1 in flight
        ["infer", "b/1", 10.5, 12.0, 503, _NOT_FOUND],  # a clear in flight
        ["infer", "b/1", 3.0, 4.0, 503, _NOT_FOUND],  # b/1 unloaded meanwhile: eviction
        ["infer", "a/1", 5.0, 6.0, 503, _NOT_FOUND],  # nothing overlapping: neither
        ["infer", "a/1", 2.5, 2.6, 503, _NOT_FOUND],  # the remove ended before: neither
        ["infer", "a/1", 7.0, 8.0, 503, ["ModelManagerLockAcquisitionError"]],  # not "not found"
    ]
    unloads = [["b/1", 3.5, 3.6], ["a/1", 4.0, 4.5], ["c/1", 5.0, 6.0]]
    summary = summarize([_Result(0.01)], 1.0, _server(requests, unloads))
    assert summary["not_found"] == {"remove": 2, "eviction": 1, "neither": 2}
    assert summary["errors"] == {
        "503 InferenceModelNotFound": 5,
        "503 ModelManagerLockAcquisitionError": 1,
    }
    assert guarantee_failures(summary) == ["'not found' with neither cause: 2"]


def test_guarantees_name_each_broken_one() -> None:
    requests = [["remove", "a/1", 1.0, 2.0, 500, ["KeyError"]]]
    server = _server(
        requests,
        [],
        double_constructions=2,
        leaked=1,
        inferences_while_unloading=3,
        live=3,
        loaded=["a/1", "b/1", "c/1"],
        lru=["a/1", "a/1"],
    )
    summary = summarize([_Result(0.01), _Result(0.02, error="ReadTimeout")], 1.0, server)
    assert summary["http_500"] == 1
    assert guarantee_failures(summary) == [
        "HTTP 500: 1",
        "client-side errors (timeouts, refused connections): 1",
        "concurrent double constructions: 2",
        "leaked models: 1",
        "inferences on a model being unloaded: 3",
        "bound not held at the end (loaded ['a/1', 'b/1', 'c/1'])",
        "LRU ['a/1', 'a/1'] != loaded ['a/1', 'b/1', 'c/1'] at the end",
    ]


def test_the_fakes_count_overlaps_doubles_and_leaks() -> None:
    recorder = Recorder()
    registry = FakeRegistry(recorder, Costs(0, 0, 0, seed=0), response="ok")
    model_class = registry.get_model("a/1")
    recorder.construction_started("a/1")  # as if another constructor of a/1 were running
    first = model_class(model_id="a/1")
    recorder.construction_ended("a/1", None)
    second = model_class(model_id="a/1")
    assert recorder.double_constructions == 1
    recorder.inference_started(first)  # an inference running on `first` ...
    first.clear_cache()  # ... when its unload begins
    recorder.inference_ended(first)
    assert first.infer_from_request(object()) == "ok"  # and one after
    first.clear_cache()
    assert recorder.inferences_while_unloading == 2
    assert recorder.double_unloads == 1
    assert recorder.leaked([second]) == 0
    assert recorder.leaked([]) == 1  # `second` is neither loaded nor unloaded
    assert (recorder.live, recorder.max_live) == (1, 2)

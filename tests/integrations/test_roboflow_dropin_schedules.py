"""The request lease under every schedule lockstep explores (B17 on the real path).

A request (``infer_from_request_sync``) runs a model while another thread
removes it, or evicts it by loading another model into a full cache. The
model's ``infer_from_request`` is a switch point, and ``clear_cache`` fails
the execution if it runs while an inference is inside. DFS explores every
schedule with up to two preemptions (no timeout fires while a thread can
run: a bounded wait giving up, nothing changed, is allowed and not the point).
Runs where ``inference`` is installed.
"""

from __future__ import annotations

from typing import Any

import pytest

import lockstep
from models_spec.adapter import TargetUnavailable

try:
    from models_spec.targets.roboflow_inference._environment import import_upstream

    import_upstream()
except TargetUnavailable as error:  # pragma: no cover - depends on the environment
    pytest.skip(f"inference is not installed: {error}", allow_module_level=True)

import modelmanager
from modelmanager.integrations import roboflow_inference as dropin


class Request:
    api_key = "key"
    disable_model_monitoring = True


class Model:
    task_type = "object-detection"

    def __init__(self, model_id: str) -> None:
        self.model_id = model_id
        self.running = 0

    def infer_from_request(self, request: Any) -> str:
        self.running += 1
        lockstep.checkpoint(f"infer:{self.model_id}")
        self.running -= 1
        return "ok"

    def clear_cache(self, delete_from_disk: bool = True) -> None:
        lockstep.checkpoint(f"clear:{self.model_id}")
        assert self.running == 0, f"clear_cache of {self.model_id} under a running request"


class Registry:
    def get_model(self, model_id: str, api_key: Any, **kwargs: Any) -> Any:
        def model_class(*, model_id: str, **kwargs: Any) -> Model:
            return Model(model_id)

        return model_class


def _request(manager: Any) -> None:
    try:
        manager.infer_from_request_sync("a/1", Request())
    except Exception as error:
        if type(error).__name__ != "InferenceModelNotFound":  # the unload came first: allowed
            raise


def _explore(unload: Any) -> Any:
    def scenario() -> None:
        manager = dropin.WithFixedSizeCache(dropin.ModelManager(Registry()), max_size=1)
        manager.add_model("a/1", "key")
        threads = [lockstep.spawn(_request, manager), lockstep.spawn(unload, manager)]
        for thread in threads:
            thread.join()

    modules = [*modelmanager.CONCURRENCY_MODULES, *dropin.CONCURRENCY_MODULES]
    return lockstep.explore(
        scenario,
        strategy=lockstep.DFSStrategy(preemption_bound=2, timeouts=False),
        budget=3000,
        patch=[__import__("importlib").import_module(name) for name in modules],
    )


@pytest.mark.parametrize(
    "unload",
    [
        pytest.param(lambda manager: manager.remove("a/1"), id="remove"),
        pytest.param(lambda manager: manager.add_model("b/1", "key"), id="eviction"),
    ],
)
def test_no_unload_under_a_running_request(unload: Any) -> None:
    result = _explore(unload)
    assert result.failure is None, str(result.failure)
    assert result.executions > 1

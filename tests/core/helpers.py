"""Fake models, a scripted registry and thread helpers for the core's unit tests."""

from __future__ import annotations

import threading
from typing import Any


class FakeModel:
    """A model that records its construction arguments and clear_cache calls."""

    def __init__(self, registry: FakeRegistry, model_id: str, api_key: str | None, **kwargs: Any):
        self.registry = registry
        self.model_id = model_id
        self.api_key = api_key
        self.load_kwargs = kwargs
        self.clear_calls: list[bool] = []
        self.cleared = False

    def clear_cache(self, delete_from_disk: bool) -> None:
        self.clear_calls.append(delete_from_disk)
        gate = self.registry.clear_gates.get(self.model_id)
        if gate is not None:
            entered, release = gate
            entered.set()
            assert release.wait(timeout=30), "test never released clear_cache"
        error = self.registry.clear_errors.get(self.model_id)
        if error is not None:
            raise error
        self.cleared = True


class FakeRegistry:
    """Registry whose factories build FakeModels; failures are scripted per id.

    ``load_errors[resolved_id]`` makes that id's constructor raise;
    ``clear_errors[canonical_id]`` makes clear_cache raise; ``gates[resolved_id]``
    is a pair of Events (entered, release): the constructor sets ``entered`` and
    waits for ``release`` (bounded); ``clear_gates[canonical_id]`` does the same
    for clear_cache.
    """

    def __init__(self) -> None:
        self.constructed: list[FakeModel] = []
        self.requested: list[str] = []
        self.load_errors: dict[str, BaseException] = {}
        self.clear_errors: dict[str, BaseException] = {}
        self.gates: dict[str, tuple[threading.Event, threading.Event]] = {}
        self.clear_gates: dict[str, tuple[threading.Event, threading.Event]] = {}

    def get_model(self, model_id: str) -> Any:
        self.requested.append(model_id)

        def factory(*, model_id: str, api_key: str | None = None, **kwargs: Any) -> FakeModel:
            gate = self.gates.get(resolved_id)
            if gate is not None:
                entered, release = gate
                entered.set()
                assert release.wait(timeout=30), "test never released the constructor"
            error = self.load_errors.get(resolved_id)
            if error is not None:
                raise error
            model = FakeModel(self, model_id, api_key, **kwargs)
            self.constructed.append(model)
            return model

        resolved_id = model_id
        return factory

    def gate(self, resolved_id: str) -> tuple[threading.Event, threading.Event]:
        """Make ``resolved_id``'s constructor block; returns (entered, release)."""
        pair = (threading.Event(), threading.Event())
        self.gates[resolved_id] = pair
        return pair

    def live(self) -> list[FakeModel]:
        """Constructed models whose clear_cache has not succeeded."""
        return [m for m in self.constructed if not m.cleared]


def run_in_thread(fn: Any, *args: Any, **kwargs: Any) -> tuple[threading.Thread, dict[str, Any]]:
    """Start ``fn`` in a daemon thread; the dict gets 'result' or 'error'."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["result"] = fn(*args, **kwargs)
        except BaseException as error:  # recorded for the test to assert on
            outcome["error"] = error

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, outcome


def join(thread: threading.Thread) -> None:
    thread.join(timeout=30)
    assert not thread.is_alive(), "worker thread did not finish"

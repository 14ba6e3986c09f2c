"""Fake models behind a fake registry, instrumented: what the benchmark counts on the server.

Upstream's manager asks its registry for a model *class*
(``registry.get_model(model_id, api_key, countinference=..., service_secret=...)``),
constructs it (``model_class(model_id=..., api_key=..., **extra)``), reads
``task_type``, calls ``infer_from_request(request)`` for an inference and
``clear_cache(delete_from_disk=...)`` to unload. The fakes do that and nothing
else (no network, no disk), with the costs the benchmark asks for: a constructor
sleeps up to ``construct_ms``, an unload up to ``unload_ms``, an inference up to
``infer_ms`` (uniform draws from a seeded generator).

`Recorder` sees every call and counts, under one lock:

* a *concurrent double construction*: a constructor of an id that starts while
  another constructor of the same id is running;
* an *inference on a model being unloaded*: an inference of an instance whose
  ``clear_cache`` has begun, at its start or while it runs;
* *double unloads*: a second ``clear_cache`` of one instance;
* the *live* instances (constructed, not yet unloaded) and their maximum;
* each unload's interval (id, start, end; ``time.monotonic``), from which the
  server tells an eviction from "neither" for a "not found" answer.

After a run, `Recorder.leaked` counts the instances that are neither loaded
in the manager nor were ever unloaded: a model the server lost track of,
whose resources nobody will release. The recorder keeps serial numbers, not
the instances, so a model the server drops can die (and the server's
memory reclamation sees it as it would a real model without reference cycles).
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from typing import Any, Final

__all__ = ["Costs", "FakeModel", "FakeRegistry", "Recorder", "Unload"]


class Costs:
    """Upper bounds of the fakes' sleeps, in seconds, and their seeded generator."""

    def __init__(self, construct_ms: float, unload_ms: float, infer_ms: float, seed: int) -> None:
        for name, value in (
            ("construct_ms", construct_ms),
            ("unload_ms", unload_ms),
            ("infer_ms", infer_ms),
        ):
            if value < 0:
                raise ValueError(f"{name} must be >= 0, got {value!r}")
        self.construct = construct_ms / 1000.0
        self.unload = unload_ms / 1000.0
        self.infer = infer_ms / 1000.0
        self._random = random.Random(seed)
        self._lock = threading.Lock()

    def draw(self, upper: float) -> float:
        """A uniform draw in [0, upper] (thread-safe)."""
        if upper <= 0:
            return 0.0
        with self._lock:
            return self._random.uniform(0.0, upper)


class Unload:
    """One ``clear_cache``: its id and interval (``time.monotonic``; ``end`` None while it runs)."""

    __slots__ = ("end", "model_id", "start")

    def __init__(self, model_id: str, start: float) -> None:
        self.model_id = model_id
        self.start = start
        self.end: float | None = None


class Recorder:
    """What every fake model of one run did (see the module doc). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._constructing: Counter[str] = Counter()
        self.constructions = 0
        self.double_constructions = 0
        self.inferences = 0
        self.inferences_while_unloading = 0
        self.unloads: list[Unload] = []
        self.double_unloads = 0
        # serial numbers, not the instances: a model the server drops must be able to die
        self._never_unloaded: set[int] = set()
        self.live = 0
        self.max_live = 0

    # -- called by the fakes
    def construction_started(self, model_id: str) -> None:
        with self._lock:
            if self._constructing[model_id] > 0:
                self.double_constructions += 1
            self._constructing[model_id] += 1

    def construction_ended(self, model_id: str, model: Any | None) -> None:
        with self._lock:
            self._constructing[model_id] -= 1
            if model is not None:
                self.constructions += 1
                model.serial = self.constructions
                self._never_unloaded.add(model.serial)
                self.live += 1
                self.max_live = max(self.max_live, self.live)

    def inference_started(self, model: FakeModel) -> None:
        with self._lock:
            self.inferences += 1
            model.inferring += 1
            if model.unloading:
                self.inferences_while_unloading += 1
                model.counted_inferences += 1

    def inference_ended(self, model: FakeModel) -> None:
        with self._lock:
            model.inferring -= 1

    def unload_started(self, model: FakeModel) -> Unload:
        with self._lock:
            if model.unloading:
                self.double_unloads += 1
            else:
                self.live -= 1
                self._never_unloaded.discard(model.serial)
            model.unloading = True
            # inferences already running on it when its unload begins
            self.inferences_while_unloading += model.inferring
            model.counted_inferences += model.inferring
            unload = Unload(model.model_id, time.monotonic())
            self.unloads.append(unload)
            return unload

    def unload_ended(self, unload: Unload) -> None:
        with self._lock:
            unload.end = time.monotonic()

    # -- read after the run
    def leaked(self, loaded: list[Any]) -> int:
        """Instances never unloaded and not among ``loaded`` (the manager's models now)."""
        held = {model.serial for model in loaded if isinstance(model, FakeModel)}
        with self._lock:
            return sum(1 for serial in self._never_unloaded if serial not in held)


class FakeModel:
    """A model as upstream's manager uses it (see the module doc)."""

    task_type: Final = "object-detection"

    def __init__(self, model_id: str, recorder: Recorder, costs: Costs, response: Any) -> None:
        self.model_id = model_id
        self.serial = 0
        self.inferring = 0
        self.unloading = False
        self.counted_inferences = 0
        self._recorder = recorder
        self._costs = costs
        self._response = response

    def infer_from_request(self, request: object) -> Any:
        """Sleep up to ``infer_ms``, counting an overlap with this instance's unload."""
        self._recorder.inference_started(self)
        try:
            time.sleep(self._costs.draw(self._costs.infer))
            return self._response
        finally:
            self._recorder.inference_ended(self)

    def clear_cache(self, delete_from_disk: bool = True) -> None:
        """Sleep up to ``unload_ms``; the instance counts as unloading from the first call on."""
        unload = self._recorder.unload_started(self)
        try:
            time.sleep(self._costs.draw(self._costs.unload))
        finally:
            self._recorder.unload_ended(unload)

    def __repr__(self) -> str:
        return f"<FakeModel {self.model_id} at {id(self):#x}>"


class FakeRegistry:
    """Upstream's ``ModelRegistry`` interface: a model class per id, constructors instrumented.

    ``response`` is what every inference returns (an upstream response object, so the
    HTTP app serialises it as it would a real model's).
    """

    def __init__(self, recorder: Recorder, costs: Costs, response: Any) -> None:
        self._recorder = recorder
        self._costs = costs
        self._response = response

    def get_model(self, model_id: str, api_key: str | None = None, **_: Any) -> Any:
        """The "model class" of ``model_id``: a constructor that sleeps up to ``construct_ms``.

        Upstream passes its usage flags (``countinference``, ``service_secret``) by
        keyword; the fakes count no usage, so they are taken and ignored."""
        recorder, costs, response = self._recorder, self._costs, self._response

        def model_class(model_id: str, api_key: str | None = None, **_: Any) -> FakeModel:
            recorder.construction_started(model_id)
            model: FakeModel | None = None
            try:
                time.sleep(costs.draw(costs.construct))
                model = FakeModel(model_id, recorder, costs, response)
                return model
            finally:
                recorder.construction_ended(model_id, model)

        return model_class

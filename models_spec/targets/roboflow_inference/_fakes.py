"""The suite's scripted fakes, shaped like what roboflow `inference`'s manager calls.

Upstream's manager asks its registry for a model *class*
(``registry.get_model(model_id, api_key, countinference=...,
service_secret=...)``) and constructs it with ``model_class(model_id=...,
api_key=..., countinference=..., service_secret=..., **extra)`` (``extra``
carries the TorchScript lock and the artifact cache when
``USE_INFERENCE_MODELS`` is on); it reads ``task_type`` (and optional
attributes with ``getattr``), calls ``clear_cache(delete_from_disk=...)``
on removal and ``infer_from_request(request)`` from the inference path.

`UpstreamRegistry` wraps the `ScriptedRegistry` a scenario builds, so
every model is still the `FakeModel` its `Ghost` records (constructor and
``clear_cache`` checkpoints, scripted failures, ghost state); the model's
class is switched to `UpstreamFakeModel`, a subclass that only adds the
attributes upstream touches, so identity and ghost bookkeeping are kept.
Nothing goes to the network or the disk.
"""

from __future__ import annotations

from typing import Any, Final

import lockstep
from models_spec.fakes import FakeModel, ScriptedRegistry, TornDownModelError
from models_spec.invariants import InvariantViolation

__all__ = ["ARTIFACT_CACHE", "InferenceRequest", "UpstreamFakeModel", "UpstreamRegistry"]


class _InertArtifactCache:
    """Stands in for upstream's content-addressed artifact cache (never used by the fakes)."""

    def __repr__(self) -> str:
        return "<inert artifact cache>"


ARTIFACT_CACHE: Final = _InertArtifactCache()
"""Passed to ``ModelManager(content_addressed_artifact_cache=...)``: without it,
upstream opens its shared on-disk blob cache in ``__init__``."""


class InferenceRequest:
    """The request the inference path passes along: what upstream reads of one."""

    api_key: str | None = None
    disable_model_monitoring = True

    def __repr__(self) -> str:
        return "InferenceRequest()"


class UpstreamFakeModel(FakeModel):
    """A `FakeModel` with the attributes upstream's manager reads and calls."""

    task_type = "object-detection"

    def infer_from_request(self, request: object) -> tuple[str, object]:
        """Inference: marks the model in use (I13) around a switch point.

        A ``clear_cache`` that starts while the model is in use is recorded by
        the ghost (I13 at the next switch point); one that completed while
        the inference was parked raises an I13 violation here.
        """
        with self._ghost.use(self):
            lockstep.checkpoint(f"infer:{self.resolved_id}", resource=self.resolved_id)
            try:
                return self.infer(request)
            except TornDownModelError as error:
                raise InvariantViolation(
                    "I13",
                    f"inference on the model of {self.resolved_id!r} ran after its clear_cache "
                    "(the model was unloaded while a request used it): a model in use stays "
                    "loaded until the request ends",
                    model=self.token,
                    error=str(error),
                ) from error


class UpstreamRegistry:
    """Upstream's ``ModelRegistry`` interface over a scenario's `ScriptedRegistry`."""

    def __init__(self, scripted: ScriptedRegistry) -> None:
        self.scripted = scripted
        self.ghost = scripted.ghost

    def get_model(
        self,
        model_id: str,
        api_key: str | None = None,
        countinference: bool | None = None,
        service_secret: str | None = None,
    ) -> Any:
        """The "model class" for `model_id` (a resolved id: upstream passes the alias)."""
        factory = self.scripted.get_model(model_id)

        def model_class(
            model_id: str,
            api_key: str | None = None,
            countinference: bool | None = None,
            service_secret: str | None = None,
            **init_kwargs: Any,
        ) -> UpstreamFakeModel:
            model: Any = factory(model_id=model_id, api_key=api_key, **init_kwargs)
            model.__class__ = UpstreamFakeModel  # the same object the ghost recorded
            return model  # type: ignore[no-any-return]

        return model_class

"""The server process: inference's real HTTP app on uvicorn, one fresh stack per run.

Run as ``python -m benchmarks.inference_server._server``: binds 127.0.0.1 on a
free port, prints ``PORT <n>`` on its first line of stdout and serves until
its standard input closes (the benchmark owns it). Loopback only.

The app is upstream's ``HttpInterface(WithFixedSizeCache(ModelManager(registry),
max_size=N))``, built as upstream's ``docker/config/cpu_http.py`` builds it, from
upstream's stock classes or from the drop-in's
(``modelmanager.integrations.roboflow_inference``), over the fakes of
``_fakes``. Importing the app takes seconds (it imports every workflow block),
so one process serves every run: ``POST /__bench__/start`` builds a fresh stack
(a new registry, manager, cache and ``HttpInterface``, nothing shared with the
previous run's but the process), ``GET /__bench__/report`` reads what the run
did. Every other request goes to the current app through `Observer`, an ASGI
wrapper that records, per request, the operation and model id the client put
in the ``x-bench-op`` and ``x-bench-model`` headers, the answer's status, the
exceptions upstream's route handlers logged while serving it (through a
handler on upstream's ``inference`` logger) or that escaped the app, and its
interval (``time.monotonic``).

Settings: those of ``models_spec.targets.roboflow_inference`` (upstream's
defaults where they matter: 60 s model lock, 5 s queue lock, no memory-pressure
eviction, ``DISK_CACHE_CLEANUP`` on; offline, no metrics, no model-monitoring
cache, ``LOG_LEVEL=ERROR``), plus ``MODEL_CACHE_DIR`` in a temporary directory
that is also the working directory (the app mounts its landing page's static
directories relative to it, so they are created there, empty).
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import json
import logging
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
import traceback
import warnings
from pathlib import Path
from typing import Any

from benchmarks.inference_server._fakes import Costs, FakeRegistry, Recorder

__all__ = ["IMPLEMENTATIONS", "Observer", "RequestRecord", "Stack", "build_stack", "main"]

IMPLEMENTATIONS = ("stock", "drop-in")
"""Which classes build the stack: upstream's own, or the drop-in's."""

_CURRENT: contextvars.ContextVar[RequestRecord | None] = contextvars.ContextVar(
    "bench_request", default=None
)


class RequestRecord:
    """One request as the server saw it."""

    __slots__ = ("end", "exceptions", "model_id", "op", "start", "status")

    def __init__(self, op: str, model_id: str, start: float) -> None:
        self.op = op
        self.model_id = model_id
        self.start = start
        self.end = start
        self.status = 0
        self.exceptions: list[str] = []


class _ExceptionCounter(logging.Handler):
    """Adds the type of each exception upstream logs to the request being served."""

    def emit(self, record: logging.LogRecord) -> None:
        request = _CURRENT.get()
        if request is not None and record.exc_info and record.exc_info[0] is not None:
            request.exceptions.append(record.exc_info[0].__name__)


def _quiet_upstream_logging() -> None:
    """Upstream's loggers write nowhere; their exceptions are counted per request."""
    for name in ("inference", "roboflow_workflows", "streamvision"):
        logger = logging.getLogger(name)
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
        logger.addHandler(_ExceptionCounter())
        logger.propagate = False


def import_app() -> Any:
    """Import upstream (the target's settings), then its HTTP app module; return it."""
    from models_spec.targets.roboflow_inference._environment import import_upstream

    import_upstream()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from inference.core.interfaces.http import http_api
    _quiet_upstream_logging()
    return http_api


def _classes(implementation: str) -> tuple[type, type]:
    if implementation == "stock":
        from inference.core.managers.base import ModelManager
        from inference.core.managers.decorators.fixed_size_cache import WithFixedSizeCache
    elif implementation == "drop-in":
        from modelmanager.integrations import roboflow_inference as dropin

        ModelManager, WithFixedSizeCache = dropin.ModelManager, dropin.WithFixedSizeCache
    else:
        raise ValueError(f"implementation must be one of {IMPLEMENTATIONS}, got {implementation!r}")
    return ModelManager, WithFixedSizeCache


class _FullCollections:
    """Counts the process's full (generation 2) garbage collections and their time, and
    how many were asked for with ``gc.collect()`` (the rest: the interpreter's own)."""

    def __init__(self) -> None:
        self._count = 0
        self._seconds = 0.0
        self._started = 0.0
        self.explicit = 0
        gc.callbacks.append(self._callback)
        _COLLECT_CALLS.append(self)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self._count += 1
            self._seconds += time.perf_counter() - self._started

    def read(self) -> tuple[int, float]:
        return self._count, self._seconds

    def close(self) -> None:
        if self._callback in gc.callbacks:
            gc.callbacks.remove(self._callback)
        if self in _COLLECT_CALLS:
            _COLLECT_CALLS.remove(self)


_COLLECT_CALLS: list[_FullCollections] = []
_REAL_COLLECT = gc.collect


def _counting_collect(generation: int = 2) -> int:
    """``gc.collect`` as the server sees it: counted for the current stack, then run."""
    if generation == 2:
        for counter in _COLLECT_CALLS:
            counter.explicit += 1
    return _REAL_COLLECT(generation)


class Stack:
    """One run's app, manager stack, recorder and request log."""

    def __init__(self, implementation: str, max_size: int, costs: Costs) -> None:
        from inference.core.entities.responses.inference import (
            InferenceResponseImage,
            ObjectDetectionInferenceResponse,
        )

        http_api = sys.modules["inference.core.interfaces.http.http_api"]
        manager_class, cache_class = _classes(implementation)
        response = ObjectDetectionInferenceResponse(
            predictions=[], image=InferenceResponseImage(width=1, height=1)
        )
        self.implementation = implementation
        self.max_size = max_size
        self.recorder = Recorder()
        registry = FakeRegistry(self.recorder, costs, response)
        # as upstream's docker/config/cpu_http.py builds it
        model_manager = manager_class(model_registry=registry)
        model_manager = cache_class(model_manager, max_size=max_size)
        model_manager.init_pingback()
        self.manager = model_manager
        self._collectors_before = set(_prometheus_collectors())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.app = http_api.HttpInterface(model_manager).app
        self.requests: list[RequestRecord] = []
        self.collections = _FullCollections()

    def retire(self) -> None:
        """Unregister the Prometheus collectors this stack's app added to the process-wide
        registry (upstream registers them per ``HttpInterface``; a second one would clash)."""
        from prometheus_client import REGISTRY

        self.collections.close()
        for collector in set(_prometheus_collectors()) - self._collectors_before:
            REGISTRY.unregister(collector)

    def lru(self) -> list[str]:
        """The cache's LRU order, oldest first (each implementation's own bookkeeping)."""
        core = getattr(self.manager, "core", None)
        if core is not None:  # the drop-in's: the core cache's order
            return list(core.lru_order())
        return list(self.manager._key_queue)  # upstream's deque

    def report(self) -> dict[str, Any]:
        """What the run did; call once no request is in flight."""
        loaded_models = self.manager.models()
        loaded = sorted(loaded_models)
        lru = self.lru()
        recorder = self.recorder
        leaked = recorder.leaked(list(loaded_models.values()))
        collections, collection_seconds = self.collections.read()
        explicit = self.collections.explicit
        return {
            "implementation": self.implementation,
            "max_size": self.max_size,
            "requests": [
                [r.op, r.model_id, r.start, r.end, r.status, r.exceptions] for r in self.requests
            ],
            "unloads": [[u.model_id, u.start, u.end] for u in recorder.unloads],
            "constructions": recorder.constructions,
            "double_constructions": recorder.double_constructions,
            "inferences": recorder.inferences,
            "inferences_while_unloading": recorder.inferences_while_unloading,
            "double_unloads": recorder.double_unloads,
            "leaked": leaked,
            "full_collections": collections,
            "full_collection_seconds": collection_seconds,
            "explicit_collections": explicit,
            "live": recorder.live,
            "max_live": recorder.max_live,
            "loaded": loaded,
            "lru": lru,
        }


def _prometheus_collectors() -> list[Any]:
    from prometheus_client import REGISTRY

    return list(REGISTRY._collector_to_names)


class Observer:
    """The ASGI app uvicorn serves: the control routes, and the current stack's app observed."""

    def __init__(self) -> None:
        self.stack: Stack | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await _lifespan(receive, send)
            return
        path = scope["path"]
        if path.startswith("/__bench__/"):
            await self._control(path, receive, send)
            return
        stack = self.stack
        if stack is None:
            await _json(send, 409, {"error": "no stack: POST /__bench__/start first"})
            return
        headers = dict(scope["headers"])
        record = RequestRecord(
            headers.get(b"x-bench-op", b"").decode(),
            headers.get(b"x-bench-model", b"").decode(),
            time.monotonic(),
        )
        token = _CURRENT.set(record)

        async def observed_send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                record.status = message["status"]
            await send(message)

        try:
            await stack.app(scope, receive, observed_send)
        except Exception as error:  # escaped the app: starlette already answered 500
            record.exceptions.append(type(error).__name__)
            if record.status == 0:
                record.status = 500
                await _json(send, 500, {"error": type(error).__name__})
        finally:
            record.end = time.monotonic()
            _CURRENT.reset(token)
            stack.requests.append(record)

    async def _control(self, path: str, receive: Any, send: Any) -> None:
        try:
            await self._control_route(path, receive, send)
        except Exception:
            await _json(send, 500, {"error": traceback.format_exc()})

    async def _control_route(self, path: str, receive: Any, send: Any) -> None:
        if path == "/__bench__/start":
            body = json.loads(await _body(receive))
            costs = Costs(
                body["construct_ms"], body["unload_ms"], body["infer_ms"], int(body["seed"])
            )
            if self.stack is not None:
                self.stack.retire()
            self.stack = None
            gc.collect()
            self.stack = Stack(body["implementation"], int(body["max_size"]), costs)
            await _json(send, 200, {"started": body["implementation"]})
        elif path == "/__bench__/report" and self.stack is not None:
            await _json(send, 200, self.stack.report())
        else:
            await _json(send, 404, {"error": f"unknown control route {path}"})


async def _lifespan(receive: Any, send: Any) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _body(receive: Any) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


async def _json(send: Any, status: int, content: object) -> None:
    body = json.dumps(content).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": body})


def build_stack(implementation: str, max_size: int, costs: Costs) -> Stack:
    """A fresh stack (imports the app first if needed): for tests and the server."""
    import_app()
    return Stack(implementation, max_size, costs)


def _stop_on_stdin_close(server: Any) -> None:
    def watch() -> None:
        sys.stdin.read()
        server.should_exit = True

    threading.Thread(target=watch, name="stdin-watch", daemon=True).start()


def main() -> None:
    """Import the app, bind 127.0.0.1:0, print the port, serve until stdin closes."""
    import uvicorn

    workdir = Path(tempfile.mkdtemp(prefix="inference-server-bench-"))
    try:
        for static in ("inference/landing/out/static", "inference/landing/out/_next/static"):
            (workdir / static).mkdir(parents=True)
        os.environ.setdefault("MODEL_CACHE_DIR", str(workdir / "cache"))
        os.chdir(workdir)
        import_app()
        gc.collect = _counting_collect  # counts the servers' calls (the report's column)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        config = uvicorn.Config(
            Observer(), log_level="warning", access_log=False, lifespan="on", timeout_keep_alive=30
        )
        server = uvicorn.Server(config)
        _stop_on_stdin_close(server)
        print(f"PORT {sock.getsockname()[1]}", flush=True)
        asyncio.run(server.serve(sockets=[sock]))
    finally:
        os.chdir(tempfile.gettempdir())
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()

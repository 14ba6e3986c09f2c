"""The load: concurrent keep-alive clients churning a few model ids, bounded in time and count.

Each client is a coroutine on one ``httpx.AsyncClient`` (a keep-alive
connection pool as large as the number of clients) that, until the deadline
or the shared request budget runs out, draws an operation from `MIX` and a
model id uniformly from ``ids``, sends it, and records the status (or the
client-side exception: a timeout, a refused connection) and the latency.
Every request carries ``x-bench-op`` and ``x-bench-model`` so the server can
attribute what it saw. The draws come from one generator per client seeded
from ``seed``, so a run's sequence of operations per client is reproducible
(their interleaving is not).
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any, Final

import httpx

__all__ = ["MIX", "ClientResult", "model_ids", "run_load"]

MIX: Final[tuple[tuple[str, float], ...]] = (
    ("infer", 0.60),
    ("add", 0.15),
    ("remove", 0.20),
    ("clear", 0.01),
    ("describe", 0.04),
)
"""Operation weights: infer 60%, add 15%, remove 20%, clear 1%, the rest ``GET /model/registry``."""

_IMAGE: Final = {"type": "base64", "value": "AA=="}


def model_ids(count: int) -> list[str]:
    """``count`` model ids in upstream's ``project/version`` form."""
    return [f"bench-{index}/1" for index in range(count)]


class ClientResult:
    """One request as the client saw it: operation, status (0: no answer), error, latency (s)."""

    __slots__ = ("error", "latency", "op", "status")

    def __init__(self, op: str, status: int, error: str, latency: float) -> None:
        self.op = op
        self.status = status
        self.error = error
        self.latency = latency


def _request(op: str, model_id: str) -> tuple[str, str, dict[str, Any] | None]:
    if op == "infer":
        return "POST", "/infer/object_detection", {"model_id": model_id, "image": _IMAGE}
    if op == "add":
        return "POST", "/model/add", {"model_id": model_id}
    if op == "remove":
        return "POST", "/model/remove", {"model_id": model_id}
    if op == "clear":
        return "POST", "/model/clear", None
    return "GET", "/model/registry", None


class _Budget:
    def __init__(self, deadline: float, requests: int) -> None:
        self.deadline = deadline
        self.left = requests

    def take(self) -> bool:
        if self.left <= 0 or time.monotonic() >= self.deadline:
            return False
        self.left -= 1
        return True


async def _client(
    http: httpx.AsyncClient,
    rng: random.Random,
    ids: list[str],
    budget: _Budget,
    results: list[ClientResult],
) -> None:
    ops = [op for op, _ in MIX]
    weights = [weight for _, weight in MIX]
    while budget.take():
        op = rng.choices(ops, weights)[0]
        model_id = rng.choice(ids)
        method, path, body = _request(op, model_id)
        headers = {"x-bench-op": op, "x-bench-model": model_id if op != "clear" else "*"}
        started = time.perf_counter()
        try:
            response = await http.request(method, path, json=body, headers=headers)
            await response.aread()
            status, error = response.status_code, ""
        except httpx.HTTPError as exception:
            status, error = 0, type(exception).__name__
        results.append(ClientResult(op, status, error, time.perf_counter() - started))


def run_load(
    base_url: str,
    *,
    clients: int,
    ids: list[str],
    seconds: float,
    requests: int,
    seed: int,
    timeout: float = 30.0,
) -> tuple[list[ClientResult], float]:
    """Run the churn against ``base_url`` (loopback); the results and the elapsed seconds.

    Stops drawing new requests at ``seconds`` or after ``requests`` requests in all,
    whichever comes first; a request in flight then still runs to its answer or
    ``timeout``.
    """
    if clients < 1:
        raise ValueError(f"clients must be >= 1, got {clients!r}")
    if seconds <= 0 or requests < 1:
        raise ValueError(f"seconds must be > 0 and requests >= 1, got {seconds!r}, {requests!r}")

    async def load() -> tuple[list[ClientResult], float]:
        limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
        results: list[ClientResult] = []
        async with httpx.AsyncClient(
            base_url=base_url, limits=limits, timeout=timeout, trust_env=False
        ) as http:
            started = time.perf_counter()
            budget = _Budget(time.monotonic() + seconds, requests)
            await asyncio.gather(
                *(
                    _client(http, random.Random(seed * 1_000 + index), ids, budget, results)
                    for index in range(clients)
                )
            )
            elapsed = time.perf_counter() - started
        return results, elapsed

    return asyncio.run(load())

"""``python3 -m benchmarks.inference_server``: the command (see the package doc).

One server process (``_server``) serves every run: importing inference's
HTTP app takes seconds, so each run instead builds a fresh stack in it
(``POST /__bench__/start``). Runs alternate stock and drop-in (stock first in
even runs, drop-in first in odd ones), both configurations in turn, and a run
of each implementation uses the same seed, so both see the same operations.

Exit status: 0 when the drop-in kept its guarantees in every run (no HTTP 500,
no client error, no concurrent double construction, no leak, no inference on
a model being unloaded, no double unload, no "not found" with neither a
concurrent remove nor an eviction as cause, the bound held and the LRU equal
to the loaded models at the end); 1 otherwise; 2 when the server could not
start (the install it needs is in benchmarks/inference_server_requirements.txt).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.inference_server._client import model_ids, run_load
from benchmarks.inference_server._report import (
    guarantee_failures,
    median_summary,
    render,
    summarize,
)

_ROOT = Path(__file__).resolve().parents[2]
_CONFIGS = {"evictions": 3, "no-evictions": 8}
_TITLES = {
    "evictions": "with evictions (max_size 3)",
    "no-evictions": "without evictions (max_size 8)",
}
_IMPLEMENTATIONS = ("stock", "drop-in")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python3 -m benchmarks.inference_server",
        description="inference 1.8.3's HTTP server under churn: stock manager vs the drop-in",
    )
    parser.add_argument("--seconds", type=float, default=40.0, help="length of one run (40)")
    parser.add_argument(
        "--runs", type=int, default=3, help="runs per implementation and config (3)"
    )
    parser.add_argument("--clients", type=int, default=16, help="concurrent clients (16)")
    parser.add_argument("--ids", type=int, default=4, help="model ids churned (4)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the clients' draws (0)")
    parser.add_argument(
        "--max-requests", type=int, default=200_000, help="request budget of one run (200,000)"
    )
    parser.add_argument(
        "--config",
        choices=[*_CONFIGS, "both"],
        default="both",
        help="evictions (max_size 3), no-evictions (max_size 8) or both (default)",
    )
    parser.add_argument("--construct-ms", type=float, default=20.0, help="constructor, up to (20)")
    parser.add_argument("--unload-ms", type=float, default=10.0, help="unload, up to (10)")
    parser.add_argument("--infer-ms", type=float, default=2.0, help="inference, up to (2)")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="a bounded check that it runs: 1 run of 3 s, at most 400 requests per run",
    )
    parser.add_argument("--json", type=Path, help="also write every run's summary here")
    return parser


def _check(args: argparse.Namespace) -> None:
    for name in ("seconds", "runs", "clients", "ids", "max_requests"):
        if getattr(args, name) <= 0:
            raise SystemExit(f"--{name.replace('_', '-')} must be > 0, got {getattr(args, name)}")


class _Server:
    """The server subprocess: started, its port read, stopped by closing its stdin."""

    def __init__(self) -> None:
        self._stderr = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 - closed by stop()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [str(_ROOT), str(_ROOT / "src"), env.get("PYTHONPATH", "")]
        ).rstrip(os.pathsep)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.inference_server._server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            env=env,
            cwd=_ROOT,
        )
        self.port = self._read_port(timeout=180.0)

    def _read_port(self, timeout: float) -> int:
        box: list[str] = []
        reader = threading.Thread(
            target=lambda: box.append(self.process.stdout.readline()),  # type: ignore[union-attr]
            daemon=True,
        )
        reader.start()
        reader.join(timeout)
        line = box[0] if box else ""
        if not line.startswith("PORT "):
            self.stop()
            self._stderr.seek(0)
            tail = self._stderr.read()[-3000:]
            raise RuntimeError(f"the server did not start:\n{tail}")
        return int(line.split()[1])

    def stop(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._stderr.close()


def _one_run(
    base_url: str, implementation: str, max_size: int, seed: int, args: argparse.Namespace
) -> dict[str, Any]:
    with httpx.Client(base_url=base_url, timeout=120.0, trust_env=False) as control:
        started = control.post(
            "/__bench__/start",
            json={
                "implementation": implementation,
                "max_size": max_size,
                "seed": seed,
                "construct_ms": args.construct_ms,
                "unload_ms": args.unload_ms,
                "infer_ms": args.infer_ms,
            },
        )
        if started.status_code != 200:
            raise RuntimeError(f"the server could not build the stack: {started.text}")
        results, elapsed = run_load(
            base_url,
            clients=args.clients,
            ids=model_ids(args.ids),
            seconds=args.seconds,
            requests=args.max_requests,
            seed=seed,
        )
        report = control.get("/__bench__/report")
        if report.status_code != 200:
            raise RuntimeError(f"the server could not report: {report.text}")
    return summarize(results, elapsed, report.json())


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every run of every configuration; returns {config: {implementation: [summaries]}}."""
    configs = list(_CONFIGS) if args.config == "both" else [args.config]
    out: dict[str, Any] = {config: {impl: [] for impl in _IMPLEMENTATIONS} for config in configs}
    server = _Server()
    try:
        base_url = f"http://127.0.0.1:{server.port}"
        for index in range(args.runs):
            order = _IMPLEMENTATIONS if index % 2 == 0 else _IMPLEMENTATIONS[::-1]
            for config in configs:
                for implementation in order:
                    summary = _one_run(
                        base_url, implementation, _CONFIGS[config], args.seed + index, args
                    )
                    out[config][implementation].append(summary)
                    print(
                        f"  run {index + 1}/{args.runs} {config:>12} {implementation:>7}: "
                        f"{summary['requests']:,} requests, {summary['req_s']:,.1f} req/s, "
                        f"p99 {summary['p99_ms']:,.1f} ms",
                        flush=True,
                    )
    finally:
        server.stop()
    return out


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.smoke:
        args.seconds, args.runs, args.max_requests = min(args.seconds, 3.0), 1, 400
    _check(args)
    load_before = os.getloadavg()
    print(
        f"inference server churn: {args.clients} clients, {args.ids} ids, {args.runs} run(s) of "
        f"{args.seconds:g} s (at most {args.max_requests:,} requests) per implementation and "
        f"config; constructor <= {args.construct_ms:g} ms, unload <= {args.unload_ms:g} ms, "
        f"inference <= {args.infer_ms:g} ms; seed {args.seed}",
        flush=True,
    )
    started = time.monotonic()
    try:
        results = run(args)
    except RuntimeError as error:
        print(error, file=sys.stderr)
        return 2
    load_after = os.getloadavg()
    print(
        f"\nload average before {load_before[0]:.2f}, after {load_after[0]:.2f} "
        f"(1 min); {os.cpu_count()} CPUs; {time.monotonic() - started:.0f} s in all. "
        "Medians of the runs; ratios are within this run set.\n"
    )
    failures = []
    for config, by_impl in results.items():
        stock, dropin = (median_summary(by_impl[impl]) for impl in _IMPLEMENTATIONS)
        print(render(_TITLES[config], stock, dropin))
        print()
        for index, run_summary in enumerate(by_impl["drop-in"]):
            failures += [f"{config} run {index + 1}: {f}" for f in guarantee_failures(run_summary)]
    if args.json is not None:
        args.json.write_text(
            json.dumps(
                {
                    "load": [load_before, load_after],
                    "args": vars(args) | {"json": str(args.json)},
                    "results": results,
                },
                indent=1,
            )
        )
    if failures:
        print("drop-in guarantees broken:\n  " + "\n  ".join(failures))
        return 1
    print("drop-in guarantees: all held in every run")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""``python3 -m benchmarks.inference_server --smoke``: inference's real HTTP server, both stacks.

One bounded run (a few seconds per implementation and configuration, at most
400 requests each) of the benchmark as documented (docs/roboflow-dropin.md,
"The real server under load"), in a fresh interpreter. Asserted: the drop-in's
hard guarantees, which hold in every interleaving (no HTTP 500, no client-side
error, no concurrent double construction, no leak, no inference on a model
being unloaded, no double unload, no "not found" with neither a concurrent
remove nor an eviction as cause, the bound held and the LRU equal to the
loaded models at the end), and that the measurement itself works (every
implementation served requests, constructed and inferred; the report carries
every column). Stock's failures depend on timing: they are printed, never
asserted. Skips, saying why, where the server's install is missing
(benchmarks/inference_server_requirements.txt).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.inference_server._report import guarantee_failures

_ROOT = Path(__file__).resolve().parents[2]
_NEEDED = ("inference", "uvicorn", "httpx", "asgi_correlation_id", "skimage", "aiortc")


def _missing() -> list[str]:
    return [name for name in _NEEDED if importlib.util.find_spec(name) is None]


pytestmark = pytest.mark.skipif(
    bool(_missing()),
    reason=(
        f"the inference server's install is missing ({', '.join(_missing())}): "
        "python3 -m pip install --no-deps -r models_spec/targets/roboflow_inference/"
        "requirements.txt -r benchmarks/inference_server_requirements.txt"
    ),
)


@pytest.mark.timeout(240)
def test_smoke_run_keeps_the_drop_ins_guarantees(tmp_path: Path) -> None:
    out = tmp_path / "smoke.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.inference_server", "--smoke", "--json", str(out)],
        cwd=_ROOT,
        capture_output=True,
        text=True,
        timeout=220,
        check=False,
    )
    print(done.stdout)  # the table, stock's failures included (shown with -s or on failure)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    results = json.loads(out.read_text())["results"]
    assert set(results) == {"evictions", "no-evictions"}
    for config, by_implementation in results.items():
        assert set(by_implementation) == {"stock", "drop-in"}
        for implementation, runs in by_implementation.items():
            [run] = runs
            # the measurement works: requests went through the real app to the fakes
            assert run["requests"] > 0, (config, implementation)
            assert run["constructions"] > 0, (config, implementation)
            assert run["inferences"] > 0, (config, implementation)
            assert set(run["not_found"]) == {"remove", "eviction", "neither"}
        [dropin] = by_implementation["drop-in"]
        assert guarantee_failures(dropin) == [], config
    assert done.returncode == 0, done.stdout[-3000:]

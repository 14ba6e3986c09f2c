"""A model type backed by torch, served through ``modelmanager``.

What it shows: a real ``nn.Module`` whose weights live in a checkpoint file,
a model class whose constructor loads that file (the signature the registry
protocol asks for: ``model_id=``, ``api_key=`` plus load keyword arguments),
a ``clear_cache(delete_from_disk)`` that drops the module so its tensors can
be freed (and optionally deletes the file), and a registry that hands the
manager a factory per id.

Run the demo with ``python3 -m examples.torch_model``: it writes three
checkpoints to a temporary directory, loads them through
``WithFixedSizeCache(ModelManager(registry), max_size=2)``, leases one for
inference, triggers an eviction and prints what happened. Then
:func:`weighted_demo` serves modules of very different sizes (about 1 KB to
500 KB of parameters) through a cache bounded by bytes instead of a count
(``max_weight=`` with ``weigher=torch_parameter_bytes``) and shows the
budget holding while leases come and go.

torch is imported here on purpose: examples may depend on optional
packages, the core (``modelmanager``) keeps torch in one lazily imported
module of its own.
"""

from __future__ import annotations

import functools
import os
import pathlib
import re
import shutil
import tempfile
import threading
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from modelmanager import ModelManager, WithFixedSizeCache, torch_parameter_bytes

__all__ = [
    "CHECKPOINT_SUFFIX",
    "TinyMLP",
    "TorchModel",
    "TorchModelRegistry",
    "checkpoint_path",
    "main",
    "save_checkpoint",
    "weighted_demo",
]

SIZED_MODELS = {"mlp/tiny": 32, "mlp/mid": 4096, "mlp/big": 16384}
"""Ids of the weighted demo and their hidden width: ~1 KB, ~131 KB, ~524 KB of float32."""

CHECKPOINT_SUFFIX = ".pt"

# Ids look like upstream's "project/version"; the slash becomes a separator
# in the file name so every id maps to exactly one file inside the directory.
_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)*")


class TinyMLP(nn.Module):
    """A two-layer perceptron: ``Linear -> ReLU -> Linear``."""

    def __init__(self, in_features: int, hidden: int, out_features: int) -> None:
        super().__init__()
        self.in_features = in_features
        self.hidden = hidden
        self.out_features = out_features
        self.layers = nn.Sequential(
            nn.Linear(in_features, hidden),
            nn.ReLU(),
            nn.Linear(hidden, out_features),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)  # type: ignore[no-any-return]

    def config(self) -> dict[str, int]:
        """The constructor arguments, as stored next to the weights."""
        return {
            "in_features": self.in_features,
            "hidden": self.hidden,
            "out_features": self.out_features,
        }


def checkpoint_path(checkpoint_dir: str | pathlib.Path, model_id: str) -> pathlib.Path:
    """The checkpoint file of ``model_id`` inside ``checkpoint_dir``.

    Raises ``ValueError`` naming the id when it is not of the form
    ``name`` or ``name/version`` (letters, digits, ``.``, ``_``, ``-``),
    and ``TypeError`` when it is not a string.
    """
    if not isinstance(model_id, str):
        raise TypeError(f"model_id must be a str (got {model_id!r} of type {type(model_id)})")
    if _ID_PATTERN.fullmatch(model_id) is None or ".." in model_id:
        raise ValueError(
            f"model_id {model_id!r} is not a valid checkpoint id: expected segments of "
            "letters, digits, '.', '_' or '-' separated by '/', e.g. 'mlp/1'"
        )
    return pathlib.Path(checkpoint_dir) / (model_id.replace("/", "__") + CHECKPOINT_SUFFIX)


def save_checkpoint(
    checkpoint_dir: str | pathlib.Path,
    model_id: str,
    *,
    in_features: int = 4,
    hidden: int = 16,
    out_features: int = 3,
    seed: int = 0,
) -> pathlib.Path:
    """Create a freshly initialised ``TinyMLP`` and save it for ``model_id``.

    The file holds only tensors and ints (``{"config": ..., "state_dict":
    ...}``), so it loads with ``torch.load(..., weights_only=True)``.
    Returns the path written (an existing file is replaced).
    """
    path = checkpoint_path(checkpoint_dir, model_id)
    generator_state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        module = TinyMLP(in_features, hidden, out_features)
    finally:
        # Keep the caller's global RNG stream untouched.
        torch.random.set_rng_state(generator_state)
    torch.save({"config": module.config(), "state_dict": module.state_dict()}, path)
    return path


def _fetch(source: pathlib.Path, target: pathlib.Path) -> None:
    """Copy a checkpoint into the local directory; readers never see half a file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{threading.get_ident()}.partial")
    try:
        shutil.copyfile(source, partial)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


class TorchModel:
    """One loaded ``TinyMLP``, the model type a registry hands out.

    Constructed by the manager as ``TorchModel(model_id=..., api_key=...,
    checkpoint_dir=...)``; loading reads the checkpoint with
    ``weights_only=True`` (no pickled code runs). With ``source_dir`` (a
    stand-in for a remote model store) a checkpoint missing from
    ``checkpoint_dir`` is first copied from there, so a model whose local
    file was deleted by ``clear_cache(delete_from_disk=True)`` loads again.
    Raises ``FileNotFoundError`` when the checkpoint exists nowhere.

    ``infer`` is thread-safe (inference holds no mutable state). After
    ``clear_cache`` the module is released and ``infer`` raises
    ``RuntimeError``; ``clear_cache`` is idempotent.
    """

    def __init__(
        self,
        model_id: str,
        api_key: str | None = None,
        *,
        checkpoint_dir: str | pathlib.Path,
        source_dir: str | pathlib.Path | None = None,
    ) -> None:
        self.model_id = model_id
        self.api_key = api_key
        self.path = checkpoint_path(checkpoint_dir, model_id)
        if source_dir is not None and not self.path.exists():
            _fetch(checkpoint_path(source_dir, model_id), self.path)
        payload = torch.load(self.path, map_location="cpu", weights_only=True)
        module = TinyMLP(**payload["config"])
        module.load_state_dict(payload["state_dict"])
        module.eval()
        self._module: TinyMLP | None = module
        self._lock = threading.Lock()
        self.cleared = False
        self.deleted_from_disk = False

    @property
    def module(self) -> TinyMLP:
        """The loaded module; ``RuntimeError`` once the cache was cleared."""
        module = self._module
        if module is None:
            raise RuntimeError(f"model {self.model_id!r} was unloaded (clear_cache ran)")
        return module

    def infer(self, x: torch.Tensor) -> torch.Tensor:
        """Run the MLP on a ``(batch, in_features)`` tensor without autograd."""
        module = self.module
        with torch.no_grad():
            return module(x)  # type: ignore[no-any-return]

    def clear_cache(self, delete_from_disk: bool = True) -> None:
        """Drop the module (its tensors become collectable) and, if asked, the file."""
        with self._lock:
            self._module = None
            self.cleared = True
            if delete_from_disk:
                self.path.unlink(missing_ok=True)
                self.deleted_from_disk = True

    def __repr__(self) -> str:
        state = "unloaded" if self._module is None else "loaded"
        return f"TorchModel({self.model_id!r}, {state})"


class TorchModelRegistry:
    """Registry of ``TorchModel`` checkpoints kept in a local directory.

    ``get_model(resolved_id)`` returns a factory (``TorchModel`` with the
    directories bound) for any id; a missing checkpoint surfaces as the
    constructor's ``FileNotFoundError``, so a failed load registers nothing.
    With ``source_dir``, missing local checkpoints are fetched from there.
    """

    def __init__(
        self,
        checkpoint_dir: str | pathlib.Path,
        *,
        source_dir: str | pathlib.Path | None = None,
    ) -> None:
        self.checkpoint_dir = pathlib.Path(checkpoint_dir)
        self.source_dir = None if source_dir is None else pathlib.Path(source_dir)

    def get_model(self, resolved_id: str) -> Callable[..., TorchModel]:
        return functools.partial(
            TorchModel, checkpoint_dir=self.checkpoint_dir, source_dir=self.source_dir
        )

    def local_ids(self) -> list[str]:
        """Ids whose checkpoint file is in the local directory (sorted)."""
        return _ids_in(self.checkpoint_dir)


def _ids_in(directory: pathlib.Path) -> list[str]:
    return sorted(
        path.name.removesuffix(CHECKPOINT_SUFFIX).replace("__", "/")
        for path in directory.glob("*" + CHECKPOINT_SUFFIX)
    )


def _describe(cache: Any) -> str:
    return f"loaded={sorted(cache.keys())} lru(least recent first)={cache.lru_order()}"


def weighted_demo(byte_budget: int = 600_000) -> list[str]:
    """Serve modules of different sizes through a cache bounded by parameter bytes.

    Returns the lines it prints: after each step, the models loaded, their
    bytes and the total, which never stays above ``byte_budget`` once no
    lease holds a model over it.
    """
    lines: list[str] = []

    def report(step: str, cache: WithFixedSizeCache) -> None:
        weights = cache.weights()
        lines.append(
            f"{step}: loaded={sorted(weights)} bytes={sum(weights.values())} "
            f"(budget {byte_budget}) {weights}"
        )
        print(lines[-1])

    with tempfile.TemporaryDirectory(prefix="torch-weighted-") as tmp:
        for seed, (model_id, hidden) in enumerate(SIZED_MODELS.items()):
            save_checkpoint(tmp, model_id, hidden=hidden, seed=seed)
        cache = WithFixedSizeCache(
            ModelManager(TorchModelRegistry(tmp)),
            max_size=None,  # bounded by bytes only
            max_weight=byte_budget,
            weigher=torch_parameter_bytes,
        )
        cache.add_model("mlp/tiny")
        cache.add_model("mlp/mid")
        report("tiny and mid", cache)
        with cache.acquire("mlp/mid") as mid:
            mid.infer(torch.ones(1, 4))
            # big does not fit next to mid: tiny (least recent) goes, then
            # mid cannot (leased): big is kept over the budget until the
            # lease ends, and then the cache evicts back within it.
            cache.add_model("mlp/big")
            report("big while mid is leased", cache)
        report("after the lease on mid", cache)
        cache.add_model("mlp/tiny")
        report("tiny again", cache)
        stats = cache.statistics()
        lines.append(
            f"evictions: capacity={stats.evictions_capacity} restore={stats.evictions_restore}"
        )
        print(lines[-1])
        cache.clear()
    return lines


def main() -> int:
    """The demo: three checkpoints, a cache of two, one lease, one eviction; then by bytes."""
    with tempfile.TemporaryDirectory(prefix="torch-models-") as tmp:
        store = pathlib.Path(tmp, "store")  # stands in for a remote model store
        store.mkdir()
        for seed, model_id in enumerate(("mlp/1", "mlp/2", "mlp/3")):
            save_checkpoint(store, model_id, seed=seed)
        registry = TorchModelRegistry(pathlib.Path(tmp, "local"), source_dir=store)
        print(f"checkpoints in the store: {_ids_in(store)}")

        cache = WithFixedSizeCache(ModelManager(registry), max_size=2)
        cache.add_model("mlp/1")
        cache.add_model("mlp/2")
        print(f"after loading mlp/1 and mlp/2: {_describe(cache)}")

        batch = torch.ones(2, 4)
        with cache.lease("mlp/1") as model:
            cache.refresh("mlp/1")  # what an inference call does to the LRU
            output = model.infer(batch)
            print(f"inference on leased mlp/1 -> shape {tuple(output.shape)}")
            print(f"leases held: {cache.lease_counts()}")
            # The cache is full: loading mlp/3 evicts the least recent
            # model that is not leased (mlp/2), never the leased mlp/1.
            cache.add_model("mlp/3")
            print(f"after loading mlp/3 while mlp/1 is leased: {_describe(cache)}")
            print(f"checkpoints cached locally: {registry.local_ids()}")

        with cache.acquire("mlp/2") as model:
            # acquire() loads and leases in one step, so no other thread's
            # eviction can come between the load and this inference.
            print(f"acquire(mlp/2) reloaded it -> {model!r}")
        print(f"after acquire(mlp/2): {_describe(cache)}")
        print(f"checkpoints cached locally: {registry.local_ids()}")
        print(f"statistics: {cache.statistics()}")
        cache.clear()  # removes with delete_from_disk=True; evictions keep the files
        print(f"after clear(): loaded={sorted(cache.keys())}, local={registry.local_ids()}")
    print("a cache bounded by parameter bytes:")
    weighted_demo()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Scripted fake models, a scripted registry and the ghost state they record.

The fakes are what an implementation under test loads: a `ScriptedRegistry`
hands out factories whose constructor and `clear_cache` consult a shared
`Script` ("does attempt n of constructing X fail?") and report everything they
observe to a `Ghost`, a thread-safe record of what really happened (live
constructors, teardowns, models in use, a timeline).  The invariants read the
ghost; the sequential spec reads the same `Script`, so the spec and the
implementation see identical outcomes.

Attempt numbers count per *resolved* id (the key the implementation uses),
starting at 1, separately for constructions and for `clear_cache` calls.

Both the constructor and `clear_cache` call `lockstep.checkpoint(label,
resource=<resolved id>)` at entry and before exit, so a controlled run can
switch threads inside them.  Outside a lockstep run (or before lockstep is
installed) the checkpoint is a no-op.

Thread-safety: `Ghost` guards its records with a raw `_thread` lock that is
never held across a checkpoint, so it is safe under real threads and never
becomes a scheduling point under lockstep (which patches `threading`, not
`_thread`).
"""

from __future__ import annotations

import _thread
import contextlib
import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import attrs

# Test harness: the fakes use real locks on purpose (never switch points), so a race
# report near them must not take them for the code's own synchronisation
# (lockstep._memory._uncontrolled).
__lockstep_harness__ = True
# Its frames are left out of the tracebacks lockstep and pytest show (a failure is
# explained in the code under test's terms, lockstep._failure.format_exception).
__tracebackhide__ = True

__all__ = [
    "LOAD",
    "UNLOAD",
    "FakeModel",
    "Ghost",
    "GhostEvent",
    "Script",
    "ScriptedLoadError",
    "ScriptedProbe",
    "ScriptedRegistry",
    "ScriptedUnloadError",
    "TornDownModelError",
    "UnknownModelId",
    "checkpoint",
    "thread_ident",
]

LOAD = "load"
UNLOAD = "unload"


def checkpoint(label: str, *, resource: object = None) -> None:
    """Call `lockstep.checkpoint(label, resource=...)` if lockstep provides it.

    Looked up at call time so the fakes work before (and without) lockstep.
    """
    try:
        import lockstep  # noqa: PLC0415 - optional, looked up lazily on purpose
    except ImportError:  # pragma: no cover - lockstep ships with this distribution
        return
    fn = getattr(lockstep, "checkpoint", None)
    if fn is not None:
        fn(label, resource=resource)


def thread_ident() -> int:
    """The calling thread's identity: lockstep's logical thread inside a run.

    `lockstep.threading.get_ident()` (a virtual id per logical thread inside a
    run, the real `_thread.get_ident()` outside one). The real id alone is not
    enough: on lockstep's greenlet backend every logical thread of an
    execution shares one OS thread.
    """
    try:
        from lockstep import threading as ls_threading  # noqa: PLC0415 - optional, lazily
    except ImportError:  # pragma: no cover - lockstep ships with this distribution
        return _thread.get_ident()
    return ls_threading.get_ident()


class ScriptedLoadError(RuntimeError):
    """A constructor failure the `Script` asked for (names id and attempt)."""

    def __init__(self, resolved_id: str, attempt: int) -> None:
        super().__init__(f"scripted load failure of {resolved_id!r} (attempt {attempt})")
        self.resolved_id = resolved_id
        self.attempt = attempt


class ScriptedUnloadError(RuntimeError):
    """A `clear_cache` failure the `Script` asked for (names id and attempt)."""

    def __init__(self, resolved_id: str, attempt: int) -> None:
        super().__init__(f"scripted clear_cache failure of {resolved_id!r} (attempt {attempt})")
        self.resolved_id = resolved_id
        self.attempt = attempt


class UnknownModelId(LookupError):
    """`ScriptedRegistry.get_model` was asked for an id outside its universe."""


class TornDownModelError(RuntimeError):
    """`FakeModel.infer` was called on a model whose cache was cleared."""


def _seeded_bool(seed: int, kind: str, resolved_id: str, attempt: int, p: float) -> bool:
    digest = hashlib.sha256(f"{seed}|{kind}|{resolved_id}|{attempt}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64 < p


class Script:
    """Scripted outcomes shared by the fakes and the sequential spec.

    * `fails(kind, resolved_id, attempt)`: does attempt `attempt` (1-based,
      per resolved id) of `kind` (`LOAD` = constructor, `UNLOAD` =
      `clear_cache`) fail?  Explicit entries win; otherwise, if built with a
      seed, a pure hash of (seed, kind, id, attempt) decides with the given
      probability; otherwise it succeeds.
    * `memory_fraction(n)`: what the n-th (0-based) call of a probe's
      `free_fraction()` returns: a scripted value, else `default_memory`.

    Mutable on purpose (a state machine scripts the next failure as a rule);
    the answers for a given key never change once asked in a run unless the
    caller changes the script.  Not thread-safe for mutation; reads are.
    """

    def __init__(
        self,
        *,
        load_failures: Mapping[str, Iterable[int]] | None = None,
        unload_failures: Mapping[str, Iterable[int]] | None = None,
        memory: Iterable[float | None] = (),
        default_memory: float | None = None,
        seed: int | None = None,
        p_load: float = 0.0,
        p_unload: float = 0.0,
    ) -> None:
        for name, p in (("p_load", p_load), ("p_unload", p_unload)):
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"{name} must be a probability in [0, 1] (got {p!r})")
        self._explicit: dict[tuple[str, str, int], bool] = {}
        for kind, table in ((LOAD, load_failures), (UNLOAD, unload_failures)):
            for rid, attempts in (table or {}).items():
                for attempt in attempts:
                    self.set_outcome(kind, rid, attempt, fail=True)
        self._memory: dict[int, float | None] = dict(enumerate(memory))
        self.default_memory = default_memory
        self.seed = seed
        self.p_load = p_load
        self.p_unload = p_unload

    @classmethod
    def from_seed(cls, seed: int, *, p_load: float = 0.2, p_unload: float = 0.2) -> Script:
        """A script whose failures are a pure function of `seed` (unbounded attempts)."""
        return cls(seed=seed, p_load=p_load, p_unload=p_unload)

    def set_outcome(self, kind: str, resolved_id: str, attempt: int, *, fail: bool) -> None:
        """Fix the outcome of one attempt (overrides the seed)."""
        if kind not in (LOAD, UNLOAD):
            raise ValueError(f"kind must be {LOAD!r} or {UNLOAD!r} (got {kind!r})")
        if not isinstance(attempt, int) or attempt < 1:
            raise ValueError(f"attempt must be an int >= 1 (got {attempt!r})")
        self._explicit[(kind, resolved_id, attempt)] = fail

    def fails(self, kind: str, resolved_id: str, attempt: int) -> bool:
        """Whether attempt `attempt` of `kind` on `resolved_id` fails."""
        key = (kind, resolved_id, attempt)
        if key in self._explicit:
            return self._explicit[key]
        if self.seed is None:
            return False
        p = self.p_load if kind == LOAD else self.p_unload
        return _seeded_bool(self.seed, kind, resolved_id, attempt, p)

    def load_fails(self, resolved_id: str, attempt: int) -> bool:
        """Whether constructor attempt `attempt` of `resolved_id` fails."""
        return self.fails(LOAD, resolved_id, attempt)

    def unload_fails(self, resolved_id: str, attempt: int) -> bool:
        """Whether `clear_cache` attempt `attempt` on `resolved_id` fails."""
        return self.fails(UNLOAD, resolved_id, attempt)

    def set_memory(self, start: int, fractions: Iterable[float | None]) -> None:
        """Script probe calls `start`, `start + 1`, ... (0-based call numbers)."""
        for offset, value in enumerate(fractions):
            self._memory[start + offset] = value

    def memory_fraction(self, call: int) -> float | None:
        """The free fraction the `call`-th (0-based) probe call reports."""
        return self._memory.get(call, self.default_memory)

    def fingerprint(self) -> tuple[object, ...]:
        """A hashable value equal for two scripts exactly when they give the same
        answers (for memoizing what is computed from them)."""
        return (
            frozenset(self._explicit.items()),
            frozenset(self._memory.items()),
            self.default_memory,
            self.seed,
            self.p_load,
            self.p_unload,
        )

    def __repr__(self) -> str:
        return (
            f"Script(explicit={len(self._explicit)}, memory={len(self._memory)}, "
            f"seed={self.seed!r}, p_load={self.p_load}, p_unload={self.p_unload})"
        )


@attrs.frozen
class GhostEvent:
    """One entry of the ghost timeline.

    `kind` is one of: construct_start, construct_end, construct_fail,
    clear_start, clear_end, clear_fail, use_start, use_end.
    `token` names the model (`"<resolved id>#<attempt>"`) where one exists.
    """

    seq: int
    kind: str
    resolved_id: str
    attempt: int
    token: str | None
    thread: int
    error: BaseException | None = attrs.field(default=None, eq=False, repr=False)


class FakeModel:
    """A model object with ghost state.

    Attributes: `resolved_id` (the key it was loaded under), `model_id` (the
    canonical id the constructor received), `attempt`, `token`
    (`"<resolved id>#<attempt>"`, what the spec predicts), `api_key`,
    `load_kwargs`, `torn_down`, `clear_calls` (all calls),
    `teardowns` (successful calls), `delete_from_disk` (values seen).
    """

    def __init__(
        self,
        ghost: Ghost,
        *,
        resolved_id: str,
        model_id: str,
        attempt: int,
        api_key: object = None,
        load_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        self._ghost = ghost
        self.resolved_id = resolved_id
        self.model_id = model_id
        self.attempt = attempt
        self.token = f"{resolved_id}#{attempt}"
        self.api_key = api_key
        self.load_kwargs = dict(load_kwargs or {})
        self.torn_down = False
        self.clear_calls = 0
        self.teardowns = 0
        self.delete_from_disk: list[bool] = []

    def clear_cache(self, delete_from_disk: bool = True) -> None:
        """Tear down (or fail as scripted); checkpoints at entry and before exit."""
        ghost = self._ghost
        checkpoint(f"clear_cache:enter:{self.resolved_id}", resource=self.resolved_id)
        attempt = ghost._clear_begin(self, delete_from_disk)
        checkpoint(f"clear_cache:exit:{self.resolved_id}", resource=self.resolved_id)
        if ghost.script.unload_fails(self.resolved_id, attempt):
            error = ScriptedUnloadError(self.resolved_id, attempt)
            ghost._clear_end(self, attempt, error)
            raise error
        ghost._clear_end(self, attempt, None)

    def infer(self, value: object = None) -> tuple[str, object]:
        """Pretend inference; raises `TornDownModelError` after a teardown."""
        if self.torn_down:
            raise TornDownModelError(f"model {self.token} was used after clear_cache")
        return (self.token, value)

    def __repr__(self) -> str:
        state = "torn down" if self.torn_down else "live"
        return f"FakeModel({self.token}, model_id={self.model_id!r}, {state})"


class Ghost:
    """What really happened, recorded by the fakes (thread-safe).

    Public records (read them; only the fakes write them):

    * `script`: the shared `Script`.
    * `constructing[id]` / `max_constructing[id]`: live constructors now / at most.
    * `construct_attempts[id]`, `clear_attempts[id]`: attempts so far (per resolved id).
    * `models`: every constructed `FakeModel`, in construction order.
    * `live`: models alive now: constructors running plus models constructed and
      not torn down (what they hold in memory; I11 at every step).
    * `clearing[id]`: models of `id` currently inside `clear_cache`.
    * `in_use[token]`: holders inside `use(model)`.
    * `overlaps`: (event, reason) pairs where a constructor of X started while
      another constructor or a `clear_cache` of X ran, or the reverse (I2).
    * `cleared_in_use`: `clear_start` events on a model that was in use (I13).
    * `lock_held_in_callback`: events where `lock_probe()` said the LRU lock
      was held while a constructor or `clear_cache` started (I14).
    * `failures`: every scripted exception raised, in order (I16).
    * `events`: the timeline (`GhostEvent`).
    * `lock_probe`: optional zero-argument callable set by a harness that can
      tell whether the implementation's LRU lock is held; None = unknown.
    """

    def __init__(self, script: Script | None = None) -> None:
        self.script = script if script is not None else Script()
        self._lock = _thread.allocate_lock()
        self.constructing: dict[str, int] = {}
        self.max_constructing: dict[str, int] = {}
        self.construct_attempts: dict[str, int] = {}
        self.clear_attempts: dict[str, int] = {}
        self.models: list[FakeModel] = []
        self.live = 0
        self.clearing: dict[str, int] = {}
        self.in_use: dict[str, int] = {}
        self.overlaps: list[tuple[GhostEvent, str]] = []
        self.cleared_in_use: list[GhostEvent] = []
        self.lock_held_in_callback: list[GhostEvent] = []
        self.failures: list[tuple[int, BaseException]] = []
        self.events: list[GhostEvent] = []
        self.lock_probe: Callable[[], bool | None] | None = None

    # -- recording (called by the fakes) ------------------------------------
    def _event(
        self,
        kind: str,
        resolved_id: str,
        attempt: int,
        token: str | None,
        error: BaseException | None = None,
    ) -> GhostEvent:
        event = GhostEvent(
            seq=len(self.events),
            kind=kind,
            resolved_id=resolved_id,
            attempt=attempt,
            token=token,
            thread=thread_ident(),
            error=error,
        )
        self.events.append(event)
        return event

    def _probe_lock(self, event: GhostEvent) -> None:
        probe = self.lock_probe
        if probe is not None and probe():
            self.lock_held_in_callback.append(event)

    def _construct_begin(self, resolved_id: str) -> int:
        with self._lock:
            attempt = self.construct_attempts.get(resolved_id, 0) + 1
            self.construct_attempts[resolved_id] = attempt
            live = self.constructing.get(resolved_id, 0) + 1
            self.constructing[resolved_id] = live
            self.live += 1
            self.max_constructing[resolved_id] = max(
                live, self.max_constructing.get(resolved_id, 0)
            )
            event = self._event("construct_start", resolved_id, attempt, None)
            if live > 1:
                self.overlaps.append((event, "two constructors of one id"))
            if self.clearing.get(resolved_id, 0):
                self.overlaps.append((event, "constructor during clear_cache of the same id"))
        self._probe_lock(event)
        return attempt

    def _construct_end(
        self, resolved_id: str, attempt: int, model: FakeModel | None, error: BaseException | None
    ) -> None:
        with self._lock:
            self.constructing[resolved_id] -= 1
            if not self.constructing[resolved_id]:
                del self.constructing[resolved_id]
            if model is not None:
                self.models.append(model)
                self._event("construct_end", resolved_id, attempt, model.token)
            else:
                self.live -= 1
                event = self._event("construct_fail", resolved_id, attempt, None, error)
                assert error is not None
                self.failures.append((event.thread, error))

    def _clear_begin(self, model: FakeModel, delete_from_disk: bool) -> int:
        rid = model.resolved_id
        with self._lock:
            attempt = self.clear_attempts.get(rid, 0) + 1
            self.clear_attempts[rid] = attempt
            model.clear_calls += 1
            model.delete_from_disk.append(delete_from_disk)
            self.clearing[rid] = self.clearing.get(rid, 0) + 1
            event = self._event("clear_start", rid, attempt, model.token)
            if self.constructing.get(rid, 0):
                self.overlaps.append((event, "clear_cache during a constructor of the same id"))
            if self.clearing[rid] > 1:
                self.overlaps.append((event, "two clear_cache calls of one id at once"))
            if self.in_use.get(model.token, 0):
                self.cleared_in_use.append(event)
        self._probe_lock(event)
        return attempt

    def _clear_end(self, model: FakeModel, attempt: int, error: BaseException | None) -> None:
        rid = model.resolved_id
        with self._lock:
            self.clearing[rid] -= 1
            if not self.clearing[rid]:
                del self.clearing[rid]
            if error is None:
                if not model.torn_down:
                    self.live -= 1
                model.torn_down = True
                model.teardowns += 1
                self._event("clear_end", rid, attempt, model.token)
            else:
                event = self._event("clear_fail", rid, attempt, model.token, error)
                self.failures.append((event.thread, error))

    # -- helpers for harnesses ----------------------------------------------
    @contextlib.contextmanager
    def use(self, model: object) -> Iterator[object]:
        """Mark `model` in use (as an inference would) for the duration (I13)."""
        token = getattr(model, "token", None)
        if not isinstance(token, str):
            raise TypeError(f"use() expects a FakeModel (got {model!r})")
        rid = getattr(model, "resolved_id", "")
        with self._lock:
            self.in_use[token] = self.in_use.get(token, 0) + 1
            self._event("use_start", rid, 0, token)
        try:
            yield model
        finally:
            with self._lock:
                self.in_use[token] -= 1
                if not self.in_use[token]:
                    del self.in_use[token]
                self._event("use_end", rid, 0, token)

    def live_models(self) -> list[FakeModel]:
        """Constructed models not torn down."""
        with self._lock:
            return [m for m in self.models if not m.torn_down]

    def mark(self) -> int:
        """The current timeline length (pass as `since=` to I16)."""
        with self._lock:
            return len(self.events)

    def failures_since(
        self, since: int, thread: int | None = None, until: int | None = None
    ) -> list[BaseException]:
        """Scripted failures raised in timeline indexes [`since`, `until`) (optionally
        one thread's)."""
        with self._lock:
            return [
                e.error
                for e in self.events[since:until]
                if e.error is not None
                and e.kind in ("construct_fail", "clear_fail")
                and (thread is None or e.thread == thread)
            ]

    def __repr__(self) -> str:
        return (
            f"Ghost(models={len(self.models)}, live={len(self.live_models())}, "
            f"constructing={self.constructing}, clearing={self.clearing})"
        )


class ScriptedRegistry:
    """A registry of fake models: `get_model(resolved_id) -> factory`.

    Accepts every id when `universe` is None; otherwise ids in `universe` and
    aliases registered with `aliases` (alias -> canonical id).  An unknown id
    raises `UnknownModelId` (a `LookupError`), with nothing recorded.
    The factory is `factory(model_id=<canonical id>, api_key=None, **kw)`; it
    checkpoints at entry and before exit, then either returns a `FakeModel`
    or raises `ScriptedLoadError` as the script says.
    """

    def __init__(
        self,
        script: Script | None = None,
        *,
        ghost: Ghost | None = None,
        universe: Iterable[str] | None = None,
        aliases: Mapping[str, str] | None = None,
    ) -> None:
        if ghost is not None and script is not None and ghost.script is not script:
            raise ValueError("ghost.script must be the registry's script")
        if ghost is None:
            ghost = Ghost(script)
        self.ghost = ghost
        self.script = ghost.script
        self.universe = None if universe is None else frozenset(universe)
        self.aliases = dict(aliases or {})

    def accepts(self, resolved_id: str) -> bool:
        """Whether `get_model(resolved_id)` returns a factory."""
        return self.universe is None or resolved_id in self.universe or resolved_id in self.aliases

    def get_model(self, resolved_id: str, *args: object, **kwargs: object) -> Callable[..., Any]:
        """Return the factory for `resolved_id` (raises `UnknownModelId`)."""
        if not self.accepts(resolved_id):
            known = sorted(self.universe or ()) + sorted(self.aliases)
            raise UnknownModelId(
                f"no fake model registered for id {resolved_id!r}; known ids: {known}"
            )
        ghost = self.ghost

        def factory(
            model_id: str | None = None, api_key: object = None, **load_kwargs: Any
        ) -> FakeModel:
            canonical = model_id if model_id is not None else resolved_id
            checkpoint(f"construct:enter:{resolved_id}", resource=resolved_id)
            attempt = ghost._construct_begin(resolved_id)
            checkpoint(f"construct:exit:{resolved_id}", resource=resolved_id)
            if ghost.script.load_fails(resolved_id, attempt):
                error = ScriptedLoadError(resolved_id, attempt)
                ghost._construct_end(resolved_id, attempt, None, error)
                raise error
            model = FakeModel(
                ghost,
                resolved_id=resolved_id,
                model_id=canonical,
                attempt=attempt,
                api_key=api_key,
                load_kwargs=load_kwargs,
            )
            ghost._construct_end(resolved_id, attempt, model, None)
            return model

        return factory


class ScriptedProbe:
    """A memory probe reading `Script.memory_fraction(n)` for its n-th call.

    Implements the core's `MemoryProbe` protocol (`free_fraction()`,
    `release_cache()`); `threshold` is the free fraction under which an
    adapter should configure the cache to see pressure.  Each probe counts
    its own calls, so two stacks built on one script see the same sequence.
    """

    def __init__(self, script: Script, *, threshold: float = 0.5) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1] (got {threshold!r})")
        self.script = script
        self.threshold = threshold
        self.calls = 0
        self.releases = 0

    def free_fraction(self) -> float | None:
        """The scripted fraction for this call (None = unknown, no pressure)."""
        value = self.script.memory_fraction(self.calls)
        self.calls += 1
        return value

    def release_cache(self) -> None:
        """Count a cache release (the fake has no allocator)."""
        self.releases += 1

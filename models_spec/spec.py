"""The sequential reference model: what `WithFixedSizeCache(ModelManager(...))` does.

Deliberately boring: plain tuples and frozensets, no locks, no torch.  The
state is a frozen, hashable `SpecState`; every operation is a pure function
`apply(state, op) -> (outcome, new_state)`.  Two front ends use it:

* `Spec`, a mutable convenience wrapper whose methods mirror the real API
  (`add_model`, `remove`, ...) and return what it returns or raise the same
  exception *types* (for sequential differential tests);
* `step(state, op_input, op_output) -> (ok, new_state)`, the step function
  for `lockstep.linearizability.check_linearizability` (I15).

Scripted outcomes come from the same `fakes.Script` the fakes consult:
constructor attempt n of resolved id X fails iff `script.load_fails(X, n)`,
and likewise for `clear_cache` (`unload_fails`) and probe readings
(`memory_fraction(call)`).  The state counts attempts per resolved id exactly
as the `Ghost` does, so spec and implementation see identical outcomes.

Operation encoding (inputs; ids are strings, `alias` None or a string)::

    ("add", model_id, alias, pin[, holds_lease])   # 3-tuple form: pin=False;
                                       # holds_lease: the thread holds a lease
                                       # (SpecConfig.on_full "wait"), default False
    ("remove", model_id)               # delete_from_disk is not modelled
    ("clear",)
    ("refresh", model_id)
    ("pin", model_id)    ("unpin", model_id)
    ("lease", model_id)                # entering `with stack.lease(id)`
    ("acquire", model_id, alias[, holds_lease])  # entering `with stack.acquire(...)`
    ("release", resolved_id)           # leaving either context manager
    ("keys",)  ("contains", model_id)  ("getitem", model_id)  ("len",)
    ("lru",)   ("pinned",)             # observations of the cache
    ("admit", n, model_id, alias, pin[, holds_lease])  # three-point add number n:
    ("evict", n)                                #   see `expand_adds`
    ("complete", n, model_id, alias, pin[, lease])

A cold add takes effect at three instants (chosen semantics 3): `admit`
(a warm hit, or the victims chosen and a slot reserved, counted toward
`max_size`), `evict` (the chosen victims unloaded: until then they stay
registered and observers list them, the *eviction window*, while uses,
leases, removals and adds of them wait) and `complete` (registered, a joined
hit, or the slot released on failure; victims stay evicted).
`expand_adds(history)` rewrites a recorded history's adds and acquires into
those three; a `complete` before its `evict`, an `evict` before its `admit`,
or an admission while short of evictable models with loads in flight (the
core waits there) or while another add's victims are leaving, is illegal.

Outputs::

    ("ok", value)      value: None for mutators; the model token
                       "<resolved id>#<attempt>" for getitem/lease/acquire;
                       tuple(sorted ids) for keys and pinned; tuple for lru
                       (least recent first); bool for contains; int for len
    ("raise", name)    name: the exception class name, e.g. "ModelNotFound",
                       "LockTimeout", "InvalidArgument", "ScriptedLoadError";
                       for an ExceptionGroup "ExceptionGroup(A,B)" with the
                       member names sorted
    UNKNOWN            (lockstep.linearizability.UNKNOWN, or the string
                       "unknown") the operation never returned: any output
                       is accepted and the op's effect is applied; the
                       checker may also leave it out, so "may or may not
                       have taken effect" is covered

`encode_outcome(value=..., error=...)` builds outputs from real results.

Timeouts: `("raise", "LockTimeout")` is accepted in every state and changes
nothing (a `complete` releases its slot, or closes its add number so the
indeterminate admission cannot follow) (I14: a timeout raises with no
state change), because a concurrent history may time out for reasons a
sequential spec cannot see.  Known
approximations for concurrent checks: a `clear()` whose group holds more
`LockTimeout`s than the spec predicts is rejected (give scenarios a clear
timeout that does not fire), and probe readings that vary from call to call
make histories order-dependent (use a constant `default_memory`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

import attrs

from models_spec.fakes import LOAD, UNLOAD, Script, ScriptedLoadError, ScriptedUnloadError

__all__ = [
    "ADMISSION_ERRORS",
    "DECLARABLE_SEMANTICS",
    "LOCK_TIMEOUT",
    "Spec",
    "SpecConfig",
    "SpecState",
    "apply",
    "apply_detailed",
    "encode_outcome",
    "expand_adds",
    "explain",
    "initial_state",
    "resolve",
    "step",
]

Outcome = tuple[str, Any]
LOCK_TIMEOUT: Final = "LockTimeout"
_UNKNOWN_STRINGS: Final = ("unknown",)
_MEMORY_ROUND: Final = 3  # chosen semantics 6: memory pressure evicts up to 3 per round
_SLOT: Final = "slot"
_HIT: Final = "hit"
_FAILED: Final = "failed:"
_BLOCKED: Final = "_Blocked"  # internal: an admission cannot take effect in this state
CACHE_FULL: Final = "CacheFull"
ON_FULL_POLICIES: Final = ("proceed", "refuse", "wait")

EVICTS_IN_ROUNDS: Final = "evicts-in-rounds-of-3"
CLEAR_STOPS: Final = "clear-stops-at-first-failure"
DECLARABLE_SEMANTICS: Final = {
    EVICTS_IN_ROUNDS: (
        "a full cache evicts up to 3 least recent evictable models per round (may free "
        "more than one slot), not only as many as the add needs (chosen semantics 6)"
    ),
    CLEAR_STOPS: (
        "clear() stops at the first failing removal and raises it alone, leaving the "
        "models after it (in the spec's least-recent-first order) loaded, not remove all "
        "and raise an ExceptionGroup (chosen semantics 9)"
    ),
}
"""Deliberate, documented ways an implementation may differ from the chosen semantics:
name -> what the spec does instead when the implementation declares it (an adapter's
``semantics`` attribute; `SpecConfig.semantics`).  The spec and every invariant then
judge that implementation by its own rule, so a declared difference never fails a
check and never stops a search before it finds a real race."""


def _names(value: Iterable[str]) -> frozenset[str]:
    # A typed converter (attrs' plugin cannot type the bare ``frozenset``).
    return frozenset(value)


def _weight_pairs(
    value: Mapping[str, int] | Iterable[tuple[str, int]],
) -> tuple[tuple[str, int], ...]:
    pairs = dict(value.items() if isinstance(value, Mapping) else value)
    for rid, weight in pairs.items():
        if isinstance(weight, bool) or not isinstance(weight, int) or weight < 0:
            raise ValueError(f"the weight of {rid!r} must be an int >= 0 (got {weight!r})")
    return tuple(sorted(pairs.items()))


@attrs.frozen
class SpecConfig:
    """What stays fixed for one stack: the script, the registry's universe, memory settings.

    `universe` None means the registry accepts every id.  `memory_threshold`
    0 disables memory-pressure eviction; otherwise a probe reading below it
    (not None) is pressure.
    """

    script: Script = attrs.field(factory=Script)
    universe: frozenset[str] | None = None
    memory_threshold: float = 0.0
    unknown_id_error: str = "UnknownModelId"  # what the registry raises for an unknown id
    # The cache's full-cache policy (``on_full``): when only pinned or leased
    # models are left, "proceed" admits over the bound, "refuse" raises
    # CacheFull having evicted nothing for it, "wait" cannot take effect
    # (blocked until a lease or pin ends; a timeout is always legal) unless
    # the add's thread holds a lease, which proceeds.  Under "wait" and
    # "refuse" the bound is a safety property: the only adds admitted over it
    # are that lease holder's ("wait") and a model heavier than `max_weight`
    # alone.  No admission counts on room a joined load takes back: a model an
    # admitted add joined is never a capacity victim (`SpecState.joined`), and
    # short of room an add waits for such adds as for loads in flight.
    on_full: str = attrs.field(default="proceed")
    # Weight-based capacity: the bound on the sum of the registered models'
    # weights (None: no weight bound) and each resolved id's weight (the
    # weigher's answer for its model; `default_weight` for ids not listed).
    max_weight: int | None = None
    weights: tuple[tuple[str, int], ...] = attrs.field(default=(), converter=_weight_pairs)
    default_weight: int = 1
    # Declared semantics (`DECLARABLE_SEMANTICS`) the implementation follows instead.
    semantics: frozenset[str] = attrs.field(default=frozenset(), converter=_names)

    @semantics.validator
    def _check_semantics(self, _attribute: object, value: frozenset[str]) -> None:
        unknown = sorted(value - DECLARABLE_SEMANTICS.keys())
        if unknown:
            raise ValueError(
                f"unknown declared semantics {unknown}; declarable: {sorted(DECLARABLE_SEMANTICS)}"
            )

    def weight_of(self, resolved_id: str) -> int:
        """The weight the weigher gives `resolved_id`'s model."""
        for rid, weight in self.weights:
            if rid == resolved_id:
                return weight
        return self.default_weight

    @on_full.validator
    def _check_on_full(self, _attribute: object, value: object) -> None:
        if value not in ON_FULL_POLICIES:
            raise ValueError(f"on_full is one of {ON_FULL_POLICIES} (got {value!r})")

    def accepts(self, resolved_id: str) -> bool:
        """Whether the registry returns a factory for `resolved_id`."""
        return self.universe is None or resolved_id in self.universe


def _sorted_pairs(pairs: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(pairs.items()))


@attrs.frozen
class SpecState:
    """The whole observable state, hashable.

    * `registered`: sorted (resolved id, model token) pairs;
    * `lru`: resolved ids, least recent first (a permutation of the
      registered ids);
    * `pins`: pinned resolved ids (configuration: may name unloaded ids);
    * `leases`: sorted (resolved id, count > 0) pairs;
    * `max_size`: the bound in models (None: weight only, `SpecConfig.max_weight`);
    * `weighed`: resolved ids loaded at least once: the cache knows their
      weight, so a load of one in flight counts with it (its estimate); the
      first load of an id counts 0 until it is registered;
    * `load_attempts` / `unload_attempts`: sorted (resolved id, attempts so far);
    * `probe_calls`: memory probe readings taken so far;
    * `overflows`: cold adds admitted over capacity (only pinned/leased left);
    * `admitted`: sorted (add id, resolved id, mode) of three-point adds between
      their admission and their completion (see `step`): mode "slot" (a cold
      add holding, or sharing, a capacity slot), "hit" (a warm hit done at
      admission) or "failed:<error>" (admission raised <error>);
    * `closed`: add ids of timed-out three-point adds completed without an
      admission (their admission can no longer happen);
    * `leaving`: (add id, victim) pairs, in eviction order: victims the add's
      admission chose, still registered and visible to observers until the
      add's ``evict`` (the eviction window; see `step`);
    * `restoring`: (op id, excluded id or None, needed) of expanded
      operations between their main point and their ``restore`` point (the
      bound comes back there; `needed` False: nothing to restore, e.g. a
      warm add);
    * `config`: the `SpecConfig` (excluded from equality and hashing).
    """

    registered: tuple[tuple[str, str], ...] = ()
    lru: tuple[str, ...] = ()
    pins: frozenset[str] = frozenset()
    leases: tuple[tuple[str, int], ...] = ()
    max_size: int | None = 8
    weighed: frozenset[str] = frozenset()
    load_attempts: tuple[tuple[str, int], ...] = ()
    unload_attempts: tuple[tuple[str, int], ...] = ()
    probe_calls: int = 0
    overflows: int = 0
    admitted: tuple[tuple[int, str, str], ...] = ()
    closed: frozenset[int] = frozenset()
    leaving: tuple[tuple[int, str], ...] = ()
    restoring: tuple[tuple[int, str | None, bool], ...] = ()
    config: SpecConfig = attrs.field(factory=SpecConfig, eq=False, repr=False)

    @property
    def models(self) -> dict[str, str]:
        """Registered resolved id -> model token."""
        return dict(self.registered)

    @property
    def lease_counts(self) -> dict[str, int]:
        """Resolved id -> leases held (ids with at least one)."""
        return dict(self.leases)

    def in_flight(self) -> frozenset[str]:
        """Resolved ids holding a capacity slot and not registered (distinct)."""
        models = self.models
        return frozenset(r for _, r, m in self.admitted if m == _SLOT and r not in models)

    def estimate(self, resolved_id: str) -> int:
        """The weight a load of `resolved_id` in flight counts with (0 before its first load)."""
        return self.config.weight_of(resolved_id) if resolved_id in self.weighed else 0

    def weight(self) -> int:
        """The registered models' weight plus the estimates of the loads in flight."""
        weight_of = self.config.weight_of
        registered = sum(weight_of(rid) for rid, _ in self.registered)
        return registered + sum(self.estimate(rid) for rid in self.in_flight())

    def excess(self) -> tuple[int, int]:
        """How many models and how much weight are over the bounds (<= 0: within; -1: no bound)."""
        count = -1
        if self.max_size is not None:
            count = len(self.registered) + len(self.in_flight()) - self.max_size
        max_weight = self.config.max_weight
        return count, (-1 if max_weight is None else self.weight() - max_weight)

    def evictable(self) -> list[str]:
        """Registered ids neither pinned, leased nor leaving, least recent first."""
        leased = self.lease_counts
        gone = self.leaving_ids()
        return [
            rid
            for rid in self.lru
            if rid not in self.pins and rid not in leased and rid not in gone
        ]

    def leaving_ids(self) -> frozenset[str]:
        """Victims chosen by an admission and not yet evicted (still registered)."""
        return frozenset(victim for _, victim in self.leaving)

    def joined(self) -> frozenset[str]:
        """Registered ids an admitted add holds a slot for (it joined their load): that
        add would load the model again if it went, so evicting it makes no room."""
        models = self.models
        return frozenset(r for _, r, m in self.admitted if m == _SLOT and r in models)


def initial_state(
    *,
    max_size: int | None = 8,
    script: Script | None = None,
    universe: Iterable[str] | None = None,
    memory_threshold: float = 0.0,
    on_full: str = "proceed",
    max_weight: int | None = None,
    weights: Mapping[str, int] | None = None,
    default_weight: int = 1,
    semantics: Iterable[str] = (),
) -> SpecState:
    """An empty stack's state.  Raises `ValueError` for a bad `max_size`, threshold,
    `on_full` (one of `ON_FULL_POLICIES`), weight setting or declared `semantics`
    (names of `DECLARABLE_SEMANTICS`).

    `max_weight` bounds the sum of the registered models' weights; a model's
    weight is ``weights.get(resolved_id, default_weight)`` (the cache's
    weigher).  `max_size` None bounds by weight only (`max_weight` required).
    """
    if max_size is None and max_weight is None:
        raise ValueError("max_size=None bounds by weight only: pass max_weight too")
    if max_size is not None and (
        isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 1
    ):
        raise ValueError(f"max_size must be an int >= 1 (got {max_size!r})")
    if max_weight is not None and (
        isinstance(max_weight, bool) or not isinstance(max_weight, int) or max_weight < 1
    ):
        raise ValueError(f"max_weight must be an int >= 1 or None (got {max_weight!r})")
    if (
        isinstance(default_weight, bool)
        or not isinstance(default_weight, int)
        or default_weight < 0
    ):
        raise ValueError(f"default_weight must be an int >= 0 (got {default_weight!r})")
    if not 0.0 <= memory_threshold <= 1.0:
        raise ValueError(f"memory_threshold must be in [0, 1] (got {memory_threshold!r})")
    config = SpecConfig(
        script=script if script is not None else Script(),
        universe=None if universe is None else frozenset(universe),
        memory_threshold=memory_threshold,
        on_full=on_full,
        max_weight=max_weight,
        weights=weights or {},
        default_weight=default_weight,
        semantics=frozenset(semantics),
    )
    return SpecState(max_size=max_size, config=config)


def resolve(model_id: str, alias: str | None) -> str:
    """The resolved id: the alias when given, else the model id (chosen semantics 1)."""
    return alias if alias is not None else model_id


class _Raise(Exception):
    """Internal: an operation's failure, carrying the state it leaves behind."""

    def __init__(self, name: str, state: SpecState, subject: tuple[str, int] | None = None) -> None:
        super().__init__(name)
        self.name = name
        self.state = state
        self.subject = subject  # (resolved id, attempt) of a scripted failure


def _check_id(value: object) -> str:
    if not isinstance(value, str):
        raise _Raise("InvalidArgumentType", SpecState())
    if not value:
        raise _Raise("InvalidArgument", SpecState())
    return value


def _check_alias(value: object) -> str | None:
    return None if value is None else _check_id(value)


def _evict(state: SpecState, victim: str) -> SpecState:
    """Run `clear_cache` on `victim` (consuming an unload attempt); raise on a scripted failure."""
    attempts = dict(state.unload_attempts)
    attempt = attempts.get(victim, 0) + 1
    attempts[victim] = attempt
    state = attrs.evolve(state, unload_attempts=_sorted_pairs(attempts))
    if state.config.script.fails(UNLOAD, victim, attempt):
        raise _Raise("ScriptedUnloadError", state, (victim, attempt))
    models = state.models
    del models[victim]
    return attrs.evolve(
        state,
        registered=_sorted_pairs(models),
        lru=tuple(x for x in state.lru if x != victim),
    )


def _pick(state: SpecState, count: int, weight: int, skip: Iterable[str] = ()) -> list[str]:
    """Evictable ids, least recent first, until `count` of them and `weight` are freed.

    Fewer when not enough are evictable; none when nothing is needed (both <= 0).
    """
    if count <= 0 and weight <= 0:
        return []
    skipped = frozenset(skip)
    candidates = [c for c in state.evictable() if c not in skipped]
    if weight <= 0:  # the count alone (every unweighted check): no weight lookups
        return candidates[: max(count, 0)]
    weight_of = state.config.weight_of
    chosen: list[str] = []
    freed = 0
    for candidate in candidates:
        chosen.append(candidate)
        freed += weight_of(candidate)
        if len(chosen) >= count and freed >= weight:
            break
    return chosen


def _covers(state: SpecState, chosen: Sequence[str], count: int, weight: int) -> bool:
    if len(chosen) < count:
        return False
    weight_of = state.config.weight_of
    return weight <= 0 or sum(weight_of(v) for v in chosen) >= weight


def _choose_victims(
    state: SpecState, rid: str, *, memory: bool = True, holds_lease: bool = False
) -> tuple[SpecState, list[str], bool]:
    """A cold add's victims (memory rounds, then capacity; loads in flight count
    with their estimates), chosen in this state and not yet evicted, and whether
    the add of `rid` is refused (``on_full="refuse"``: it evicts only its memory
    victims, then raises CacheFull).  The state only records the probe readings
    taken and an overflow.  Raises `_BLOCKED` when the core would wait
    (``on_full="wait"`` with no lease held by the add's thread, `holds_lease`).
    `memory` False chooses capacity victims only (the caller ran the rounds).

    Capacity asks for room for one more model and for `rid`'s estimate
    (`SpecState.estimate`): the least recent evictable models until both are
    freed.  A model heavier than `max_weight` alone is admitted over the bound
    whatever the policy (no lease or pin ending can make room for it).
    """
    victims: list[str] = []
    # Memory pressure first: rounds of up to 3 with a re-measure in between.
    if memory and state.config.memory_threshold > 0.0:
        while True:
            reading = state.config.script.memory_fraction(state.probe_calls)
            state = attrs.evolve(state, probe_calls=state.probe_calls + 1)
            if reading is None or reading >= state.config.memory_threshold:
                break
            chosen = [v for v in state.evictable() if v not in victims][:_MEMORY_ROUND]
            if not chosen:
                break
            victims.extend(chosen)
    # Capacity: evict only as many least-recent evictable models as needed;
    # when only pinned or leased models remain, the full-cache policy decides.
    weight_of = state.config.weight_of
    count, weight = state.excess()
    count = count - len(victims) + 1 if state.max_size is not None else 0
    max_weight = state.config.max_weight
    if max_weight is not None:
        weight = weight - sum(weight_of(v) for v in victims) + state.estimate(rid)
    else:
        weight = 0
    if count > 0 or weight > 0:
        # A model an admitted add joined is never a capacity victim (no room).
        joined = state.joined()
        wanted = count
        if count > 0 and EVICTS_IN_ROUNDS in state.config.semantics:
            wanted = -(-count // _MEMORY_ROUND) * _MEMORY_ROUND  # whole rounds of 3
        chosen = _pick(state, wanted, weight, skip=(*victims, *joined))
        if not _covers(state, chosen, count, weight):
            if state.in_flight() or any(j in state.evictable() for j in joined):
                # The core waits for in-flight loads, and for the adds that joined
                # an evictable model's load, before evicting anything: no
                # admission can take effect in this state (I14).
                raise _Raise(_BLOCKED, state)
            # Full of pinned and leased models: the full-cache policy decides,
            # and only an add admitted over the bound evicts what can go.
            oversized = max_weight is not None and state.estimate(rid) > max_weight
            policy = state.config.on_full
            if policy == "refuse" and not oversized:
                return state, victims, True
            if policy == "wait" and not holds_lease and not oversized:
                raise _Raise(_BLOCKED, state)
            state = attrs.evolve(state, overflows=state.overflows + 1)
        victims.extend(chosen)
    return state, victims, False


def _make_room(state: SpecState, rid: str, *, holds_lease: bool = False) -> SpecState:
    """A one-point cold add's evictions, done at once (the sequential spec).

    Memory rounds evict before the probe is read again, so a failed
    `clear_cache` ends the add before that re-measure: the probe readings taken
    are exactly the core's.  Raises `_Raise` with the state left by a failed
    eviction (earlier victims stay evicted).
    """
    if state.config.memory_threshold > 0.0:
        while True:
            reading = state.config.script.memory_fraction(state.probe_calls)
            state = attrs.evolve(state, probe_calls=state.probe_calls + 1)
            if reading is None or reading >= state.config.memory_threshold:
                break
            chosen = state.evictable()[:_MEMORY_ROUND]
            if not chosen:
                break
            for victim in chosen:
                state = _evict(state, victim)
    state, victims, refused = _choose_victims(state, rid, memory=False, holds_lease=holds_lease)
    for victim in victims:
        state = _evict(state, victim)
    if refused:
        raise _Raise(CACHE_FULL, state)
    return state


def _restore(state: SpecState, exclude: str | None = None) -> SpecState:
    """The bound comes back (issue 14): after a lease or pin ends or a cold add finishes.

    While the cache is over a bound (`SpecState.excess`: registered plus
    in-flight loads over `max_size`, or their weight over `max_weight`), the
    least recently used models that are neither pinned, leased, leaving nor
    `exclude` (what the add just loaded) are evicted until both are within.
    A failed `clear_cache` stops it: that model stays, and the operation that
    triggered it still succeeds.  Nothing happens while another add's victims
    are leaving (that add restores when it ends).
    """
    if state.leaving:
        return state
    count, weight = state.excess()
    skip = () if exclude is None else (exclude,)
    for victim in _pick(state, count, weight, skip):
        try:
            state = _evict(state, victim)
        except _Raise as failure:
            return failure.state
    return state


def _add(
    state: SpecState, model_id: object, alias: object, pin: object, holds_lease: object = False
) -> SpecState:
    mid = _check_id(model_id)
    al = _check_alias(alias)
    if not isinstance(pin, bool):
        raise _Raise("InvalidArgumentType", state)
    rid = resolve(mid, al)
    if state.leaving:
        raise _Raise(_BLOCKED, state)  # a one-point add does not overlap an eviction
    if rid in state.models:  # warm hit: a use refreshes the LRU
        lru = (*(x for x in state.lru if x != rid), rid)
        pins = state.pins | {rid} if pin else state.pins
        return attrs.evolve(state, lru=lru, pins=pins)
    state = _make_room(state, rid, holds_lease=holds_lease is True)
    try:
        state = _load(state, rid, pin=pin)
    except _Raise as failure:
        raise _Raise(failure.name, _restore(failure.state, rid), failure.subject) from None
    return _restore(state, rid)


def _load(state: SpecState, rid: str, *, pin: bool) -> SpecState:
    """The load of a cold add, after its evictions (the one-point add's and a
    three-point add's completion share it): the registry is asked (an unknown id
    raises its error), the constructor attempt is consumed (a scripted failure
    raises `ScriptedLoadError` with nothing registered), and the model is
    registered at the most-recent end, pinned if `pin`."""
    if not state.config.accepts(rid):
        raise _Raise(state.config.unknown_id_error, state)
    attempts = dict(state.load_attempts)
    attempt = attempts.get(rid, 0) + 1
    attempts[rid] = attempt
    state = attrs.evolve(state, load_attempts=_sorted_pairs(attempts))
    if state.config.script.fails(LOAD, rid, attempt):
        raise _Raise("ScriptedLoadError", state, (rid, attempt))
    models = state.models
    models[rid] = f"{rid}#{attempt}"
    return attrs.evolve(
        state,
        registered=_sorted_pairs(models),
        lru=(*state.lru, rid),
        pins=state.pins | {rid} if pin else state.pins,
        weighed=state.weighed | {rid},
    )


def _admitted_entry(state: SpecState, oid: object) -> tuple[int, str, str] | None:
    for entry in state.admitted:
        if entry[0] == oid:
            return entry
    return None


def _with_admitted(state: SpecState, entries: Iterable[tuple[int, str, str]]) -> SpecState:
    return attrs.evolve(state, admitted=tuple(sorted(entries, key=repr)))


def _admit(
    state: SpecState,
    oid: object,
    model_id: object,
    alias: object,
    pin: object,
    *,
    holds_lease: object = False,
) -> SpecState:
    """First instant of a three-point add: a warm hit, or victims chosen plus a slot
    (or, refused by a full cache, only its memory victims: it raises CacheFull at
    its completion).  `holds_lease`: the add's thread holds a lease (see
    `SpecConfig.on_full`)."""
    if not isinstance(oid, int) or isinstance(oid, bool):
        raise ValueError(f"an add id is an int (got {oid!r})")
    if oid in state.closed or _admitted_entry(state, oid) is not None:
        raise _Raise(_BLOCKED, state)  # admitted twice, or after its completion
    mid = _check_id(model_id)
    al = _check_alias(alias)
    if not isinstance(pin, bool):
        raise _Raise("InvalidArgumentType", state)
    rid = resolve(mid, al)
    if rid in state.leaving_ids():
        raise _Raise(_BLOCKED, state)  # the core waits for the victim's unload
    if rid in state.models:  # warm hit, at admission: a use refreshes the LRU
        lru = (*(x for x in state.lru if x != rid), rid)
        pins = state.pins | {rid} if pin else state.pins
        state = attrs.evolve(state, lru=lru, pins=pins)
        return _with_admitted(state, (*state.admitted, (oid, rid, _HIT)))
    in_flight = state.in_flight()
    if rid not in in_flight:  # a slot already held for rid is shared: no room needed
        chose, victims, refused = _choose_victims(state, rid, holds_lease=holds_lease is True)
        if victims and state.leaving:
            # Evictions run one at a time: the core waits for the other one.
            raise _Raise(_BLOCKED, state)
        state = attrs.evolve(chose, leaving=(*chose.leaving, *((oid, v) for v in victims)))
        if refused:
            return _with_admitted(state, (*state.admitted, (oid, rid, _FAILED + CACHE_FULL)))
    return _with_admitted(state, (*state.admitted, (oid, rid, _SLOT)))


def _evict_chosen(state: SpecState, oid: int) -> SpecState:
    """The eviction instant of a three-point add: its chosen victims are unloaded.

    Before its admission the add cannot evict (blocked); an add that chose no
    victim evicts nothing.  A failed `clear_cache` stops it: earlier victims
    stay evicted, the failed one and the rest stay registered at their LRU
    positions, and the add fails with that error at its completion (I6).
    """
    entry = _admitted_entry(state, oid)
    if entry is None:
        if oid in state.closed:
            return state
        raise _Raise(_BLOCKED, state)
    victims = [v for o, v in state.leaving if o == oid]
    state = attrs.evolve(state, leaving=tuple(e for e in state.leaving if e[0] != oid))
    for victim in victims:
        try:
            state = _evict(state, victim)
        except _Raise as failure:
            rid = entry[1]
            failed = _with_admitted(
                failure.state,
                (
                    *(e for e in failure.state.admitted if e[0] != oid),
                    (oid, rid, _FAILED + failure.name),
                ),
            )
            raise _Raise(failure.name, failed, failure.subject) from None
    return state


def _complete(state: SpecState, op: tuple[Any, ...]) -> tuple[SpecState, str | None]:
    """Last instant of a three-point add: register (or hit), or fail and free the slot.

    `op` is ``("complete", oid, model_id, alias, pin[, lease])``.  Returns the
    new state and, for an acquire (`lease` True), the model token.
    """
    oid, pin = op[1], op[4]
    lease = op[5] if len(op) == 6 else False
    entry = _admitted_entry(state, oid)
    if entry is None or any(o == oid for o, _ in state.leaving):
        raise _Raise(_BLOCKED, state)  # a completion follows its admission and eviction
    _, rid, mode = entry
    state = _with_admitted(state, (e for e in state.admitted if e[0] != oid))
    if mode.startswith(_FAILED):
        raise _Raise(mode[len(_FAILED) :], state)  # the add raised at admission
    if mode == _HIT and rid not in state.models:
        # A warm hit returns a registered model (I3): its completion cannot
        # come after the model was removed or evicted (upstream B4).
        raise _Raise(_BLOCKED, state)
    if mode == _SLOT:
        if rid in state.models:
            # Joined hit: loaded by a concurrent add since our admission; it
            # takes effect right after that load, so the LRU does not move.
            if pin is True:
                state = attrs.evolve(state, pins=state.pins | {rid})
        else:
            state = _load(state, rid, pin=pin is True)
    if lease is True:
        state, token = _lease(state, rid)
        return state, token
    return state, None


def _timed_out_completion(state: SpecState, oid: object) -> SpecState:
    """A three-point add that raised `LockTimeout`: its slot (if any) is released.

    Without an admission, the add id is closed: its admission (recorded as
    indeterminate) can no longer happen.  Victims of an admission stay evicted.
    """
    if any(o == oid for o, _ in state.leaving):
        raise _Raise(_BLOCKED, state)  # its eviction comes first
    entry = _admitted_entry(state, oid)
    if entry is None:
        if not isinstance(oid, int) or isinstance(oid, bool):
            raise ValueError(f"an add id is an int (got {oid!r})")
        return attrs.evolve(state, closed=state.closed | {oid})
    if entry[2].startswith(_FAILED):
        raise _Raise(_BLOCKED, state)  # that add raised its admission error, not a timeout
    return _with_admitted(state, (e for e in state.admitted if e[0] != oid))


def _remove(state: SpecState, model_id: object) -> SpecState:
    rid = _check_id(model_id)
    if rid in state.leaving_ids():
        raise _Raise(_BLOCKED, state)  # waits for the eviction in progress
    if rid not in state.models:
        return state  # chosen semantics 8: unknown id is a silent no-op
    if rid in state.lease_counts:
        raise _Raise(LOCK_TIMEOUT, state)  # remove waits for leases; nobody releases
    return _evict(state, rid)


def _clear(state: SpecState, details: list[tuple[str, str, int]]) -> tuple[SpecState, list[str]]:
    failures: list[str] = []
    for rid in list(state.lru):
        try:
            state = _remove(state, rid)
        except _Raise as failure:
            state = failure.state
            failures.append(failure.name)
            if failure.subject is not None:
                details.append((failure.name, *failure.subject))
            if CLEAR_STOPS in state.config.semantics:
                break
    return state, failures


def _lease(state: SpecState, model_id: object) -> tuple[SpecState, str]:
    rid = _check_id(model_id)
    if rid in state.leaving_ids():
        raise _Raise(_BLOCKED, state)  # waits for the eviction in progress
    models = state.models
    if rid not in models:
        raise _Raise("ModelNotFound", state)
    counts = state.lease_counts
    counts[rid] = counts.get(rid, 0) + 1
    return attrs.evolve(state, leases=_sorted_pairs(counts)), models[rid]


def _release(state: SpecState, rid: str, *, restore: bool = True) -> SpecState:
    counts = state.lease_counts
    if rid not in counts:
        raise _Raise("RuntimeError", state)  # releasing a lease nobody holds: a harness bug
    counts[rid] -= 1
    if not counts[rid]:
        del counts[rid]
    state = attrs.evolve(state, leases=_sorted_pairs(counts))
    return _restore(state) if restore else state


def _pending_restore(state: SpecState, oid: object, exclude: str | None, needed: bool) -> SpecState:
    """Record that expanded operation `oid` reached its main point; its restore point follows."""
    if not isinstance(oid, int) or isinstance(oid, bool):
        raise ValueError(f"an operation id is an int (got {oid!r})")
    if any(entry[0] == oid for entry in state.restoring):
        raise _Raise(_BLOCKED, state)  # one main point per operation
    return attrs.evolve(state, restoring=(*state.restoring, (oid, exclude, needed)))


def _restore_point(state: SpecState, oid: object) -> SpecState:
    """The restore point of an expanded operation: after its main point, the bound comes back."""
    for entry in state.restoring:
        if entry[0] == oid:
            state = attrs.evolve(state, restoring=tuple(e for e in state.restoring if e != entry))
            return _restore(state, entry[1]) if entry[2] else state
    raise _Raise(_BLOCKED, state)  # a restore point follows its operation's main point


def _then(
    main: Callable[[], tuple[SpecState, str | None]], after: Callable[[SpecState], SpecState]
) -> tuple[SpecState, str | None]:
    """Run an operation's main point, then `after` on the state it left, whether it
    returned or raised (a blocked main point is not applied: nothing follows)."""
    try:
        state, value = main()
    except _Raise as failure:
        if failure.name == _BLOCKED:
            raise
        raise _Raise(failure.name, after(failure.state), failure.subject) from None
    return after(state), value


def _arity(op: tuple[Any, ...], *sizes: int) -> None:
    if len(op) not in sizes:
        raise ValueError(f"operation {op!r} must have {' or '.join(map(str, sizes))} elements")


def apply(state: SpecState, op: tuple[Any, ...]) -> tuple[Outcome, SpecState]:
    """Run one operation on `state`: the outcome and the state it leaves.

    A failed operation leaves exactly the state the chosen semantics
    prescribe (e.g. a failed eviction keeps the earlier victims evicted and
    the attempt counters consumed).  Raises `ValueError` for an operation
    that is not in the encoding documented in this module.
    """
    outcome, new_state, _ = apply_detailed(state, op)
    return outcome, new_state


def apply_detailed(
    state: SpecState, op: tuple[Any, ...]
) -> tuple[Outcome, SpecState, list[tuple[str, str, int]]]:
    """`apply`, plus the scripted failures raised: (exception name, resolved id, attempt)."""
    details: list[tuple[str, str, int]] = []
    outcome, new_state = _apply(state, op, details)
    return outcome, new_state, details


def _apply(
    state: SpecState, op: tuple[Any, ...], details: list[tuple[str, str, int]]
) -> tuple[Outcome, SpecState]:
    if not isinstance(op, tuple) or not op:
        raise ValueError(f"an operation is a non-empty tuple (got {op!r})")
    name = op[0]
    try:
        match name:
            case "add":
                _arity(op, 3, 4, 5)
                pin = op[3] if len(op) >= 4 else False
                holds = op[4] if len(op) == 5 else False
                return ("ok", None), _add(state, op[1], op[2], pin, holds)
            case "admit":
                _arity(op, 5, 6)
                holds = op[5] if len(op) == 6 else False
                return ("ok", None), _admit(state, op[1], op[2], op[3], op[4], holds_lease=holds)
            case "evict":
                _arity(op, 2)
                return ("ok", None), _evict_chosen(state, op[1])
            case "complete":
                _arity(op, 5, 6)
                entry = _admitted_entry(state, op[1])
                # Only a cold add restores when it ends (a warm hit or an
                # admission error returns before the load).
                needed = entry is not None and entry[2] == _SLOT
                rid = entry[1] if entry is not None else None
                state, token = _then(
                    lambda: _complete(state, op),
                    lambda after: _pending_restore(after, op[1], rid, needed),
                )
                return ("ok", token), state
            case "give_back":
                _arity(op, 3)
                state = _release(state, op[2], restore=False)
                return ("ok", None), _pending_restore(state, op[1], None, True)
            case "unpin_only":
                _arity(op, 3)
                rid = _check_id(op[2])
                pinned = rid in state.pins
                state = attrs.evolve(state, pins=state.pins - {rid})
                return ("ok", None), _pending_restore(state, op[1], None, pinned)
            case "restore":
                _arity(op, 2)
                return ("ok", None), _restore_point(state, op[1])
            case "remove":
                # One point (a sequential run): the removal, then its restore point.
                _arity(op, 2)
                target = _check_id(op[1])
                state, _ = _then(
                    lambda: (_remove(state, target), None), lambda after: _restore(after, target)
                )
                return ("ok", None), state
            case "remove_only":
                # The main point of a two-point remove; its restore point follows.
                # It never evicts the id it removes (a failed remove leaves it).
                _arity(op, 3)
                target = _check_id(op[2])
                state, _ = _then(
                    lambda: (_remove(state, target), None),
                    lambda after: _pending_restore(after, op[1], target, True),
                )
                return ("ok", None), state
            case "clear":
                _arity(op, 1)
                if state.leaving:
                    raise _Raise(_BLOCKED, state)
                state, failures = _clear(state, details)
                if failures and CLEAR_STOPS in state.config.semantics:
                    return ("raise", failures[0]), state  # the first failure, alone
                if failures:
                    return ("raise", _group_name(failures)), state
                return ("ok", None), state
            case "refresh":
                _arity(op, 2)
                rid = _check_id(op[1])
                if rid in state.leaving_ids():
                    raise _Raise(_BLOCKED, state)  # waits for the victim's unload
                if rid not in state.models:
                    return ("ok", None), state  # chosen semantics 5
                return ("ok", None), attrs.evolve(
                    state, lru=(*(x for x in state.lru if x != rid), rid)
                )
            case "pin":
                _arity(op, 2)
                if op[1] in state.leaving_ids():
                    raise _Raise(_BLOCKED, state)  # pinning takes the id's lifecycle
                return ("ok", None), attrs.evolve(state, pins=state.pins | {_check_id(op[1])})
            case "unpin":
                _arity(op, 2)
                rid = _check_id(op[1])
                if rid not in state.pins:
                    return ("ok", None), state
                return ("ok", None), _restore(attrs.evolve(state, pins=state.pins - {rid}))
            case "lease":
                _arity(op, 2)
                state, token = _lease(state, op[1])
                return ("ok", token), state
            case "acquire":
                _arity(op, 3, 4)
                state = _add(state, op[1], op[2], False, op[3] if len(op) == 4 else False)
                state, token = _lease(state, resolve(op[1], op[2]))
                return ("ok", token), state
            case "release":
                _arity(op, 2)
                return ("ok", None), _release(state, op[1])
            case "keys":
                _arity(op, 1)
                return ("ok", tuple(rid for rid, _ in state.registered)), state
            case "contains":
                _arity(op, 2)
                return ("ok", op[1] in state.models), state
            case "getitem":
                _arity(op, 2)
                if op[1] in state.leaving_ids():
                    raise _Raise(_BLOCKED, state)  # waits for the victim's unload
                models = state.models
                if op[1] not in models:
                    return ("raise", "ModelNotFound"), state
                return ("ok", models[op[1]]), state
            case "len":
                _arity(op, 1)
                return ("ok", len(state.registered)), state
            case "lru":
                _arity(op, 1)
                return ("ok", state.lru), state
            case "pinned":
                _arity(op, 1)
                return ("ok", tuple(sorted(state.pins))), state
            case _:
                raise ValueError(f"unknown operation {name!r} in {op!r}")
    except _Raise as failure:
        if failure.subject is not None:
            details.append((failure.name, *failure.subject))
        # Argument errors are raised before anything changes: keep the input state.
        kept = state if failure.name.startswith("InvalidArgument") else failure.state
        return ("raise", failure.name), kept


def _group_name(names: Iterable[str]) -> str:
    return f"ExceptionGroup({','.join(sorted(names))})"


def _exception_name(error: BaseException) -> str:
    if isinstance(error, BaseExceptionGroup):
        return _group_name(_exception_name(e) for e in error.exceptions)
    if isinstance(error, TimeoutError):
        # Any bounded wait that gave up: our LockTimeout subclasses TimeoutError,
        # and a user's manager under `--target` may raise the builtin itself.
        return "LockTimeout"
    if type(error) is KeyError:
        # "not loaded", as a user's manager under `--target` may say it with the builtin
        # (`self.models[model_id]`): the core's ModelNotFound is a KeyError too.
        return "ModelNotFound"
    return type(error).__name__


def encode_outcome(value: object = None, error: BaseException | None = None) -> Outcome:
    """Encode a real result (`value`) or exception (`error`) as the spec's output."""
    if error is not None:
        return ("raise", _exception_name(error))
    return ("ok", value)


def _is_unknown(output: object) -> bool:
    if isinstance(output, str):
        return output in _UNKNOWN_STRINGS
    return type(output).__name__ == "_Unknown"  # lockstep.linearizability.UNKNOWN


def step(state: SpecState, op_input: tuple[Any, ...], op_output: Any) -> tuple[bool, SpecState]:
    """Linearizability step function: is `op_output` legal for `op_input` in `state`?

    See the module docstring for the encoding, the treatment of UNKNOWN
    (any output accepted, effect applied) and of `LockTimeout` (always
    legal, no effect).
    """
    if op_output == ("raise", LOCK_TIMEOUT):
        if isinstance(op_input, tuple) and op_input[:1] == ("remove_only",):
            _arity(op_input, 3)
            try:
                target = _check_id(op_input[2])
                return True, _pending_restore(state, op_input[1], target, True)
            except _Raise:
                return False, state
        if isinstance(op_input, tuple) and op_input[:1] == ("complete",):
            _arity(op_input, 5, 6)
            entry = _admitted_entry(state, op_input[1])
            try:
                state = _timed_out_completion(state, op_input[1])
                needed = entry is not None and entry[2] == _SLOT
                rid = entry[1] if entry is not None else None
                return True, _pending_restore(state, op_input[1], rid, needed)
            except _Raise:
                return False, state
        return True, state
    expected, new_state = apply(state, op_input)
    if expected == ("raise", _BLOCKED):
        return False, state
    if _is_unknown(op_output):
        return True, new_state
    return expected == _normalise(op_input, op_output), new_state


def explain(state: SpecState, op_input: tuple[Any, ...], op_output: Any) -> str | None:
    """Why `step` rejects `op_output` for `op_input` in `state`, in words (I15 reports
    it beside each operation the spec rejects); None when it accepts it."""
    try:
        expected, _ = apply(state, op_input)
    except ValueError:
        return None
    if expected == ("raise", _BLOCKED):
        return (
            "the spec says it cannot take effect in this state (the operation would "
            "still be waiting for another one to finish)"
        )
    observed = _normalise(op_input, op_output)
    if _is_unknown(op_output) or expected == observed:
        return None
    return f"the spec says it {_outcome_text(expected)} here; the code {_outcome_text(observed)}"


def _outcome_text(outcome: Any) -> str:
    """``returns normally``, ``returns ('a',)``, ``raises ScriptedUnloadError``."""
    if isinstance(outcome, tuple) and len(outcome) == 2:
        kind, value = outcome
        if kind == "raise":
            return f"raises {value}"
        if kind == "ok":
            return "returns normally" if value is None else f"returns {value!r}"
    return f"gives {outcome!r}"


ADMISSION_ERRORS: Final = frozenset({"ScriptedUnloadError"})
"""Errors an add raises at admission (a failed eviction), not at completion."""


def expand_adds(
    history: Sequence[Any], *, admission_errors: Iterable[str] = ADMISSION_ERRORS
) -> tuple[Any, ...]:
    """Rewrite every ``add`` and ``acquire`` of a history as a three-point add.

    `history` holds `lockstep.linearizability.Operation` records.  Each add
    (or acquire) with call c and return r becomes three operations of the
    same process over the same interval [c, r], with an add id (its index in
    `history`): ``("admit", id, model_id, alias, pin)`` (a warm hit, or the
    victims chosen and a slot reserved), ``("evict", id)`` (the victims
    unloaded and gone) and ``("complete", id, model_id, alias, pin, lease)``
    (lease True for an acquire).  Outputs:

    * returned normally: admit and evict ``("ok", None)``, complete the real
      output;
    * raised an admission error (`admission_errors`, a failed eviction):
      admit ``("ok", None)``, evict and complete carry it;
    * raised ``LockTimeout``: admission and eviction are indeterminate
      (``ret=None``: they may have happened, or not), the completion carries
      the timeout (it releases the slot);
    * raised anything else (a failed load, an unknown id): admit and evict
      ``("ok", None)``, complete the error;
    * an argument error (``InvalidArgument*``): left as one ``add``
      (nothing was admitted);
    * never returned (``ret=None``): all three indeterminate.

    A ``remove`` becomes ``("remove_only", id, model_id)`` (its output) and
    ``("restore", id)``, as a lease given back or an unpin does: the cache
    restores its bound when a removal ends, whatever its outcome.

    Every other operation is kept as it is.
    """
    errors = frozenset(admission_errors)
    expanded: list[Any] = []
    for oid, op in enumerate(history):
        op_input = op.input
        if isinstance(op_input, tuple) and op_input[:1] in (("release",), ("unpin",)):
            # Two points: the lease given back (or the pin dropped), then the
            # bound comes back (issue 14), within the same interval.
            main = "give_back" if op_input[0] == "release" else "unpin_only"
            if len(op_input) == 2 and not (
                op.ret is not None and isinstance(op.output, tuple) and op.output[:1] == ("raise",)
            ):
                expanded.append(attrs.evolve(op, input=(main, oid, op_input[1])))
                expanded.append(_restore_op(op, oid))
                continue
        output = op.output
        if (
            isinstance(op_input, tuple)
            and op_input[:1] == ("remove",)
            and len(op_input) == 2
            and not _argument_error(op, output)
        ):
            # Two points: the removal, then the bound comes back (a restoration
            # that waited for the id's lifecycle may have left that to it).
            expanded.append(attrs.evolve(op, input=("remove_only", oid, op_input[1])))
            expanded.append(_restore_op(op, oid))
            continue
        if not (isinstance(op_input, tuple) and op_input[:1] in (("add",), ("acquire",))):
            expanded.append(op)
            continue
        if _argument_error(op, output):
            expanded.append(op)
            continue
        if op_input[0] == "add":
            mid, alias = op_input[1], op_input[2]
            pin = op_input[3] if len(op_input) >= 4 else False
            holds = op_input[4] if len(op_input) == 5 else False
            lease = False
        else:
            mid, alias, pin, lease = op_input[1], op_input[2], False, True
            holds = op_input[3] if len(op_input) == 4 else False
        admission = (
            ("admit", oid, mid, alias, pin, True)
            if holds is True
            else ("admit", oid, mid, alias, pin)
        )
        admit = attrs.evolve(op, input=admission, output=("ok", None))
        evict = attrs.evolve(op, input=("evict", oid), output=("ok", None))
        complete = attrs.evolve(op, input=("complete", oid, mid, alias, pin, lease))
        if op.ret is None:
            admit = attrs.evolve(admit, output=None)
            evict = attrs.evolve(evict, output=None)
        elif output == ("raise", LOCK_TIMEOUT):
            admit = attrs.evolve(admit, ret=None, output=None)
            evict = attrs.evolve(evict, ret=None, output=None)
        elif isinstance(output, tuple) and output[:1] == ("raise",) and output[1] in errors:
            evict = attrs.evolve(evict, output=output)
        expanded.extend((admit, evict, complete, _restore_op(op, oid)))
    return tuple(expanded)


def _argument_error(op: Any, output: Any) -> bool:
    """Whether `op` returned an argument error (``InvalidArgument*``): nothing happened."""
    return (
        op.ret is not None
        and isinstance(output, tuple)
        and len(output) == 2
        and output[0] == "raise"
        and str(output[1]).startswith("InvalidArgument")
    )


def _restore_op(op: Any, oid: int) -> Any:
    """The restore point of expanded operation `oid` (same process and interval)."""
    restore = attrs.evolve(op, input=("restore", oid), output=("ok", None))
    return restore if op.ret is not None else attrs.evolve(restore, output=None)


def _normalise(op_input: tuple[Any, ...], output: Any) -> Any:
    """Lists become tuples; keys and pinned compare as sets (their order is unspecified)."""
    if isinstance(output, list):
        output = tuple(output)
    if (
        isinstance(output, tuple)
        and len(output) == 2
        and output[0] == "ok"
        and isinstance(output[1], list | tuple | frozenset | set)
    ):
        value = output[1]
        if op_input and op_input[0] in ("keys", "pinned"):
            value = tuple(sorted(value))
        elif isinstance(value, list):
            value = tuple(value)
        output = ("ok", value)
    return output


def _exception_types() -> dict[str, Callable[[str], Exception]]:
    types: dict[str, Callable[[str], Exception]] = {"RuntimeError": RuntimeError}
    try:
        from modelmanager import errors  # noqa: PLC0415 - the spec must import without the core
    except ImportError:  # pragma: no cover
        return types
    types["ModelNotFound"] = errors.ModelNotFound
    types["InvalidArgument"] = errors.InvalidArgument
    types["InvalidArgumentType"] = errors.InvalidArgumentType
    types[LOCK_TIMEOUT] = lambda message: errors.LockTimeout(message, 0.0)
    types[CACHE_FULL] = lambda message: errors.CacheFull("", message)
    return types


def _exception(name: str, subject: str | None, details: list[tuple[str, str, int]]) -> Exception:
    if name.startswith("ExceptionGroup("):
        members = name[len("ExceptionGroup(") : -1].split(",")
        return ExceptionGroup(
            "clear() failed for some models",
            [_exception(m, subject, details) for m in members],
        )
    if name in ("ScriptedLoadError", "ScriptedUnloadError"):
        for k, (kind, rid, attempt) in enumerate(details):
            if kind == name:
                del details[k]
                cls = ScriptedLoadError if name == "ScriptedLoadError" else ScriptedUnloadError
                return cls(rid, attempt)
    factory = _exception_types().get(name, RuntimeError)
    return factory(f"{name} (spec) for {subject!r}")


class Spec:
    """A mutable front end over `apply`, mirroring the real stack's API.

    Methods return what the real API returns (model tokens stand in for
    model objects) and raise exceptions of the same *types* (a scripted
    failure raises `ScriptedLoadError`/`ScriptedUnloadError` naming the id
    and attempt; `clear()` raises an `ExceptionGroup`).  Not thread-safe.
    """

    def __init__(self, state: SpecState) -> None:
        self.state = state

    def run(self, op: tuple[Any, ...]) -> Outcome:
        """Apply `op`, keep the new state and return the encoded outcome."""
        outcome, self.state = apply(self.state, op)
        return outcome

    def _call(self, op: tuple[Any, ...], subject: str | None = None) -> Any:
        outcome, self.state, details = apply_detailed(self.state, op)
        kind, value = outcome
        if kind == "ok":
            return value
        raise _exception(value, subject, list(details))

    def add_model(
        self,
        model_id: str,
        api_key: object = None,
        model_id_alias: str | None = None,
        *,
        pin: bool = False,
    ) -> None:
        """Load (or refresh) `model_id` under its resolved id."""
        subject = model_id_alias if model_id_alias is not None else model_id
        self._call(("add", model_id, model_id_alias, pin), subject)

    def remove(self, model_id: str) -> None:
        """Unload `model_id` (no-op when unknown)."""
        self._call(("remove", model_id), model_id)

    def clear(self) -> None:
        """Unload everything; `ExceptionGroup` of the failures."""
        self._call(("clear",))

    def refresh(self, model_id: str) -> None:
        """Mark `model_id` most recently used (no-op when unregistered)."""
        self._call(("refresh", model_id), model_id)

    def pin_model(self, model_id: str) -> None:
        """Pin `model_id` (allowed before the load)."""
        self._call(("pin", model_id), model_id)

    def unpin_model(self, model_id: str) -> None:
        """Unpin `model_id`."""
        self._call(("unpin", model_id), model_id)

    def lease(self, model_id: str) -> str:
        """Enter a lease; returns the model token."""
        return str(self._call(("lease", model_id), model_id))

    def acquire(self, model_id: str, model_id_alias: str | None = None) -> str:
        """Load and lease; returns the model token."""
        subject = model_id_alias if model_id_alias is not None else model_id
        return str(self._call(("acquire", model_id, model_id_alias), subject))

    def release(self, resolved_id: str) -> None:
        """Leave a lease."""
        self._call(("release", resolved_id), resolved_id)

    def keys(self) -> list[str]:
        """Registered resolved ids (sorted)."""
        return list(self._call(("keys",)))

    def __contains__(self, model_id: object) -> bool:
        return bool(self._call(("contains", model_id)))

    def __getitem__(self, model_id: str) -> str:
        return str(self._call(("getitem", model_id), model_id))

    def __len__(self) -> int:
        return int(self._call(("len",)))

    def lru_order(self) -> list[str]:
        """Least recent first."""
        return list(self.state.lru)

    def pinned(self) -> frozenset[str]:
        """Pinned resolved ids."""
        return self.state.pins

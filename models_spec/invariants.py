"""The numbered invariants I1-I16, one function each.

Every check takes a `Snapshot` (see `adapter.py`) and/or the `Ghost` the
fakes recorded, returns None when the invariant holds and raises
`InvariantViolation` (an `AssertionError`, so lockstep counts it as an
invariant failure) naming the invariant, with a one-line message and a
details mapping.  A check that cannot run raises `InvariantSkipped`.

Three scopes:

* **state** invariants hold at every instant (or at quiescence, when no
  operation is in flight): I1, I2, I4, I7, I9 (quiescent), I11, I13, I14,
  and, from the execution's context, I17 (lockstep's thread states) and I18
  (the lease blocks the driver has open).
  `check_all` runs them and reports each CHECKED, SKIPPED (a needed
  capability is missing: never counted as passed) or VIOLATED.
* **operation** invariants are postconditions a harness checks around one
  operation: I3 (after add returns), I5 (failed remove), I6 (failed
  eviction), I10 (failed add), I12 (pins survive), I16 (error masking),
  I8 (differential, several stacks).
* **history**: I15, linearizability against `spec.step`
  (`check_linearizable`); I19, the statistics against the ghost's timeline.

`CATALOGUE` maps each id to its title, function, needed capabilities and
scope.  Which bugs break which invariant is declared by the bug modules
(`models_spec._harness.catalogue`: ``load().breaking("I4")``).
"""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, Final

import attrs

from modelmanager.errors import swallowed
from models_spec.adapter import Snapshot
from models_spec.fakes import Ghost, ScriptedUnloadError
from models_spec.spec import explain, step

# The checker's own frames are left out of the tracebacks lockstep and pytest show
# (lockstep._failure.format_exception): a failure is explained in the code's terms.
__tracebackhide__ = True

__all__ = [
    "CATALOGUE",
    "SAFE_POLICIES",
    "STATISTICS_EVENTS",
    "InvariantInfo",
    "InvariantReport",
    "InvariantSkipped",
    "InvariantViolation",
    "check_all",
    "check_i1",
    "check_i2",
    "check_i3",
    "check_i3_returned",
    "check_i4",
    "check_i5",
    "check_i6",
    "check_i7",
    "check_i8",
    "check_i9",
    "check_i10",
    "check_i11",
    "check_i12",
    "check_i13",
    "check_i14",
    "check_i15",
    "check_i16",
    "check_i17",
    "check_i18",
    "check_i19",
    "check_linearizable",
    "documented_overflows",
    "live",
]


class InvariantViolation(AssertionError):
    """An invariant does not hold: `invariant` (e.g. "I4"), `message`, `details`.

    `message` says what went wrong in the terms of the manager's own API: which
    call of which thread returned or raised what, or what the manager held, and
    what a correct manager does there and why. It never shows the harness's own
    values (the spec's encodings, snapshots, fake models' reprs): those are
    `details`, rendered as text by `detail` (what ``--verbose`` prints).
    ``str(violation)`` is ``"<id> violated: <message>"``.
    """

    def __init__(self, invariant: str, message: str, **details: object) -> None:
        self.invariant = invariant
        self.message = message
        self.details: dict[str, object] = details
        super().__init__(f"{invariant} violated: {message}")

    def amend(self, addition: str) -> None:
        """Append `addition` (a sentence of context, e.g. the calls in flight) to the message."""
        self.message = f"{self.message}{addition}"
        self.args = (f"{self.invariant} violated: {self.message}",)

    @property
    def detail(self) -> str:
        """The checker's own data (``key=value`` and multi-line blocks such as I15's
        explanation), for a reader who knows the spec: "" when there is none."""
        blocks = {k: v for k, v in self.details.items() if isinstance(v, str) and "\n" in v}
        lines = [f"{k}={v!r}" for k, v in self.details.items() if k not in blocks]
        for key, block in blocks.items():
            lines.append(f"{key}:")
            lines.append(textwrap.indent(str(block).rstrip(), "  "))
        return "\n".join(lines)


class InvariantSkipped(Exception):
    """A check could not run (missing capability or information); never a pass."""

    def __init__(self, invariant: str, reason: str) -> None:
        super().__init__(f"{invariant} skipped: {reason}")
        self.invariant = invariant
        self.reason = reason


def _need(invariant: str, snapshot: Snapshot, *fields: str) -> None:
    missing = [f for f in fields if getattr(snapshot, f) is None]
    if missing:
        raise InvariantSkipped(invariant, f"snapshot lacks {', '.join(missing)}")


def _fail(invariant: str, message: str, **details: object) -> None:
    raise InvariantViolation(invariant, message, **details)


def _is_torn_down(model: object) -> bool:
    return bool(getattr(model, "torn_down", False))


def _ids(ids: Iterable[str]) -> str:
    """Model ids as a reader writes them: ``'a'``, ``'a' and 'b'``, ``'a', 'b' and 'c'``."""
    quoted = [repr(i) for i in ids]
    if len(quoted) <= 1:
        return quoted[0] if quoted else "none"
    return ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _listing(ids: Iterable[str]) -> str:
    """An ordered listing of ids: ``['a', 'b']`` (a plain list, whatever the container)."""
    return "[" + ", ".join(repr(i) for i in ids) + "]"


def _model(model: object) -> str:
    """A model the scripted registry built, in words: "the model of 'X' from its load #2"."""
    rid = getattr(model, "resolved_id", None)
    attempt = getattr(model, "attempt", None)
    if rid is None:
        return f"a {type(model).__name__}"
    return f"the model of {rid!r} from its load #{attempt}" if attempt else f"a model of {rid!r}"


# -- state invariants ---------------------------------------------------------


def check_i1(snapshot: Snapshot, ghost: Ghost | None = None) -> None:
    """I1 one generation: every lifecycle entry is live (reservations >= 1), held
    entries are reserved, generations are unique.  (A table keyed by id holds
    one entry per id; waiting on a retired generation shows up as I2.)"""
    _need("I1", snapshot, "lifecycle")
    assert snapshot.lifecycle is not None
    generations: Counter[int] = Counter()
    for rid, (generation, reservations, held) in snapshot.lifecycle.items():
        generations[generation] += 1
        if reservations < 1:
            _fail(
                "I1",
                f"the manager's lifecycle table keeps an entry for {rid!r} that nobody "
                f"reserves ({reservations} reservations): an entry must go when its last "
                f"reservation does, or a later add of {rid!r} waits on a load that is over",
                resolved_id=rid,
                generation=generation,
            )
        if held and reservations < 1:
            _fail(
                "I1",
                f"the manager's lifecycle entry for {rid!r} is held by a thread that has no "
                "reservation on it: only a thread that reserved an entry may hold it",
                resolved_id=rid,
            )
    dup = [g for g, n in generations.items() if n > 1]
    if dup:
        _fail(
            "I1",
            f"several lifecycle entries share the generation number(s) {dup}: every load "
            "gets a generation of its own, so a waiter can tell a new load from an old one",
            generations=dup,
        )


def check_i2(snapshot: Snapshot | None, ghost: Ghost) -> None:
    """I2 single flight: never two constructors of one id, and never a constructor
    overlapping `clear_cache` of the same id (from the ghost)."""
    for rid, peak in ghost.max_constructing.items():
        if peak > 1:
            _fail(
                "I2",
                f"{peak} factory calls building {rid!r} ran at the same time: a correct "
                f"manager builds {rid!r} once, however many threads add it at once (the "
                "others wait for that load and share its model)",
                resolved_id=rid,
            )
    if ghost.overlaps:
        event, reason = ghost.overlaps[0]
        _fail(
            "I2",
            f"{_OVERLAPS.get(reason, reason)} for {event.resolved_id!r}: a correct manager "
            f"never builds and unloads one id at the same time (one load or unload of "
            f"{event.resolved_id!r} at a time)",
            resolved_id=event.resolved_id,
            event=event.seq,
            overlaps=len(ghost.overlaps),
        )


_OVERLAPS: Final = {
    "two constructors of one id": "two factory calls ran at the same time",
    "constructor during clear_cache of the same id": (
        "the factory was called while the model's clear_cache (its unload) still ran"
    ),
    "clear_cache during a constructor of the same id": (
        "clear_cache (an unload) ran while the factory was still building a model"
    ),
    "two clear_cache calls of one id at once": "two clear_cache calls ran at the same time",
}
"""The ghost's overlap reasons (`models_spec.fakes.Ghost.overlaps`) in the manager's words."""


def check_i4(snapshot: Snapshot, ghost: Ghost | None = None, *, quiescent: bool = True) -> None:
    """I4 LRU bijection: no duplicates ever; at quiescence the LRU holds exactly
    the registered ids."""
    _need("I4", snapshot, "lru")
    assert snapshot.lru is not None
    dups = sorted(rid for rid, n in Counter(snapshot.lru).items() if n > 1)
    if dups:
        _fail(
            "I4",
            f"the LRU order lists {_ids(dups)} more than once ({_listing(snapshot.lru)}): a "
            "correct manager keeps each loaded id exactly once in its LRU order, or evicting "
            "it leaves a stale entry behind",
            lru=snapshot.lru,
        )
    if quiescent:
        lru, reg = set(snapshot.lru), set(snapshot.registered)
        if lru != reg:
            parts = []
            if lru - reg:
                parts.append(
                    f"{_ids(sorted(lru - reg))} in the LRU order but not loaded (an eviction "
                    "would pick an id that is not there)"
                )
            if reg - lru:
                parts.append(
                    f"{_ids(sorted(reg - lru))} loaded but missing from the LRU order (it "
                    "could never be evicted)"
                )
            _fail(
                "I4",
                f"once every call had returned, the LRU order {_listing(snapshot.lru)} and the "
                f"loaded ids {_listing(sorted(reg))} differ: " + "; ".join(parts) + "; a "
                "correct manager's LRU order holds exactly the loaded ids",
                lru=snapshot.lru,
                registered=sorted(reg),
            )


def check_i7(snapshot: Snapshot, ghost: Ghost | None = None, *, quiescent: bool = True) -> None:
    """I7 the resolved id is the key: every registered model was loaded under its
    key; leases name registered ids; at quiescence LRU ids are registered keys."""
    for rid, model in snapshot.registered.items():
        loaded_as = getattr(model, "resolved_id", rid)
        if loaded_as != rid:
            _fail(
                "I7",
                f"the model loaded for {loaded_as!r} is listed under {rid!r}: a model is kept "
                "under the id it was loaded as (the alias, when add_model was given one)",
                key=rid,
                model=model,
            )
    if snapshot.leases is not None:
        stray = sorted(set(snapshot.leases) - set(snapshot.registered))
        if stray:
            _fail(
                "I7",
                f"leases are held on {_ids(stray)}, which is not loaded: a lease names a "
                "loaded model, and the model stays loaded while it is leased",
                leases=snapshot.leases,
            )
    if quiescent and snapshot.lru is not None:
        stray = sorted(set(snapshot.lru) - set(snapshot.registered))
        if stray:
            _fail(
                "I7",
                f"once every call had returned, the LRU order names {_ids(stray)}, which is "
                "not loaded: the LRU order holds exactly the loaded ids",
                lru=snapshot.lru,
            )


def check_i9(snapshot: Snapshot, ghost: Ghost, *, quiescent: bool = True) -> None:
    """I9 no leaks (at quiescence): the lifecycle table is empty; every constructed
    model is registered (and intact) or was torn down exactly once."""
    if not quiescent:
        raise InvariantSkipped("I9", "only meaningful at quiescence")
    _need("I9", snapshot, "lifecycle")
    assert snapshot.lifecycle is not None
    if snapshot.lifecycle:
        _fail(
            "I9",
            f"once every call had returned, the manager's lifecycle table still holds "
            f"{_ids(sorted(snapshot.lifecycle))}: an entry must go when the last call using it "
            "ends, or the table grows with every id ever loaded (a leak)",
            lifecycle=snapshot.lifecycle,
        )
    registered = {id(m) for m in snapshot.registered.values()}
    for model in list(ghost.models):
        teardowns = getattr(model, "teardowns", 0)
        if id(model) in registered:
            if teardowns or _is_torn_down(model):
                _fail(
                    "I9",
                    f"{_model(model)} is still loaded, but its clear_cache already ran: a "
                    "correct manager unloads a model only when it lets go of it",
                    model=model,
                )
        elif teardowns != 1:
            _fail(
                "I9",
                f"once every call had returned, {_model(model)} was not loaded and its "
                f"clear_cache had run {teardowns} time(s): every model the factory built that "
                "the manager does not keep must be unloaded exactly once (0 times: it leaked; "
                "more: it was unloaded twice)",
                model=model,
            )


def check_i11(
    snapshot: Snapshot,
    ghost: Ghost | None = None,
    *,
    added: str | None = None,
    slack: int = 0,
    quiescent: bool = False,
    weight_slack: int | None = None,
    on_full: str = "proceed",
) -> None:
    """I11 capacity, in models (`max_size`) and in weight (`max_weight`).

    State form: registered + in-flight loads <= max_size + (registered ids
    pinned or leased) + `slack`.  An admission over capacity (only pinned or
    leased models left) stays until its operation, the lease or the pin that
    caused it ends; in the middle of a run pass the models still over
    capacity as `slack` (a sequential driver knows it from the spec).
    Under `on_full` "wait" or "refuse" the bound is a safety property: no
    add is admitted over it because models are pinned or leased, so the
    state form is registered + in-flight loads <= max_size + `slack`, where
    `slack` may count only the two documented admissions over it (an add
    whose thread holds a lease through the cache, under "wait"; a model
    heavier than `max_weight` alone): see `documented_overflows`.
    Quiescent form (`quiescent` and no lease open, no load in flight): the
    bound has come back, so registered <= max_size + `slack` while fewer than
    max_size models are pinned; with pins filling the bound, the last add
    admitted over them may stay too (pinned + 1).  `slack`: what a failed
    unload during restoration left over.
    Postcondition form (`added` = the id a cold add just loaded): the stack
    is within max_size unless every other registered model is pinned or
    leased.

    Weight (when the snapshot carries `weights` and `max_weight`): a model's
    weight is known only once it is loaded, so a load may take the cache
    over `max_weight`, which the cache then restores, evicting everything
    evictable but that model if need be.  Postcondition form: over
    `max_weight` after adding `added`, at most `slack` other models (those a
    failed unload kept) are neither pinned nor leased.  Quiescent form: over
    `max_weight`, at most one unpinned model (the last one loaded) plus
    `slack` is registered.  There is no weight state form: what an
    in-flight load will weigh is not observable.  `weight_slack` (default:
    `slack`) replaces `slack` for the weight forms: a failed restoration keeps
    its remaining victims, however many the weight needed.
    """
    if snapshot.max_size is None and (snapshot.max_weight is None or snapshot.weights is None):
        _need("I11", snapshot, "max_size")
    if snapshot.max_weight is not None and snapshot.weights is not None:
        extra = slack if weight_slack is None else weight_slack
        _check_weight(snapshot, snapshot.max_weight, snapshot.weights, added, extra, quiescent)
    if snapshot.max_size is not None:
        safety = on_full in SAFE_POLICIES
        _check_count(snapshot, snapshot.max_size, added, slack, quiescent, safety=safety)


SAFE_POLICIES: Final = ("wait", "refuse")
"""The ``on_full`` policies under which the count bound is a safety property (I11)."""


def documented_overflows(on_full: str, counted: int, lease_held_adds: int, oversized: int) -> int:
    """The admissions over the bound I11 forgives mid-run (its state form's slack).

    `counted`: what the stack counted (``pinned_overflow``). Under "proceed"
    all of them; under "wait" and "refuse" only the two documented cases, at
    most: adds made while the adding thread held a lease through the cache
    (`lease_held_adds`, "wait" only: it proceeds rather than wait for
    itself) and adds of a model heavier than the weight bound alone
    (`oversized`, any policy). Anything else over the bound is a violation.
    """
    if on_full not in SAFE_POLICIES:
        return counted
    documented = oversized + (lease_held_adds if on_full == "wait" else 0)
    return min(counted, documented)


def _check_count(
    snapshot: Snapshot,
    max_size: int,
    added: str | None,
    slack: int,
    quiescent: bool,
    *,
    safety: bool = False,
) -> None:
    leases, pins = snapshot.leases or {}, snapshot.pins or frozenset()
    protected = {rid for rid in snapshot.registered if rid in pins or rid in leases}
    if safety:
        protected = set()  # pins and leases never justify going over (SAFE_POLICIES)
    in_flight = snapshot.in_flight_loads or 0
    total = len(snapshot.registered) + in_flight
    if added is not None:
        others = set(snapshot.registered) - {added} - protected
        over = len(snapshot.registered) > max_size + (slack if safety else 0)
        if over and (others or safety):
            why = (
                "under a full-cache policy that waits or refuses instead"
                if safety
                else f"although {_ids(sorted(others))} could have been evicted"
            )
            _fail(
                "I11",
                f"add_model({added!r}) returned with {len(snapshot.registered)} models loaded "
                f"(max_size {max_size}) {why}: a correct manager evicts the least recently "
                "used unpinned, unleased models to stay within max_size",
                registered=sorted(snapshot.registered),
            )
        return
    if quiescent and not leases and not in_flight:
        pinned = len({rid for rid in snapshot.registered if rid in pins})
        bound = (max_size if pinned < max_size else pinned + 1) + slack
        if total > bound:
            _fail(
                "I11",
                f"once every call had returned, {len(snapshot.registered)} models were loaded "
                f"({_listing(sorted(snapshot.registered))}; max_size {max_size}, {pinned} "
                "pinned, no lease held): a cache may go over max_size only while pins or "
                "leases force it to, and must come back within it when they end",
                registered=sorted(snapshot.registered),
            )
        return
    bound = max_size + len(protected) + slack
    if total > bound:
        allowed = f"max_size {max_size}"
        if protected:
            allowed += f" + {len(protected)} pinned or leased"
        if slack:
            allowed += f" + {slack} admitted over it by design"
        _fail(
            "I11",
            f"{len(snapshot.registered)} models loaded ({_listing(sorted(snapshot.registered))}) "
            f"and {in_flight} load(s) in flight at once, more than {allowed}: a correct "
            "manager makes room (evicts) before it starts a load, so loaded models and loads "
            "in flight together never exceed the bound",
            registered=sorted(snapshot.registered),
            in_flight=in_flight,
        )


def _check_weight(  # noqa: PLR0917 - internal helper of check_i11
    snapshot: Snapshot,
    max_weight: int,
    weights: Mapping[str, int],
    added: str | None,
    slack: int,
    quiescent: bool,
) -> None:
    total = sum(weights.get(rid, 0) for rid in snapshot.registered)
    if total <= max_weight:
        return
    leases, pins = snapshot.leases or {}, snapshot.pins or frozenset()
    carried = {rid: weights.get(rid, 0) for rid in sorted(snapshot.registered)}
    if added is not None:
        others = set(snapshot.registered) - {added} - set(pins) - set(leases)
        if len(others) > slack:
            _fail(
                "I11",
                f"add_model({added!r}) returned with models weighing {total} loaded "
                f"(max_weight {max_weight}) although {_ids(sorted(others))} could have been "
                "evicted: a correct manager evicts until the weight is within max_weight",
                weights=carried,
            )
        return
    if quiescent and not leases and not snapshot.in_flight_loads:
        unpinned = set(snapshot.registered) - set(pins)
        if len(unpinned) > 1 + slack:
            _fail(
                "I11",
                f"once every call had returned, models weighing {total} were loaded "
                f"(max_weight {max_weight}, no lease held) with {_ids(sorted(unpinned))} "
                "unpinned: the cache must come back within max_weight, keeping at most the "
                "last model loaded over it",
                weights=carried,
            )


def check_i13(snapshot: Snapshot | None, ghost: Ghost) -> None:
    """I13 leases: `clear_cache` never ran on a model in use, and no model being
    torn down right now holds a lease."""
    if ghost.cleared_in_use:
        event = ghost.cleared_in_use[0]
        _fail(
            "I13",
            f"clear_cache (the unload) of {event.resolved_id!r} ran while a thread was still "
            "running inference on that model under a lease: a correct manager unloads a "
            "leased model only after its last lease is given back",
            resolved_id=event.resolved_id,
            event=event.seq,
            model=event.token,
        )
    if snapshot is not None and snapshot.leases is not None:
        for rid in list(ghost.clearing):
            if snapshot.leases.get(rid, 0):
                _fail(
                    "I13",
                    f"clear_cache (the unload) of {rid!r} runs while {snapshot.leases[rid]} "
                    f"lease(s) on {rid!r} are held: a correct manager waits for the leases to "
                    "be given back before it unloads (or gives up with a timeout)",
                    resolved_id=rid,
                )


def check_i14(snapshot: Snapshot | None, ghost: Ghost) -> None:
    """I14 progress (the part checkable here): the LRU lock is never held while a
    constructor or `clear_cache` starts.  Deadlocks and unbounded waits are
    lockstep's to find.  Skipped when nothing can tell whether the lock is held."""
    if ghost.lock_probe is None:
        raise InvariantSkipped("I14", "no lock probe: the LRU lock holder is not observable")
    if ghost.lock_held_in_callback:
        event = ghost.lock_held_in_callback[0]
        what = _CALLBACKS.get(event.kind, event.kind)
        _fail(
            "I14",
            f"the manager held its LRU lock while {what} of {event.resolved_id!r} started: a "
            "load or unload can take long (or wait for other threads), so a correct manager "
            "calls them without its LRU lock, or every other call waits behind them",
            resolved_id=event.resolved_id,
            event=event.seq,
            kind=event.kind,
        )


_CALLBACKS: Final = {
    "construct_start": "the factory call (the load)",
    "clear_start": "clear_cache (the unload)",
}
"""The ghost's event kinds I14 reports, in the manager's words."""


# -- operation invariants ------------------------------------------------------


def check_i3(snapshot: Snapshot, ghost: Ghost | None = None, *, resolved_id: str) -> None:
    """I3 add postcondition (right after `add_model` returned normally): the
    resolved id is registered with a live model, not torn down nor being torn down."""
    model = snapshot.registered.get(resolved_id)
    if model is None:
        _fail(
            "I3",
            f"add_model({resolved_id!r}) returned normally, but {resolved_id!r} was not loaded "
            f"afterwards (keys(): {_listing(sorted(snapshot.registered))}): after add_model "
            "returns, the id must be loaded, or the call must raise",
            registered=sorted(snapshot.registered),
        )
    if _is_torn_down(model):
        _fail(
            "I3",
            f"add_model({resolved_id!r}) returned normally, but the model loaded under "
            f"{resolved_id!r} had already been unloaded (its clear_cache ran): after add_model "
            "returns, the id must have a live model",
            model=model,
        )
    if ghost is not None and ghost.clearing.get(resolved_id, 0):
        _fail(
            "I3",
            f"add_model({resolved_id!r}) returned normally while the model of {resolved_id!r} "
            "was being unloaded (its clear_cache still ran): after add_model returns, the id "
            "must have a live model",
            model=model,
        )


def live(ghost: Ghost, resolved_id: str) -> bool:
    """Some model of `resolved_id` is constructed, not torn down, and no `clear_cache`
    of it runs (what "X has a live model" means to I3)."""
    if ghost.clearing.get(resolved_id, 0):
        return False
    return any(m.resolved_id == resolved_id and not m.torn_down for m in list(ghost.models))


def check_i3_returned(ghost: Ghost, *, resolved_id: str, live_at_call: bool, since: int) -> None:
    """I3 under concurrency: `add_model(X)` (or an `acquire` of X) returned normally.

    At some instant during the call X must have had a live model that was
    not being torn down (`live`): at the call (`live_at_call`, taken by the
    driver just before calling), at the return (checked now), or made live
    by an event in between (a construction of X finishing, a `clear_cache`
    of X failing: the ghost's timeline from `since` = ``ghost.mark()`` at the
    call).  "Registered and live at return" (`check_i3`) would be wrong under
    concurrency: the add's last lock release is a switch point, after which
    another thread may legitimately start removing X.  Catches B4: a hit
    answered from an unlocked fast path while X's `clear_cache` runs from
    before the call to after the return.
    """
    if live_at_call or live(ghost, resolved_id):
        return
    with ghost._lock:
        events = ghost.events[since:]
    if any(
        e.resolved_id == resolved_id and e.kind in ("construct_end", "clear_fail") for e in events
    ):
        return
    _fail(
        "I3",
        f"add_model({resolved_id!r}) returned normally, but at no instant between its call "
        f"and its return was {resolved_id!r} loaded with a model that was not being unloaded "
        "(its clear_cache ran the whole time): a correct manager's add_model returns only "
        "once the id has a live model, loading it again if it is being removed",
        resolved_id=resolved_id,
        clearing=dict(ghost.clearing),
    )


def _restored_for_weight(before: Snapshot, restored: set[str]) -> bool:
    """Whether `restored` is what restoring `before`'s weight bound may evict: all
    but the most recent of them weigh less than the excess (no more than needed)."""
    weights, max_weight = before.weights, before.max_weight
    if weights is None or max_weight is None or before.lru is None:
        return False
    excess = sum(weights.get(rid, 0) for rid in before.registered) - max_weight
    order = [rid for rid in before.lru if rid in restored]
    return excess > 0 and sum(weights.get(rid, 0) for rid in order[:-1]) < excess


def check_i5(before: Snapshot, after: Snapshot, *, resolved_id: str) -> None:
    """I5 failed remove is a no-op: same registry (same model objects) and the
    exact LRU order and pins.

    One allowance: a remove ends by restoring the cache's bound, so when the
    cache was over ``max_size`` before, up to that excess of *other* models,
    neither pinned nor leased, may have been evicted by it; the LRU is then the
    old order without them. Over ``max_weight``, the least recent of them may
    go until their weight covers the excess (all but the last one evicted
    weigh less than it). The target itself never goes.
    """
    gone = set(before.registered) - set(after.registered)
    restored = gone - {resolved_id}
    excess = len(before.registered) - before.max_size if before.max_size is not None else 0
    protected = set(before.pins or ()) | set(before.leases or {})
    if (
        resolved_id in gone
        or (len(restored) > max(excess, 0) and not _restored_for_weight(before, restored))
        or restored & protected
        or {k: id(v) for k, v in before.registered.items() if k not in restored}
        != {k: id(v) for k, v in after.registered.items()}
    ):
        _fail(
            "I5",
            f"remove({resolved_id!r}) raised (its clear_cache failed), but the loaded models "
            f"changed: {_listing(sorted(before.registered))} before the call, "
            f"{_listing(sorted(after.registered))} after it: a remove that raises must leave "
            f"the manager as it was, {resolved_id!r} still loaded with the same model",
            before=sorted(before.registered),
            after=sorted(after.registered),
        )
    if (before.lru is None) != (after.lru is None) or (
        before.lru is not None
        and after.lru is not None
        and [rid for rid in before.lru if rid not in restored] != list(after.lru)
    ):
        _fail(
            "I5",
            f"remove({resolved_id!r}) raised (its clear_cache failed), but the LRU order "
            f"changed: {_listing(before.lru or ())} before the call, {_listing(after.lru or ())} "
            f"after it: a remove that raises must leave the manager as it was, {resolved_id!r} "
            "in the same LRU position",
            before=before.lru,
            after=after.lru,
        )
    if before.pins != after.pins:
        _fail(
            "I5",
            f"remove({resolved_id!r}) raised (its clear_cache failed), but the pinned ids "
            f"changed: {_listing(sorted(before.pins or ()))} before the call, "
            f"{_listing(sorted(after.pins or ()))} after it: a remove that raises must leave "
            "the manager as it was",
            before=before.pins,
            after=after.pins,
        )


def check_i6(
    before: Snapshot,
    after: Snapshot,
    *,
    evicted: Collection[str],
    failed_candidate: str,
) -> None:
    """I6 failed eviction preserves: the failed candidate and pinned entries stay
    registered; earlier victims stay evicted; the LRU is the old order minus
    the victims (positions kept)."""
    _need("I6", after, "lru")
    if failed_candidate not in after.registered:
        _fail(
            "I6",
            f"an add raised because evicting {failed_candidate!r} failed (its clear_cache "
            f"raised), yet {failed_candidate!r} is no longer loaded: a model whose unload "
            "failed stays loaded",
            registered=sorted(after.registered),
        )
    for rid in before.pins or ():
        if rid in before.registered and rid not in after.registered:
            _fail(
                "I6",
                f"an add raised because an eviction failed, and the pinned {rid!r} is no "
                "longer loaded: a pinned model is never evicted",
            )
    back = sorted(set(evicted) & set(after.registered))
    if back:
        _fail(
            "I6",
            f"an add raised because an eviction failed, and {_ids(back)}, evicted before "
            "the failure, is loaded again: models already unloaded stay evicted",
        )
    if before.lru is not None:
        expected = tuple(x for x in before.lru if x not in set(evicted))
        if after.lru != expected:
            _fail(
                "I6",
                f"an add raised because evicting {failed_candidate!r} failed, and the LRU "
                f"order became {_listing(after.lru or ())}; a correct manager leaves "
                f"{_listing(expected)} (the order before the call without the models it did "
                "evict): the others keep their positions",
                expected=expected,
                actual=after.lru,
            )


def check_i8(snapshots: Mapping[str, Snapshot] | Sequence[Snapshot]) -> None:
    """I8 composition: stacks that differ only in pass-through layers expose the
    same keys, LRU order, pins and leases."""
    items = (
        list(snapshots.items()) if isinstance(snapshots, Mapping) else list(enumerate(snapshots))
    )
    if len(items) < 2:
        return
    ref_name, ref = items[0]
    for name, snap in items[1:]:
        if snap.observable() != ref.observable():
            _fail(
                "I8",
                f"the stack {name!r} holds other models, LRU order, pins or leases than "
                f"{ref_name!r} after the same calls: layers that only pass calls through "
                "must not change what the manager holds",
                reference=ref.observable(),
                other=snap.observable(),
            )


def check_i8_outcomes(outcomes: Mapping[str, object]) -> None:
    """I8 on results: every stack returned (or raised) the same encoded outcome."""
    distinct = set(map(repr, outcomes.values()))
    if len(distinct) > 1:
        _fail(
            "I8",
            "stacks that differ only in pass-through layers answered the same call "
            "differently: such layers must not change what a call returns or raises",
            outcomes=dict(outcomes),
        )


def check_i10(
    before: Snapshot, after: Snapshot, ghost: Ghost | None = None, *, resolved_id: str
) -> None:
    """I10 failures leave no residue: after a failed or timed-out add of an id
    that was not loaded, it has no registration, LRU entry, lease, lifecycle
    entry (at quiescence) or live model."""
    if resolved_id in before.registered:
        return
    failed = f"add_model({resolved_id!r}) raised"
    must = f"an add that raises must leave no trace of {resolved_id!r}"
    if resolved_id in after.registered:
        _fail("I10", f"{failed}, but {resolved_id!r} is loaded afterwards: {must}")
    if after.lru is not None and resolved_id in after.lru:
        _fail(
            "I10",
            f"{failed}, but {resolved_id!r} is in the LRU order afterwards "
            f"({_listing(after.lru)}): {must}",
            lru=after.lru,
        )
    if after.leases is not None and after.leases.get(resolved_id):
        _fail("I10", f"{failed}, but a lease on {resolved_id!r} is held afterwards: {must}")
    if after.lifecycle is not None and resolved_id in after.lifecycle:
        _fail(
            "I10",
            f"{failed}, but the manager's lifecycle table keeps an entry for {resolved_id!r} "
            f"afterwards: {must}",
            entry=after.lifecycle[resolved_id],
        )
    if ghost is not None:
        live = [
            m
            for m in ghost.models
            if getattr(m, "resolved_id", None) == resolved_id and not _is_torn_down(m)
        ]
        if live:
            _fail(
                "I10",
                f"{failed}, but {_model(live[0])} was built, is not loaded and was never "
                f"unloaded (its clear_cache never ran): {must}, so a model it built and does "
                "not keep must be unloaded",
                model=live[0],
            )


def check_i12(before: Snapshot, after: Snapshot, *, removed: Iterable[str] = ()) -> None:
    """I12 pins: an id pinned and registered before an operation is still
    registered after it, unless the operation explicitly removed it or unpinned
    it (an unpin ends by restoring the bound, which may evict it)."""
    _need("I12", before, "pins")
    assert before.pins is not None
    explicit = set(removed)
    still = before.pins if after.pins is None else before.pins & after.pins
    lost = sorted(
        rid
        for rid in still
        if rid in before.registered and rid not in after.registered and rid not in explicit
    )
    if lost:
        _fail(
            "I12",
            f"the pinned {_ids(lost)} was evicted: a pinned model stays loaded until it is "
            "removed or unpinned",
            lost=lost,
        )


def check_i16(
    raised: BaseException | None,
    ghost: Ghost,
    *,
    since: int,
    thread: int | None = None,
    target: str | None = None,
    until: int | None = None,
    restored: bool = False,
    restoration_failed: bool = False,
) -> None:
    """I16 errors are never masked.

    `since` = `ghost.mark()` taken when the operation started (`until`: when
    it ended, None = now); `thread` the operation's thread ident (None: any).
    If scripted failures happened in the operation, the first must be the one
    raised (or, for a group, every one is in it).  If none happened and
    `target`'s model was torn down successfully by this operation, raising at
    all is a false failure.  `restored`: the operation ended by bringing the
    cache back within its bound (issue 14), which swallows a failed unload by
    design (counted in ``restoration_failures``, the model stays): unload
    failures of an operation that raised nothing are then allowed.
    `restoration_failed`: the caller knows exactly that this operation's own
    restoration had a failed unload (a sequential driver reads the counter):
    unload failures of models other than `target` (a restoration never evicts
    the model its operation removes) are then allowed whatever the operation
    raised for its own part (e.g. a remove of a leased model that timed out).
    With `restored`, a failure the stack marked as swallowed by its
    restoration (`modelmanager.errors.swallowed`) is allowed whatever the
    operation raised: the restoration runs after the operation's own work,
    so its failure comes after the error the operation raises (e.g. an add
    that timed out, whose restoration then met a failing unload).
    """
    failures = ghost.failures_since(since, thread, until)
    if restored:
        failures = [f for f in failures if not swallowed(f)]
    if restoration_failed:
        failures = [
            f for f in failures if not isinstance(f, ScriptedUnloadError) or f.resolved_id == target
        ]
    if restored and raised is None:
        failures = [f for f in failures if not isinstance(f, ScriptedUnloadError)]
    if failures:
        if raised is None:
            _fail(
                "I16",
                # No remedy about a cache's restoration of its bound here: with
                # `restored` the unload failures it may count are filtered out above,
                # so what is left is never one a restoration may swallow.
                f"the call returned normally although {_failure(failures[0])} during it: a "
                "correct manager lets that error propagate from the call, never hides it",
                first=failures[0],
            )
        leaves = _leaves(raised)
        if isinstance(raised, BaseExceptionGroup):
            missing = [f for f in failures if not any(f is leaf for leaf in leaves)]
            if missing:
                _fail(
                    "I16",
                    f"the call raised an ExceptionGroup without the error raised when "
                    f"{_failure(missing[0]).partition(' raised ')[0]} failed: the group must "
                    "hold every failure of the call",
                    raised=raised,
                    missing=missing,
                )
        elif raised is not failures[0]:
            _fail(
                "I16",
                f"the call raised {type(raised).__name__}, but {_failure(failures[0])} first: "
                "a correct manager raises that first failure itself (the one the model "
                "raised), not another error in its place",
                raised=raised,
                first=failures[0],
            )
        return
    if raised is not None and target is not None:
        with ghost._lock:
            torn = any(
                e.kind == "clear_end"
                and e.resolved_id == target
                and (thread is None or e.thread == thread)
                for e in ghost.events[since:until]
            )
        if torn and not isinstance(raised, BaseExceptionGroup):
            _fail(
                "I16",
                f"the call unloaded {target!r} (its clear_cache returned), yet it raised "
                f"{type(raised).__name__}: a remove whose unload succeeded must return "
                "normally, or the caller thinks the model is still loaded",
                raised=raised,
            )


def _failure(error: BaseException) -> str:
    """A scripted failure in words: "clear_cache of 'X' raised ScriptedUnloadError"."""
    rid = getattr(error, "resolved_id", None)
    name = type(error).__name__
    if isinstance(error, ScriptedUnloadError):
        return f"clear_cache of {rid!r} raised {name}"
    if rid is not None:
        return f"the factory call for {rid!r} raised {name}"
    return f"{name} was raised"


def _leaves(error: BaseException | None) -> list[BaseException]:
    if error is None:
        return []
    if isinstance(error, BaseExceptionGroup):
        return [leaf for sub in error.exceptions for leaf in _leaves(sub)]
    return [error]


# -- liveness, lease scope, statistics ------------------------------------------


def check_i17(states: Sequence[Any] | None) -> None:
    """I17 liveness under the virtual clock: no wait needs its timeout.

    `states` is ``lockstep.lowlevel.thread_states()`` at a stopped state (None
    outside a lockstep run: skipped).  In lockstep a timeout is a scheduling
    choice, offered only while a thread is blocked; so a wait that can only
    end by timing out although it had no reason to last is a failure:

    * a lost wake-up: a thread blocked in ``Condition.wait_for`` although the
      condition it waits for holds, the lock is free and no notified waiter is
      on its way (a ``notify()`` that woke another waiter, a missing notify).
      With ``notify_all`` under the lock the waiter is runnable as soon as its
      condition holds, so for correct code this never happens;
    * a deadlock masked by timeouts: every live thread waits and some wait is
      bounded, so only a timeout can let anything run (lockstep reports the
      unbounded case itself as a deadlock). A wait whose time is already up (a
      zero timeout: ``ThreadPoolExecutor.submit`` tries its idle semaphore with
      ``acquire(timeout=0)``) is a try, not a wait: its timeout is the next step.
      When only daemon threads are left (the main thread's code is done), the
      program is ending: the interpreter does not wait for them (a TTL
      ``Timer`` counting down is not a deadlock).
    """
    if states is None:
        raise InvariantSkipped("I17", "not inside a lockstep run")
    moving = bounded = False  # some thread runnable or due; some wait bounded
    for state in states:
        if state.runnable or state.due:
            moving = True
        elif state.bounded:
            bounded = True
        if state.lost_wakeup:
            end = "time out" if state.bounded else "never end"
            _fail(
                "I17",
                f"lost wake-up: thread {state.name} waits ({state.waiting_for}) although the "
                f"condition it waits for already holds and no notify reached it, so its wait "
                f"can only {end}: a correct manager notifies every waiter whose condition "
                "may now hold (notify_all under the lock)",
                thread=state.name,
            )
    if not moving and bounded and not all(s.daemon for s in states):
        table = "; ".join(f"{s.name}: {s.waiting_for or 'runnable'}" for s in states)
        _fail(
            "I17",
            f"every live thread waits ({table}), so only a timeout can end a wait: a deadlock "
            "masked by timeouts; in a correct manager some thread can always go on without "
            "waiting for a timeout",
        )


def check_i18(snapshot: Snapshot, open_leases: Mapping[str, int]) -> None:
    """I18 no lease outlives its context: the stack never holds more leases on an id
    than there are ``lease``/``acquire`` blocks on it between their entry and their exit
    (`open_leases`, counted by the driver), whatever the block's body raised, so the
    model is removable right after the last block on it exits."""
    _need("I18", snapshot, "leases")
    assert snapshot.leases is not None
    for rid, held in snapshot.leases.items():
        if held > open_leases.get(rid, 0):
            _fail(
                "I18",
                f"the manager holds {held} lease(s) on {rid!r} but only "
                f"{open_leases.get(rid, 0)} `with lease(...)`/`with acquire(...)` block(s) on "
                f"it are open: a lease must be given back when its block exits, whatever the "
                "block raised (give it back in a finally), or the model can never be removed",
                resolved_id=rid,
            )


STATISTICS_EVENTS: Final[Mapping[str, str]] = {
    "loads": "construct_end",
    "load_failures": "construct_fail",
    "removals": "clear_end",
    "removal_failures": "clear_fail",
}
"""Each counter I19 checks -> the ghost event it counts."""


def check_i19(statistics: Mapping[str, int], ghost: Ghost, *, timeouts: int = 0) -> None:
    """I19 statistics count what happened: at quiescence each counter of
    `STATISTICS_EVENTS` equals the number of those events in the ghost's timeline
    (constructors that returned / raised, ``clear_cache`` calls that returned /
    raised), and ``lock_timeouts`` is at least `timeouts`, the operations that raised
    a timeout.  A counter updated without its lock loses increments (B21)."""
    with ghost._lock:
        kinds = Counter(event.kind for event in ghost.events)
    for counter, kind in STATISTICS_EVENTS.items():
        if counter not in statistics:
            raise InvariantSkipped("I19", f"the statistics have no {counter!r}")
        if statistics[counter] != kinds[kind]:
            _fail(
                "I19",
                f"statistics() says {counter}={statistics[counter]} but "
                f"{_EVENT_WORDS[counter].format(n=kinds[kind])}: each counter counts what "
                "happened (an increment was lost, or invented: update it under a lock)",
                counter=counter,
                event=kind,
            )
    recorded = statistics.get("lock_timeouts")
    if recorded is not None and recorded < timeouts:
        _fail(
            "I19",
            f"statistics() says lock_timeouts={recorded} but {timeouts} call(s) raised a "
            "timeout: each timeout is counted",
        )


_EVENT_WORDS: Final[Mapping[str, str]] = {
    "loads": "the factory returned a model {n} time(s)",
    "load_failures": "the factory raised {n} time(s)",
    "removals": "clear_cache returned {n} time(s)",
    "removal_failures": "clear_cache raised {n} time(s)",
}
"""What each counter of `STATISTICS_EVENTS` counts, in the manager's words."""


# -- history invariant ----------------------------------------------------------


def check_linearizable(history: Any, *, initial: Any, max_steps: int | None = 1_000_000) -> Any:
    """I15: check a recorded history (`lockstep.linearizability` Operations or a
    HistoryRecorder, inputs/outputs in `spec.py`'s encoding) against `spec.step`
    from the `initial` SpecState.  Raises `InvariantViolation` when illegal;
    returns the checker's result (verdict "ok" or "unknown")."""
    from lockstep.linearizability import check_linearizability  # noqa: PLC0415

    result = check_linearizability(
        history, step, initial=initial, max_steps=max_steps, explain=explain
    )
    if result.verdict == "illegal":
        _fail("I15", "history is not linearizable under models_spec.spec", explanation=str(result))
    return result


check_i15 = check_linearizable


# -- catalogue and runner -------------------------------------------------------


@attrs.frozen
class InvariantInfo:
    """One catalogue entry."""

    id: str
    title: str
    function: Callable[..., None]
    needs: frozenset[str]
    scope: str  # "state", "operation" or "history"


def _info(
    id_: str, title: str, fn: Callable[..., Any], needs: Iterable[str], scope: str
) -> tuple[str, InvariantInfo]:
    return id_, InvariantInfo(id_, title, fn, frozenset(needs), scope)


CATALOGUE: Final[Mapping[str, InvariantInfo]] = dict(
    [
        _info("I1", "one generation", check_i1, ["lifecycle"], "state"),
        _info("I2", "single flight", check_i2, [], "state"),
        _info("I3", "add postcondition", check_i3, [], "operation"),
        _info("I4", "LRU bijection", check_i4, ["lru"], "state"),
        _info("I5", "failed remove is a no-op", check_i5, ["lru"], "operation"),
        _info("I6", "failed eviction preserves", check_i6, ["lru", "pins"], "operation"),
        _info("I7", "the resolved id is the key", check_i7, [], "state"),
        _info("I8", "composition", check_i8, [], "operation"),
        _info("I9", "no leaks", check_i9, ["lifecycle"], "state"),
        _info("I10", "failures leave no residue", check_i10, [], "operation"),
        _info("I11", "capacity", check_i11, ["capacity"], "state"),
        _info("I12", "pins", check_i12, ["pins"], "operation"),
        _info("I13", "leases", check_i13, ["leases"], "state"),
        _info("I14", "progress", check_i14, [], "state"),
        _info("I15", "linearizability", check_linearizable, [], "history"),
        _info("I16", "errors are never masked", check_i16, [], "operation"),
        _info("I17", "liveness under the virtual clock", check_i17, [], "state"),
        _info("I18", "no lease outlives its context", check_i18, ["leases"], "state"),
        _info("I19", "statistics count what happened", check_i19, ["statistics"], "history"),
    ]
)


@attrs.frozen
class InvariantReport:
    """What `check_all` found: ids checked (and held), skipped (with reasons), violated."""

    checked: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...]
    violated: tuple[InvariantViolation, ...]

    @property
    def ok(self) -> bool:
        """No violation (skips are not passes, but not failures either)."""
        return not self.violated

    def raise_first(self) -> None:
        """Raise the first violation, if any."""
        if self.violated:
            raise self.violated[0]

    def __str__(self) -> str:
        lines = [f"checked: {', '.join(self.checked) or '-'}"]
        lines += [f"SKIPPED {i}: {why}" for i, why in self.skipped]
        lines += [f"VIOLATED {v}" for v in self.violated]
        return "\n".join(lines)


def _state_runners(
    slack: int, weight_slack: int | None = None
) -> dict[str, Callable[[Snapshot, Ghost, bool], None]]:
    return {
        "I1": lambda s, g, q: check_i1(s, g),
        "I2": lambda s, g, q: check_i2(s, g),
        "I4": lambda s, g, q: check_i4(s, g, quiescent=q),
        "I7": lambda s, g, q: check_i7(s, g, quiescent=q),
        "I9": lambda s, g, q: check_i9(s, g, quiescent=q),
        "I11": lambda s, g, q: check_i11(s, g, slack=slack, quiescent=q, weight_slack=weight_slack),
        "I13": lambda s, g, q: check_i13(s, g),
        "I14": lambda s, g, q: check_i14(s, g),
    }


def check_all(
    snapshot: Snapshot,
    ghost: Ghost,
    *,
    quiescent: bool,
    capabilities: Collection[str],
    capacity_slack: int = 0,
    weight_slack: int | None = None,
) -> InvariantReport:
    """Run every state invariant; operation and history invariants are listed as
    skipped ("needs operation context").  Never raises a violation: inspect
    or `raise_first()` the report.  `capacity_slack` and `weight_slack` are
    passed to I11 (see `check_i11`: models a failed restoration kept)."""
    caps = frozenset(capabilities)
    runners = _state_runners(capacity_slack, weight_slack)
    checked: list[str] = []
    skipped: list[tuple[str, str]] = []
    violated: list[InvariantViolation] = []
    for inv_id, info in CATALOGUE.items():
        runner = runners.get(inv_id)
        if runner is None:
            skipped.append(
                (inv_id, f"{info.scope} invariant: call {info.function.__name__} with its context")
            )
            continue
        missing = sorted(info.needs - caps)
        if missing:
            skipped.append((inv_id, f"capability missing: {', '.join(missing)}"))
            continue
        try:
            runner(snapshot, ghost, quiescent)
        except InvariantSkipped as skip:
            skipped.append((inv_id, skip.reason))
        except InvariantViolation as violation:
            violated.append(violation)
        else:
            checked.append(inv_id)
    return InvariantReport(tuple(checked), tuple(skipped), tuple(violated))

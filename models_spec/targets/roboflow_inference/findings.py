"""What each failure of the real code is: its bug in ``docs/bugs.md`` and why.

The explorations find failures by invariant; which reported bug a failure
is needs a reading of its shrunk swimlanes.  `FINDINGS` records that
reading, keyed by (implementation, scenario, invariant), for the failures
found on the verified version; `classify` looks one up.  The recorder
reports any failure it finds that is not listed here as UNCLASSIFIED (and
exits 1) instead of guessing: a new finding needs a person to read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import attrs

__all__ = ["FINDINGS", "SKIP_REASONS", "Finding", "classify"]


@attrs.frozen
class Finding:
    """The bug a failure is (a B-number, or a chosen-semantics item) and what happened."""

    bug: str
    what: str


_STACK = "inference-stack"
_MANAGER = "inference-manager"
_NEVER_DISPOSE = "inference-manager-never-dispose"

_DUPLICATE = Finding(
    "B7",
    "two cold adds of X both pass the cache's unlocked `if queue_id in self` check and both "
    "append X to the LRU deque before either loads it (this masks the scenario's own bug, "
    "which would come later in the same interleaving)",
)
_REMOVE_TIMEOUT_AFTER_DELETE = Finding(
    "B16",
    "remove(X) tears X down and deletes it, then waits for `_state_lock` to dispose X's lock "
    "entry; that wait times out, so a successful remove raises "
    "ModelManagerLockAcquisitionError (needs the 60 s state-lock wait to expire while another "
    "thread holds `_state_lock`); lock disposal is the cause: the control never waits there",
)

_WARM_PATH_DURING_TEARDOWN = Finding(
    "B4",
    "remove(X) is inside (or just past) X's clear_cache while X is still in the dict; "
    "add_model(X)'s unlocked `if queue_id in self` check sees X and returns success at once, "
    "on a model that is being (or has been) torn down",
)
_STACK_REMOVE_TIMEOUT_AFTER_DELETE = Finding(
    "B16",
    "through the cache, the same as on the bare manager: remove(X) tears X down and deletes "
    "it, then its wait for `_state_lock` to dispose X's lock entry times out, so a successful "
    "remove raises ModelManagerLockAcquisitionError",
)

_FINAL_CLEAR_DESYNC = Finding(
    "B5",
    "the main thread's final clear() removes X through the cache, whose remove drops X from "
    "the LRU first; the inner remove then fails in X's first clear_cache (scripted): X stays "
    "loaded but is no longer in the LRU, so it can never be evicted",
)

FINDINGS: Final[Mapping[tuple[str, str, str], Finding]] = {
    (_STACK, "B1-remove-add-generation-split", "I4"): _DUPLICATE,
    (_STACK, "B2-constructor-failure-split", "I4"): _DUPLICATE,
    (_STACK, "B3-dispose-after-release", "I4"): _DUPLICATE,
    (_STACK, "B7-duplicate-lru-entries", "I4"): _DUPLICATE,
    (_STACK, "B8-failure-erases-concurrent-success", "I4"): _DUPLICATE,
    (_STACK, "B24-room-taken-admitted-over", "I4"): _DUPLICATE,
    (_MANAGER, "B1-remove-add-generation-split", "I2"): Finding(
        "B1",
        "R holds X's lock L1 and removes X; W waits on L1; R deletes the entry while holding "
        "L1; N finds no entry, creates L2 and constructs X; R releases; W acquires L1, sees X "
        "absent and constructs too: two constructors of X at once",
    ),
    (_MANAGER, "B3-dispose-after-release", "I2"): Finding(
        "B1",
        "the same split as B1 (1.8.3 disposes the lock entry while holding the lock; B3 is the "
        "variant of a fix that disposes after release, which 1.8.3 does not have)",
    ),
    (_MANAGER, "B1-remove-add-generation-split", "I16"): _REMOVE_TIMEOUT_AFTER_DELETE,
    (_MANAGER, "B3-dispose-after-release", "I16"): _REMOVE_TIMEOUT_AFTER_DELETE,
    (_MANAGER, "B2-constructor-failure-split", "I2"): Finding(
        "B2",
        "H constructs X holding L1 and W waits on L1; H's constructor raises and its error path "
        "deletes the entry before releasing L1; N creates L2 and constructs X while W, "
        "holding L1, constructs X too",
    ),
    (_STACK, "B4-warm-fast-path-bypass", "I4"): Finding(
        "B4",
        "R's remove(X) has dropped X from the LRU; A's add_model(X) sees X still registered "
        "through the cache's unlocked `if queue_id in self` check, re-appends X to the LRU and "
        "returns success; R then unloads X: X is a phantom in the LRU, registered nowhere",
    ),
    (_STACK, "B4-warm-fast-path-bypass", "I16"): _REMOVE_TIMEOUT_AFTER_DELETE,
    (_STACK, "B5-failed-remove-desyncs-lru", "I5"): Finding(
        "B5",
        "remove(X) drops X from the LRU first; the inner remove then fails in clear_cache: X "
        "stays loaded but is no longer in the LRU, so it can never be evicted",
    ),
    (_STACK, "I15-eviction-window", "I15"): Finding(
        "B5",
        "remove(b) drops b from the LRU queue first; the inner remove then times out waiting "
        "for `_state_lock`, held by a concurrent add's eviction and load: the remove raises "
        "ModelManagerLockAcquisitionError, b stays loaded but out of the LRU, so the cache's "
        "view lists only c (no order of the operations explains it)",
    ),
    (_STACK, "B6-failed-remove-moves-x", "I5"): Finding(
        "B5",
        "the failed remove drops X from the LRU (B5); 1.8.3 has no rollback, so the reordering "
        "B6 describes (a rollback that re-appends X) cannot happen: X is simply lost from the LRU",
    ),
    (_STACK, "B9-failed-multi-eviction", "I6"): Finding(
        "B9",
        "LRU [P(pinned), A, B] is full; the eviction pops P (pinned, held aside), pops A, and "
        "remove(A) raises: the exception leaves before P is put back, so P and A, both still "
        "loaded, are gone from the LRU",
    ),
    (_STACK, "B10-alias-is-the-key", "I3"): Finding(
        "B10",
        "add_model(C, alias=A) appends A to the LRU, then the decorator's warm check looks up "
        "the canonical id C, finds it loaded and returns: nothing is loaded under A",
    ),
    (_STACK, "B13-phantom-from-refresh", "I4"): Finding(
        "B13",
        "an inference request for Z, which is not loaded, moves Z to the most-recent end of the "
        "LRU before answering 'not found': Z stays in the LRU, loaded nowhere",
    ),
    (_STACK, "B14-admission-overshoot", "I11"): Finding(
        "B14",
        "two cold adds of different ids each see a free slot (len < max_size) before either is "
        "registered, and both load: more models than max_size",
    ),
    (_STACK, "B15-queue-lock-across-unload", "I14"): Finding(
        "B15",
        "the eviction holds the LRU queue lock while it calls remove, which runs clear_cache "
        "(and waits for per-model locks): every inference, which refreshes the LRU first, "
        "waits for the whole unload",
    ),
    (_STACK, "B16-error-masking", "I4"): Finding(
        "B5",
        "remove(Y) drops Y from the LRU, then its wait for `_state_lock` (held by a concurrent "
        "load) times out: the remove fails, Y stays loaded and is never evictable again",
    ),
    (_STACK, "B16-error-masking", "I16"): Finding(
        "B16",
        "the load of X fails; the cache's error path then waits for the LRU queue lock to drop "
        "X and that wait times out: the add raises ModelManagerLockAcquisitionError instead "
        "of the loader's error",
    ),
    (_STACK, "B23-lost-wakeup-of-a-slot-waiter", "I11"): Finding(
        "B14",
        "in a cache of 1, T1 starts loading X and T2 starts loading Y before either is "
        "registered: each saw a free slot (loads in flight do not count), so two loads run "
        "at once where the bound allows one; the slot waiter the scenario is about never waits",
    ),
    (_STACK, "B23-lost-wakeup-of-a-slot-waiter", "I16"): Finding(
        "B16",
        "X's constructor fails (scripted); the cache's error path then waits for the lock on the "
        "manager state, held by T2's add of Y, to drop X from the LRU queue, and that wait times "
        "out: the add raises ModelManagerLockAcquisitionError instead of the loader's error",
    ),
    (_MANAGER, "B2-constructor-failure-split", "I16"): Finding(
        "B16",
        "H's constructor fails; the error path waits for `_state_lock` to dispose the lock "
        "entry and that wait times out: the add raises ModelManagerLockAcquisitionError "
        "instead of the loader's error (masked)",
    ),
    (_STACK, "B1-remove-add-generation-split", "I3"): _WARM_PATH_DURING_TEARDOWN,
    (_STACK, "B3-dispose-after-release", "I3"): _WARM_PATH_DURING_TEARDOWN,
    (_STACK, "B4-warm-fast-path-bypass", "I3"): _WARM_PATH_DURING_TEARDOWN,
    (_STACK, "basic-2", "I3"): _WARM_PATH_DURING_TEARDOWN,
    (_STACK, "B1-remove-add-generation-split", "I16"): _STACK_REMOVE_TIMEOUT_AFTER_DELETE,
    (_STACK, "B3-dispose-after-release", "I16"): _STACK_REMOVE_TIMEOUT_AFTER_DELETE,
    (_MANAGER, "basic-1", "I16"): _REMOVE_TIMEOUT_AFTER_DELETE,
    (_STACK, "B14-admission-overshoot", "I4"): Finding(
        "B9",
        "T1's add of Y has appended Y to the LRU queue and is loading it (the queue holds an id "
        "before it loads); T2's add of Z finds the cache full and its eviction round pops X "
        "(evicted), then Y: remove(Y) times out on Y's lock, held by T1's load, and the "
        "exception leaves without putting Y back: Y loads, registered but out of the LRU, "
        "never evictable",
    ),
    (_STACK, "I15-eviction-window", "I4"): Finding(
        "B9",
        "T2's remove(b) holds `_state_lock`; T1's add of c finds the cache full, its eviction "
        "pops a and remove(a) times out waiting for `_state_lock`: the exception leaves "
        "without putting a back, so a stays loaded but out of the LRU",
    ),
    (_STACK, "B15-queue-lock-across-unload", "I13"): Finding(
        "B17",
        "an inference on X is running the model when a concurrent add's eviction removes X: "
        "remove runs X's clear_cache while the inference still uses it (nothing holds a claim "
        "on a model during an inference)",
    ),
    (_STACK, "B23-lost-wakeup-of-a-slot-waiter", "I4"): Finding(
        "B16",
        "T2's add of Y appends Y to the LRU queue, then times out waiting for `_state_lock` "
        "(held by T1 registering X); its error path's wait for the queue lock (held by T1) "
        "times out too, so Y is never dropped from the queue: a phantom, loaded nowhere",
    ),
    (_STACK, "basic-1", "I4"): _FINAL_CLEAR_DESYNC,
    (_STACK, "basic-2", "I4"): _FINAL_CLEAR_DESYNC,
}
"""The failures found on the verified version (see the module docstring)."""

SKIP_REASONS: Final[Mapping[str, str]] = {
    "leases": "inference has no lease or acquire: an inference holds no claim on its model",
    "lifecycle": (
        "the per-model lock table has no reservation counts, and upstream keeps one lock per "
        "loaded id by design, so I1/I9 would judge that design rather than a race"
    ),
    "lru": "the bare ModelManager has no LRU",
    "capacity": "the bare ModelManager has no size bound",
    "refresh": "the bare ModelManager has no LRU to refresh",
    "pins": "the bare ModelManager has no pins",
    "memory": (
        "memory pressure is read from torch.cuda directly (no probe to inject) and is off "
        "by default"
    ),
}
"""Why an adapter of this target lacks each capability it does not declare."""


def classify(implementation: str, scenario: str, invariant: str) -> Finding | None:
    """The recorded reading of this failure, or None (a new finding: read it)."""
    return FINDINGS.get((implementation, scenario, invariant))

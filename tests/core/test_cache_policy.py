"""The cache's policy alone: occupancy, victims and admission decisions over a book.

:class:`CapacityPolicy` is pure (no locks, no waits), so each decision is
checked on a hand-built :class:`CacheBook` and a plain set standing for the
inner layer's registry.
"""

from __future__ import annotations

import pytest

from modelmanager.decorators._cache_book import CacheBook
from modelmanager.decorators._cache_policy import (
    MEMORY_EVICTIONS_PER_ROUND,
    Admission,
    CapacityPolicy,
)

NONE: frozenset[str] = frozenset()


def make(*listed: str, max_size: int = 3) -> tuple[CacheBook, set[str], CapacityPolicy]:
    """A book listing ``listed`` (least recent first), all registered inside."""
    book = CacheBook()
    registered = set(listed)
    for rid in listed:
        book.reserve(rid)
        book.commit(rid)
    return book, registered, CapacityPolicy(book, registered.__contains__, max_size)


def test_round_size_is_upstreams() -> None:
    """Memory rounds evict up to three models, as upstream does."""
    assert MEMORY_EVICTIONS_PER_ROUND == 3


def test_occupancy_counts_listed_models_until_unregistered() -> None:
    """A REMOVING or UNLOADING id counts until it is unregistered inside."""
    book, registered, policy = make("a", "b", "c")
    assert (policy.occupied(), policy.in_flight()) == (3, 0)
    book.start_remove("a")
    assert policy.occupied() == 3
    assert policy.present("a")
    registered.discard("a")  # the inner removal unregistered it
    assert policy.occupied() == 2
    assert not policy.present("a")
    book.choose("b", None)
    assert policy.occupied() == 2  # EVICTING is still loaded
    assert policy.present("b")
    book.start_unload("b")
    registered.discard("b")
    assert policy.occupied() == 1
    assert not policy.present("b")
    assert policy.present("c")
    assert not policy.present("zz")


def test_in_flight_counts_unlisted_slots_and_slots_of_ids_gone_inside() -> None:
    """Slots of unlisted ids are in flight; so are those of listed ids already unregistered."""
    book, registered, policy = make("a")
    book.reserve("x")
    book.reserve("x")  # two adds of x share one slot's worth of room
    assert policy.in_flight() == 1
    book.reserve("a")  # an add of a loaded id: not in flight
    assert policy.in_flight() == 1
    book.start_remove("a")
    registered.discard("a")  # a was removed inside while its add waits
    assert policy.in_flight() == 2
    assert policy.needed("y") == policy.occupied() + 2 + 1 - 3


def test_committing_is_a_slot_registered_inside_but_unlisted() -> None:
    """The window between the inner registration and the commit."""
    book, registered, policy = make("a")
    book.reserve("x")
    assert not policy.committing()
    registered.add("x")
    assert policy.committing()
    book.commit("x")
    assert not policy.committing()


def test_evictable_skips_excluded_pinned_leased_chosen_and_leaving() -> None:
    """Only plain COMMITTED ids (or a REMOVING one still registered) may be chosen."""
    book, registered, policy = make("a", "b", "c", "d", "e")
    book.pin("b")
    book.choose("c", None)
    book.choose("d", None)
    book.start_unload("d")
    book.start_remove("e")
    assert policy.evictable("a", NONE, None)
    assert not policy.evictable("a", NONE, "a")
    assert not policy.evictable("a", {"a"}, None)
    assert not policy.evictable("b", NONE, None)
    assert not policy.evictable("c", NONE, None)
    assert not policy.evictable("d", NONE, None)
    assert policy.evictable("e", NONE, None)  # its removal may still fail
    registered.discard("e")
    assert not policy.evictable("e", NONE, None)  # unregistered: evicting it makes no room
    registered.add("e")
    book.choose("e", "q")
    assert not policy.evictable("e", NONE, None)


def test_capacity_victims_are_the_least_recent_evictable() -> None:
    """Pinned and leased ids are skipped; at most ``need``; none for need <= 0."""
    book, _, policy = make("a", "b", "c", "d")
    book.pin("a")
    assert policy.capacity_victims(2, {"b"}, "x") == ["c", "d"]
    assert policy.capacity_victims(1, NONE, "x") == ["b"]
    assert policy.capacity_victims(9, NONE, "x") == ["b", "c", "d"]
    assert policy.capacity_victims(0, NONE, "x") == []
    assert policy.capacity_victims(-1, NONE, "x") == []
    assert policy.memory_victims(2, NONE, "b") == ["c", "d"]


def test_still_chosen_revalidates_capacity_victims_only() -> None:
    """A capacity victim stays chosen while needed and least recent; a memory one always.

    The add that chose it holds its slot while it evicts (``admit_held``), so
    "needed" is what is over the bounds with that slot counted.
    """
    book, registered, policy = make("a", "b", "c")
    assert policy.still_chosen("c", None, NONE)  # memory: the probe decided
    book.reserve("x")  # x's slot, reserved with its victims
    assert policy.still_chosen("a", "x", NONE)  # x needs one slot: a is least recent
    assert not policy.still_chosen("b", "x", NONE)  # b is not what x needs
    book.start_remove("c")
    registered.discard("c")  # a removal made room meanwhile
    assert not policy.still_chosen("a", "x", NONE)
    registered.add("c")
    book.fail_remove("c")
    assert not policy.still_chosen("a", "x", {"a"})  # leased since: not evictable
    book.release("x")
    assert not policy.still_chosen("a", "x", NONE)  # x gave its slot back: nothing over


def test_admit_held_keeps_the_slot_and_evicts_what_is_still_over() -> None:
    """An add holding its slot evicts the next least-recent model when a victim was
    rescued, reserves once within the bound, and is FULL when nothing can go."""
    book, _, policy = make("a", "b", "c")
    book.reserve("x")
    assert policy.admit_held("x", NONE) == (Admission.EVICT, ["a"])
    assert policy.admit_held("x", {"a"}) == (Admission.EVICT, ["b"])
    assert policy.admit_held("x", {"a", "b", "c"}) == (Admission.FULL, [])
    book.choose("a", "x")
    assert policy.admit_held("x", NONE) == (Admission.WAIT, [])  # its eviction is undecided
    book.start_unload("a")
    book.forget("a")
    assert policy.admit_held("x", NONE) == (Admission.RESERVE, [])


@pytest.mark.parametrize("shared", ["slot", "present"])
def test_admit_reserves_when_a_slot_is_shared_or_the_id_is_loaded(shared: str) -> None:
    """An add of an id with a slot, or loaded meanwhile, shares: no room needed."""
    book, _, policy = make("a", "b", "c")
    target = "x" if shared == "slot" else "a"
    if shared == "slot":
        book.reserve("x")
    assert policy.admit(target, NONE) == (Admission.RESERVE, [])


def test_admit_reserves_when_there_is_room() -> None:
    """Registered + in flight + 1 <= max_size: reserve."""
    _, _, policy = make("a", "b")
    assert policy.admit("x", NONE) == (Admission.RESERVE, [])


def test_admit_evicts_exactly_what_it_needs() -> None:
    """A full cache evicts only as many least-recent models as it needs (semantics 6)."""
    book, _, policy = make("a", "b", "c")
    assert policy.admit("x", NONE) == (Admission.EVICT, ["a"])
    book.reserve("y")  # an in-flight load: two must go now
    assert policy.admit("x", NONE) == (Admission.EVICT, ["a", "b"])


@pytest.mark.parametrize("busy", ["undecided", "unloading", "committing"])
def test_admit_waits_for_an_undecided_eviction_or_a_commit(busy: str) -> None:
    """Evictions run one at a time; none while a load awaits its commit."""
    book, registered, policy = make("a", "b", "c")
    if busy == "undecided":
        book.choose("c", "q")
    elif busy == "unloading":
        book.choose("c", "q")
        book.start_unload("c")
    else:
        book.reserve("y")
        registered.add("y")
    assert policy.admit("x", NONE) == (Admission.WAIT, [])


def test_admit_waits_for_in_flight_loads_before_evicting_too_few() -> None:
    """Short of evictable models with loads in flight: wait, evict nothing yet."""
    book, _, policy = make("a", "b", max_size=2)
    book.reserve("y")
    book.pin("a")
    assert policy.admit("x", {"b"}) == (Admission.WAIT, [])


def test_admit_evicts_what_can_go_then_reports_full() -> None:
    """Fewer evictable than needed, nothing in flight: evict those, then FULL."""
    book, _, policy = make("a", "b", "c", max_size=1)
    book.pin("a")
    assert policy.admit("x", {"b"}) == (Admission.EVICT, ["c"])
    book.forget("c")
    assert policy.admit("x", {"b"}) == (Admission.FULL, [])


def test_joined_lists_the_listed_ids_an_add_holds_a_slot_for() -> None:
    """A slot of a listed id is an add that joined its load; unlisted slots are loads."""
    book, _, policy = make("a", "b")
    assert policy.joined() == NONE
    book.reserve("b")  # an add of b that joined its load (b is listed)
    book.reserve("x")  # a load in flight, not a join
    assert policy.joined() == {"b"}


def test_admission_never_chooses_a_joined_model() -> None:
    """Evicting a model an add joined makes no room (that add loads it again): the
    admission takes the next least-recent one, and so does the next round."""
    book, _, policy = make("a", "b", "c")
    book.reserve("a")  # an add joined a's load
    assert policy.admit("x", NONE) == (Admission.EVICT, ["b"])
    assert policy.admit("x", {"c"}) == (Admission.EVICT, ["b"])  # leased ones stay out too
    book.reserve("x")
    assert policy.admit_held("x", NONE) == (Admission.EVICT, ["b"])
    assert policy.admit_held("x", {"b", "c"}) == (Admission.FULL, [])


def test_admit_waits_for_an_add_that_joined_an_evictable_model() -> None:
    """Short of room while an add that joined a model's load is pending: wait for it
    (it ends by itself), unless that model could not go anyway."""
    book, _, policy = make("a", "b", max_size=2)
    book.pin("a")
    book.reserve("b")  # joined b's load
    assert policy.admit("x", NONE) == (Admission.WAIT, [])
    assert policy.admit("x", {"b"}) == (Admission.FULL, [])  # b leased: waiting helps nothing
    book.release("b")  # the joined add ended (a hit)
    assert policy.admit("x", NONE) == (Admission.EVICT, ["b"])


def test_admit_of_a_committed_victim_waits_for_its_unload() -> None:
    """An add of an UNLOADING id waits: sharing a slot now would be a load nobody made
    room for once the unload ends. A chosen (uncommitted) victim is still shared."""
    book, registered, policy = make("a", "b")
    book.choose("a", "x")
    assert policy.admit("a", NONE) == (Admission.RESERVE, [])
    book.start_unload("a")
    assert policy.admit("a", NONE) == (Admission.WAIT, [])
    registered.discard("a")
    book.forget("a")
    assert policy.admit("a", NONE) == (Admission.RESERVE, [])  # gone: room for it


def test_still_chosen_drops_a_victim_an_add_joined_since() -> None:
    """A slot reserved on a chosen victim (a join) before its commit drops the victim."""
    book, _, policy = make("a", "b", "c")
    book.reserve("x")
    assert policy.still_chosen("a", "x", NONE)
    book.reserve("a")  # an add of a joined it meanwhile
    assert not policy.still_chosen("a", "x", NONE)
    assert policy.still_chosen("b", "x", NONE)

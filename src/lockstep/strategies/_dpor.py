"""Dynamic partial-order reduction: one execution per Mazurkiewicz trace, not per interleaving.

Two executions that only differ in the order of *independent* steps (steps
of different threads on different resources) reach the same states; it is
enough to run one of them.  This strategy explores the scenario's executions
systematically (stateless: every execution reruns the scenario from the
start and replays a prefix of choices) and adds alternatives only where the
last execution contained a *race*: two dependent steps of different threads
that could have happened in the other order.

The algorithm is Flanagan & Godefroid's DPOR (POPL 2005) refined with the
source sets and sleep sets of Abdulla, Aronis, Jonsson & Sagonas (POPL 2014):

* after each execution, for every step ``e_j`` of thread ``p``, the last
  earlier step ``e_i`` of another thread that is dependent with it, is not
  already ordered before ``p``'s previous step by happens-before, and is
  co-enabled with it, is a race;
* the reversal is the sequence ``v`` of the steps after ``e_i`` that do not
  happen after it, followed by ``e_j``; a thread whose first step in ``v``
  has no predecessor in ``v`` (an *initial*) is added at ``e_i``'s state
  unless one already is (source sets);
* sleep sets: once the subtree of a choice is explored, the choice sleeps in
  its siblings' subtrees until a dependent step wakes it.  No two complete
  executions explored are equivalent; the price of not implementing wakeup
  trees is that an execution can become *sleep-set blocked* (every enabled
  choice asleep).  The runtime cannot abandon an execution, so a blocked one
  is run to its end with default choices, ignored for race analysis, and
  counted in :attr:`DporStrategy.blocked_executions`.

Dependency (what counts as a conflict):

* operations on the same primitive (same resource key: ``Lock#2``), and
  checkpoints with the same ``resource``; ``resource=None`` conflicts with
  nothing, except that line-granularity steps (kind ``"line"``) all conflict
  with each other, since unsynchronised lines may touch any memory;
* a thread's start, end and the joins on it share the thread's key
  (``Thread#n``), and a thread's first step happens after the step of its
  parent that created it;
* a fired timeout conflicts with the operations on the primitive it waited
  on and with every other fired timeout and sleep (they all move the one
  virtual clock);
* ``Condition`` operations also conflict with the underlying lock when the
  runtime reports it (``OpDescriptor.resource`` may be a tuple of keys; each
  element is a key);
* accesses to watched state (``lockstep.watch``; the resource is an
  :class:`~lockstep._memory._locations.Access`) conflict when one of them
  writes what the other reads or writes: two reads of one location are
  independent; a key read conflicts with writes of that key and with
  whole-container writes; a whole-container read (``len``, iteration)
  conflicts with every write to the container; writes to two keys of one dict
  conflict (insertion order is observable); attributes are separate
  locations.  Primitive and checkpoint keys are "written" by every operation.
  Happens-before, the race scan and source-set initials all use this
  read/write relation (a write follows the last write and every read since;
  a read follows the last write).

Soundness (what an exhausted search establishes): every Mazurkiewicz trace of
the scenario over its switch points, up to the preemption bound, was explored
once.  The switch points are the controlled primitives, checkpoints and the
accesses to watched state, so the verdict covers shared memory that is
either watched, guarded by controlled primitives, or announced by a
checkpoint carrying a resource.  Combined with the race detector
(``explore(races=True)``, the default), this is CHESS's argument: if no
execution has a data race on watched state, every other interleaving of the
unwatched accesses between two switch points is equivalent to one explored.
State that is neither watched nor guarded is outside the claim: a checkpoint
without a resource promises that the code around it conflicts with nothing,
so an unsynchronised read-modify-write of unwatched data marked only with
``checkpoint("x")`` is explored in one order (random, PCT and DFS still
reorder it); ``ExploreResult.verdict`` says whether anything was watched.

What it gives up: invariants run at every switch point where a thread
other than the running one could go on, but DPOR only
visits the global states of one linearization per trace.  A violation that
is visible only in an intermediate state of a different order of
independent steps can be missed; assertions made by the threads themselves
(after a dependent operation) cannot.  With ``preemption_bound`` the search
is a heuristic like loom's: races whose reversal needs more preemptions are
dropped.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Literal

import attrs

from lockstep._memory._locations import Access
from lockstep._schedule import Choice
from lockstep._trace import OpDescriptor, PrimitiveId, StepRecord
from lockstep.errors import InvalidArgument, InvalidArgumentType, NondeterminismDetected
from lockstep.strategies._base import (
    NONDETERMINISM_CAUSES,
    ExecutionOutcome,
    StepContext,
    check_timeouts,
    is_preemption,
    runs_first,
)
from lockstep.strategies._capabilities import Capabilities

__all__ = ["DporStrategy"]

_Instance = tuple[int, str, Hashable | None, str, int]
_CLOCK: tuple[str] = ("clock",)
_LINE: tuple[str] = ("line",)


def _event_keys(
    op: OpDescriptor, choice_kind: str
) -> tuple[frozenset[Hashable], frozenset[Hashable]]:
    """The dependency cells of one step: (cells it reads, cells it writes).

    Two steps conflict when one writes a cell the other reads or writes. Every
    primitive, checkpoint resource, the clock and line steps *write* their key (all
    operations on one of them are mutually dependent); a watched access reads or
    writes the cells of its :attr:`~lockstep._memory.Access.footprint`, so two reads
    of one location are independent.
    """
    resource = op.resource
    if isinstance(resource, Access):
        return resource.footprint
    keys: set[Hashable] = set()
    if (
        isinstance(resource, tuple)
        and resource
        and all(isinstance(r, PrimitiveId) for r in resource)
    ):
        keys.update(("res", r) for r in resource)
    elif resource is not None:
        keys.add(("res", resource))
    if choice_kind == "timeout" or "sleep" in op.kind:
        keys.add(_CLOCK)
    if op.kind == "line":
        keys.add(_LINE)
    return _NO_CELLS, frozenset(keys)


_NO_CELLS: frozenset[Hashable] = frozenset()
#: Events kept by operation before the table starts afresh (DporStrategy._events).
_MAX_EVENTS = 100_000


@attrs.frozen(slots=True)
class _Event:
    """A step as DPOR sees it: who, which choice, what operation, which cells it
    reads and writes."""

    thread: int
    choice: Choice
    # Compared without its label (``site`` holds the rest): a label is a readable
    # name that may come from process-global state (a worker named from a global
    # counter, as ``ThreadPoolExecutor`` names its threads), so two executions of one
    # schedule can label the same operation differently.
    op: OpDescriptor = attrs.field(eq=False)
    site: tuple[str, Hashable | None, str]
    reads: frozenset[Hashable]
    writes: frozenset[Hashable]

    @classmethod
    def of(cls, choice: Choice, op: OpDescriptor) -> _Event:
        reads, writes = _event_keys(op, choice.kind)
        return cls(choice.thread, choice, op, (op.kind, op.resource, op.location), reads, writes)

    @property
    def keys(self) -> frozenset[Hashable]:
        """Every cell the step touches."""
        return self.reads | self.writes

    def conflicts(self, other: _Event) -> bool:
        return (
            self.thread == other.thread
            or not self.writes.isdisjoint(other.writes)
            or not self.writes.isdisjoint(other.reads)
            or not other.writes.isdisjoint(self.reads)
        )


def _replay_difference(recorded: dict[Choice, _Event], now: dict[Choice, _Event]) -> str:
    """How the steps a replayed prefix meets differ from the recorded ones, in words."""
    if recorded.keys() != now.keys():
        return f"recorded {sorted(map(str, recorded))}, now {sorted(map(str, now))}"
    for choice, event in recorded.items():
        other = now[choice]
        if event != other:
            was, became = event.op, other.op
            text = (
                f"thread {choice.thread} was to do {was.kind} {was.label} at {was.location}, "
                f"now {became.kind} {became.label} at {became.location}"
            )
            if (was.kind, was.label, was.location) == (became.kind, became.label, became.location):
                text += (
                    f" (the same operation, touching {_keys_text(event.keys)} before and "
                    f"{_keys_text(other.keys)} now)"
                )
            return text
    return "the same choices, in another order"


def _keys_text(keys: frozenset[Hashable]) -> str:
    """The cells a step touches, as a reader names them (Lock#1, not a key tuple)."""
    names = sorted(str(key[-1]) if isinstance(key, tuple) and key else str(key) for key in keys)
    return ", ".join(names) or "nothing"


@attrs.define(slots=True)
class _Node:
    """The state before one step of the current execution, as an exploration node."""

    choices: tuple[Choice, ...]
    events: dict[Choice, _Event]
    current: int | None
    enabled: frozenset[int]
    yielded: bool  # StepContext.yielded: the current thread's last step was a yield
    preemptions: int  # preemptions in the prefix before this node
    sleep: dict[Choice, _Event]
    chosen: Choice
    backtrack: set[Choice] = attrs.field(factory=set)
    done: set[Choice] = attrs.field(factory=set)

    def is_preemption(self, choice: Choice) -> bool:
        return is_preemption(self.current, self.enabled, self.yielded, choice.thread)

    def asleep(self, choice: Choice) -> bool:
        sleeping = self.sleep.get(choice)
        return sleeping is not None and sleeping == self.events.get(choice)


class DporStrategy:
    """Exhaustive exploration with DPOR (source sets + sleep sets); see the module docstring.

    ``preemption_bound`` (None = unbounded) limits preemptions per execution.
    ``preemption_bound="iterative"`` searches with a bound of 0, then 1, 2, ...
    (iterative context bounding, as CHESS does): a bug that needs few preemptions
    is reached in the first passes instead of after the depth-first search has
    reordered every late step; each pass repeats the earlier passes' executions,
    and the search is exhausted (every trace, no bound) when a pass ends in which
    the bound cut nothing. :attr:`preemption_bound` is then None, and during the
    search the bound of the pass in progress (:attr:`passes` counts them).
    ``timeouts=False`` never fires a timeout while some thread can run (a smaller
    space: timed waits behave as if time were unbounded).
    ``end_execution`` returns False once every trace has been explored; then
    :attr:`exhausted` is True.  Counters: :attr:`executions` (all),
    :attr:`complete_executions` (one per distinct trace explored) and
    :attr:`blocked_executions` (sleep-set blocked or cut by the bound:
    redundant work).  Not thread-safe (the runtime never calls it concurrently);
    one instance explores one scenario once.

    Raises :class:`~lockstep.errors.NondeterminismDetected` from ``choose``
    when replaying a prefix meets different choices than recorded (the
    scenario is not a pure function of its schedule).
    """

    name = "dpor"
    seed: int | None = None

    def __init__(
        self, *, preemption_bound: int | Literal["iterative"] | None = None, timeouts: bool = True
    ) -> None:
        self.iterative = preemption_bound == "iterative"
        if self.iterative:
            preemption_bound = 0
        elif isinstance(preemption_bound, str):
            raise InvalidArgumentType(
                f'DporStrategy: preemption_bound must be an int, None or "iterative" '
                f"(got {preemption_bound!r})"
            )
        elif preemption_bound is not None:
            if isinstance(preemption_bound, bool) or not isinstance(preemption_bound, int):
                raise InvalidArgumentType(
                    f'DporStrategy: preemption_bound must be an int, None or "iterative" '
                    f"(got {preemption_bound!r})"
                )
            if preemption_bound < 0:
                raise InvalidArgument(
                    f"DporStrategy: preemption_bound must be >= 0 (got {preemption_bound!r})"
                )
        self._bound: int | None = preemption_bound
        self._cut = False  # the bound cut some choice off in this pass
        self.passes = 1
        self.timeouts = check_timeouts("DporStrategy", timeouts)
        self.executions = 0
        self.complete_executions = 0
        self.blocked_executions = 0
        self.exhausted = False
        self._stack: list[_Node] = []
        self._position = 0
        self._blocked_at: int | None = None
        # Acquire instances seen blocked: True with a timeout choice, False without
        # (see _not_reversible).  An instance is (thread, kind, resource, location,
        # how many times the thread ran that site before): the same call in every
        # execution whose prefix leads the thread there the same way.
        self._timed: dict[_Instance, bool] = {}
        self._site_counts: dict[tuple[int, str, Hashable | None, str], int] = {}
        # (thread, choice kind, id(op)) -> its _Event (an op descriptor is shared by
        # every step of one operation at one place, in every execution: the scheduler
        # interns them). Kept across executions, checked by identity (``event.op is
        # op``), so an entry for an operation that is gone is never taken for another.
        self._events: dict[tuple[int, str, int], _Event] = {}

    @property
    def capabilities(self) -> Capabilities:
        """A systematic, reducing search up to :attr:`preemption_bound`."""
        return Capabilities(
            name=self.name, systematic=True, reduces=True, preemption_bound=self.preemption_bound
        )

    @property
    def preemption_bound(self) -> int | None:
        """The bound the search is up to (None: unbounded; an iterative search that is
        exhausted is, its last pass having cut nothing)."""
        if self.iterative and self.exhausted:
            return None
        return self._bound

    def __repr__(self) -> str:
        return (
            f"<DporStrategy executions={self.executions} complete={self.complete_executions} "
            f"blocked={self.blocked_executions} exhausted={self.exhausted} "
            f"preemption_bound={self.preemption_bound} timeouts={self.timeouts}>"
        )

    # -- the protocol ------------------------------------------------------------------

    def begin_execution(self) -> None:
        """Start replaying the prefix chosen by the last backtrack."""
        self._position = 0
        self._blocked_at = None
        self._site_counts = {}
        if len(self._events) > _MAX_EVENTS:
            self._events = {}

    def choose(self, choices: Sequence[Choice], step: StepContext) -> Choice:
        """Replay the prefix, then extend it: awake, within the bound, fewest preemptions."""
        for t, op in step.pending.items():
            if t not in step.enabled and op.kind in _ACQUIRES:
                key = (t, op.kind, op.resource, op.location)
                instance = (*key, self._site_counts.get(key, 0))
                self._timed[instance] = self._timed.get(instance, False) or (t in step.timeouts)
        choice = self._choose(choices, step)
        op = step.pending[choice.thread]
        key = (choice.thread, op.kind, op.resource, op.location)
        self._site_counts[key] = self._site_counts.get(key, 0) + 1
        return choice

    def _choose(self, choices: Sequence[Choice], step: StepContext) -> Choice:
        i = self._position
        self._position += 1
        if not self.timeouts:
            choices = runs_first(choices)
        if self._blocked_at is not None:
            return self._default(choices, step)
        events = {}
        known = self._events
        pending = step.pending
        for c in choices:
            events[c] = _event_for(known, c, pending[c.thread])
        if i < len(self._stack):
            node = self._stack[i]
            if node.events != events:
                difference = _replay_difference(node.events, events)
                raise NondeterminismDetected(
                    f"DPOR replay of a recorded prefix met different choices at step {i}: "
                    f"{difference}; {NONDETERMINISM_CAUSES}"
                )
            return node.chosen
        parent = self._stack[-1] if self._stack else None
        sleep = self._child_sleep(parent) if parent is not None else {}
        node = _Node(
            choices=tuple(choices),
            events=events,
            current=step.current,
            enabled=step.enabled,
            yielded=step.yielded,
            preemptions=0
            if parent is None
            else parent.preemptions + parent.is_preemption(parent.chosen),
            sleep=sleep,
            chosen=choices[0],
        )
        candidates = [c for c in choices if not node.asleep(c) and self._within_bound(node, c)]
        if not candidates:
            self._blocked_at = i
            return self._default(choices, step)
        pick = self._prefer(node, candidates)
        node.chosen = pick
        node.backtrack.add(pick)
        node.done.add(pick)
        self._stack.append(node)
        return pick

    def end_execution(self, outcome: ExecutionOutcome) -> bool:
        """Analyse the races of the execution, then move to the next unexplored choice."""
        self.executions += 1
        if self._blocked_at is not None:
            self.blocked_executions += 1
            length = self._blocked_at
        else:
            self.complete_executions += 1
            length = len(self._stack)
        self._analyse(outcome, min(length, len(outcome.steps), len(self._stack)))
        while self._stack:
            node = self._stack[-1]
            todo = [
                c
                for c in node.backtrack - node.done
                if not node.asleep(c) and self._within_bound(node, c)
            ]
            if todo:
                pick = self._prefer(node, todo)
                node.chosen = pick
                node.done.add(pick)
                return True
            self._stack.pop()
        if self.iterative and self._cut:
            # Every trace within this pass's bound is done, and the bound cut some
            # choice: search again, from the start, one preemption further.
            assert self._bound is not None
            self._bound += 1
            self._cut = False
            self._timed = {}  # each pass is a fresh bounded search: the last, an unbounded one
            self.passes += 1
            return True
        self.exhausted = True
        return False

    # -- helpers -------------------------------------------------------------------------

    def _within_bound(self, node: _Node, choice: Choice) -> bool:
        bound = self._bound
        if bound is None or node.preemptions + node.is_preemption(choice) <= bound:
            return True
        self._cut = True
        return False

    @staticmethod
    def _prefer(node: _Node, candidates: Sequence[Choice]) -> Choice:
        # Fewest preemptions first, then the lowest thread: short, readable schedules.
        return min(candidates, key=lambda c: (node.is_preemption(c), c.thread, c.kind))

    @staticmethod
    def _default(choices: Sequence[Choice], step: StepContext) -> Choice:
        for c in choices:
            if c.thread == step.current and c.kind == "run":
                return c
        return choices[0]

    @staticmethod
    def _child_sleep(parent: _Node) -> dict[Choice, _Event]:
        chosen = parent.events[parent.chosen]
        sleep: dict[Choice, _Event] = {}
        for choice, event in parent.sleep.items():
            if not event.conflicts(chosen):
                sleep[choice] = event
        for choice in parent.done:
            if choice != parent.chosen:
                event = parent.events[choice]
                if not event.conflicts(chosen):
                    sleep[choice] = event
        return sleep

    def _analyse(self, outcome: ExecutionOutcome, length: int) -> None:
        """Find the races among the first ``length`` steps; add backtrack points."""
        steps = outcome.steps[:length]
        events = _trace_events(steps, self._events)
        # Happens-before as vector clocks (dict thread -> local count).
        local: list[int] = []  # 1-based position of each event in its thread
        clocks: list[dict[int, int]] = []
        before: list[dict[int, int]] = []  # the thread's clock just before each event
        thread_clock: dict[int, dict[int, int]] = {}
        thread_count: dict[int, int] = {}
        last_write: dict[Hashable, int] = {}
        reads_since: dict[Hashable, list[int]] = {}
        key_events: dict[Hashable, list[int]] = {}
        seen: set[int] = set()
        creator: dict[int, int] = {}
        for j, step in enumerate(steps):
            for t, _ in step.pending:
                if t not in seen:
                    seen.add(t)
                    if j > 0:
                        creator[t] = j - 1
        for j, event in enumerate(events):
            p = event.thread
            pre = dict(thread_clock.get(p, {}))
            if p not in thread_count and p in creator:
                _join(pre, clocks[creator[p]])
            before.append(pre)
            vc = dict(pre)
            # A write follows the last write and every read since; a read follows the
            # last write only (two reads of one cell are independent).
            for key in event.writes:
                last = last_write.get(key)
                if last is not None:
                    _join(vc, clocks[last])
                for r in reads_since.pop(key, ()):
                    _join(vc, clocks[r])
                last_write[key] = j
                key_events.setdefault(key, []).append(j)
            for key in event.reads:
                if key in event.writes:
                    continue
                last = last_write.get(key)
                if last is not None:
                    _join(vc, clocks[last])
                reads_since.setdefault(key, []).append(j)
                key_events.setdefault(key, []).append(j)
            count = thread_count.get(p, 0) + 1
            thread_count[p] = count
            vc[p] = count
            local.append(count)
            clocks.append(vc)
            thread_clock[p] = vc
        hb = _HappensBefore(events, clocks, local, creator)
        # Each key's event list, for a backward scan that stops at the first write
        # already ordered before the racing thread (every earlier event on that key is
        # then ordered before it too; reads of a key are not ordered among themselves,
        # so an ordered read does not end the scan).
        positions = {key: {j: n for n, j in enumerate(js)} for key, js in key_events.items()}
        for j, event in enumerate(events):
            # Per key, the last co-enabled conflicting step of another thread not
            # already ordered before p's previous step is the race (Flanagan &
            # Godefroid's "last dependent transition"; with reads, every unordered
            # read since the last write); earlier ones are found from the executions
            # that reverse it.
            for key in event.keys:
                js = key_events[key]
                self._scan(js, positions[key][j], key, j, event, before[j], hb)
        # Threads still blocked when the execution ended (a deadlock) never ran their
        # pending operation; it races like a step after the last one.
        for target in _final_pending(outcome, length):
            p = target.thread
            pre = dict(thread_clock.get(p, {}))
            if p not in thread_count and p in creator:
                _join(pre, clocks[creator[p]])
            for key in target.keys:
                js = key_events.get(key, [])
                self._scan(js, len(js), key, length, target, pre, hb)
        self._disabled_alternatives(events, length)

    def _scan(  # noqa: PLR0917 - the scan's state, passed from two call sites
        self,
        earlier: Sequence[int],
        end: int,
        key: Hashable,
        j: int,
        event: _Event,
        pre: dict[int, int],
        hb: _HappensBefore,
    ) -> None:
        """Reverse ``event`` (step j, or a final pending operation when j == len) with
        its races among ``earlier[:end]``, the earlier steps on ``key``, scanning
        backwards."""
        writes_key = key in event.writes
        p = event.thread
        events, local, clocks = hb.events, hb.local, hb.clocks
        covered: dict[int, int] = {}  # what the races handled so far happen after
        for n in range(end - 1, -1, -1):
            i = earlier[n]
            other = events[i]
            i_writes = key in other.writes
            if not (writes_key or i_writes):
                continue  # two reads of the key: independent
            ti = other.thread
            if pre.get(ti, 0) >= local[i] or covered.get(ti, 0) >= local[i]:
                if i_writes:
                    break
                continue
            if ti == p or self._not_reversible(i, j, hb, event):
                continue
            target = None if j < len(events) else event
            if self._reverse(i, j, hb, target):
                if i_writes:
                    break
                _join(covered, clocks[i])

    def _not_reversible(self, i: int, j: int, hb: _HappensBefore, second: _Event) -> bool:
        """True when ``second`` could not have run before step i (see :func:`_enables`);
        the caller then goes on scanning earlier steps.

        A blocking acquire cannot overtake the holder's release, but a *timed* one can
        time out before it, and a non-blocking one can run (and fail) before it.  The
        runtime does not say which kind an acquire is, so each acquire *instance* is
        classified by observation: seen blocked with a timeout choice (timed), seen
        blocked without one (blocking), never seen blocked (unknown: treated as both
        timed and non-blocking, which is sound and costs a redundant execution).
        Assumption: a given instance (same thread, call site, lock, occurrence) is
        either blocking or not in every execution.
        """
        first = hb.events[i]
        if not _enables(first, second):
            return False
        if second.op.kind in _ACQUIRES and second.choice.kind == "run":
            known = self._timed.get(hb.instance(j, second))
            if known is None or known:
                timeout = _Event.of(Choice.of(second.thread, "timeout"), second.op)
                self._reverse(i, j, hb, timeout)
            if known is None:
                self._reverse(i, j, hb, second)
        return True

    def _disabled_alternatives(self, events: Sequence[_Event], length: int) -> None:
        """Choices that the chosen step disables for good (a timeout that can no longer
        fire once the lock is released) never execute, so no race names them: add
        them where they were available and conflicted with the step taken."""
        upcoming: dict[int, _Event] = {}
        for k in range(length - 1, -1, -1):
            node = self._stack[k]
            chosen = events[k]
            for choice, event in node.events.items():
                if choice.thread == chosen.thread or choice in node.backtrack:
                    continue
                if upcoming.get(choice.thread) == event or not event.conflicts(chosen):
                    continue
                if not node.asleep(choice) and self._within_bound(node, choice):
                    node.backtrack.add(choice)
            upcoming[chosen.thread] = chosen

    def _reverse(self, i: int, j: int, hb: _HappensBefore, target: _Event | None = None) -> bool:
        """Handle the race between step i and step j (or ``target``, a blocked thread's
        pending operation after the last step j - 1); False when not co-enabled."""
        node = self._stack[i]
        events, clocks, creator = hb.events, hb.clocks, hb.creator
        ti, li = events[i].thread, hb.local[i]
        # v: the steps after i that do not happen after it, then j.
        v = [k for k in range(i + 1, j) if clocks[k].get(ti, 0) < li]
        in_v = set(v)
        sequence = [events[k] for k in v]
        sequence.append(events[j] if target is None else target)
        initials: list[_Event] = []
        first_seen: set[int] = set()
        earlier_reads: set[Hashable] = set()
        earlier_writes: set[Hashable] = set()
        for event in sequence:
            t = event.thread
            if t not in first_seen:
                first_seen.add(t)
                created_in_v = creator.get(t) in in_v
                independent = (
                    event.writes.isdisjoint(earlier_writes)
                    and event.writes.isdisjoint(earlier_reads)
                    and event.reads.isdisjoint(earlier_writes)
                )
                if not created_in_v and independent:
                    initials.append(event)
            earlier_reads.update(event.reads)
            earlier_writes.update(event.writes)
        available = [e.choice for e in initials if node.events.get(e.choice) == e]
        if not available:
            return False
        if not node.backtrack.isdisjoint(available):
            return True
        fits = [c for c in available if self._within_bound(node, c)]
        if fits:
            awake = [c for c in fits if not node.asleep(c)]
            node.backtrack.add(self._prefer(node, awake or fits))
        return True


@attrs.frozen(slots=True)
class _HappensBefore:
    """One execution's steps with their vector clocks (internal to the race analysis)."""

    events: Sequence[_Event]
    clocks: Sequence[dict[int, int]]
    local: Sequence[int]  # 1-based position of each step in its thread
    creator: dict[int, int]  # thread -> index of the step that created it

    def instance(self, j: int, event: _Event) -> _Instance:
        """The instance key of ``event``, run as step j (j == len: after the last step)."""
        op = event.op
        n = sum(
            1
            for e in self.events[:j]
            if e.thread == event.thread
            and e.op.kind == op.kind
            and e.op.resource == op.resource
            and e.op.location == op.location
        )
        return (event.thread, op.kind, op.resource, op.location, n)


def _final_pending(outcome: ExecutionOutcome, length: int) -> list[_Event]:
    """The pending operations of the threads that were still blocked at the end.

    Uses ``outcome.final_pending`` when the runtime provides it; otherwise the last
    step's pending table (every thread but the one that ran it) completed by the
    deadlock table, whose resource labels are mapped back to keys seen in the trace.
    """
    steps = outcome.steps
    if length == 0 or length != len(steps):
        return []
    provided = getattr(outcome, "final_pending", None)
    if provided is not None:
        items = provided.items() if hasattr(provided, "items") else provided
        return [_Event.of(Choice.of(t, "run"), op) for t, op in items]
    last = steps[-1]
    pending = {t: op for t, op in last.pending if t != last.thread}
    failure = outcome.failure
    if failure is not None and failure.deadlock:
        known: dict[tuple[str, str], OpDescriptor] = {}
        for step in steps:
            for _, op in step.pending:
                known.setdefault((op.kind, op.label), op)
        for row in failure.deadlock:
            if row.thread not in pending:
                found = known.get((row.operation, row.resource))
                if found is not None:
                    pending[row.thread] = found
    else:
        # Without a deadlock every remaining thread was runnable or had finished.
        return []
    return [_Event.of(Choice.of(t, "run"), op) for t, op in sorted(pending.items())]


def _event_for(
    known: dict[tuple[int, str, int], _Event], choice: Choice, op: OpDescriptor
) -> _Event:
    """The event of ``choice`` running ``op``, from ``known`` (DporStrategy._events) when
    it is there for this very operation, else made and kept there (a step's event is a
    value: the same operation and choice give the same event)."""
    key = (choice.thread, choice.kind, id(op))
    event = known.get(key)
    if event is None or event.op is not op:
        event = known[key] = _Event.of(choice, op)
    return event


def _trace_events(
    steps: Sequence[StepRecord], known: dict[tuple[int, str, int], _Event]
) -> list[_Event]:
    """The executed steps as events (taken from ``known``, the strategy's events by
    operation, where they are there); a ``Condition.wait`` also conflicts with the lock
    it releases, learnt from the same thread's later ``Condition.reacquire``."""
    events = [_event_for(known, s.choice, s.op) for s in steps]
    reacquired: dict[int, Hashable] = {}
    for k in range(len(events) - 1, -1, -1):
        event = events[k]
        if event.op.kind == "Condition.reacquire" and event.op.resource is not None:
            reacquired[event.thread] = event.op.resource
        elif event.op.kind == "Condition.wait" and event.thread in reacquired:
            lock_key = ("res", reacquired.pop(event.thread))
            events[k] = attrs.evolve(event, writes=event.writes | {lock_key})
    return events


_ACQUIRES = frozenset({"Lock.acquire", "RLock.acquire", "Condition.reacquire"})
# Operations only performed while holding the lock they name (the resource of a
# Condition operation is its lock): no other thread's blocking acquire of that
# lock can be moved before them.
_HELD = frozenset(
    {"Lock.release", "RLock.release", "Condition.wait", "Condition.notify", "Condition.notify_all"}
)


def _enables(first: _Event, second: _Event) -> bool:
    """True when ``second`` could not have run before ``first``: the pair is not a
    reversible race, and the scan goes on to earlier steps.

    * a join of thread t waits for t's end, after every step of t;
    * a lock acquired by another thread cannot overtake what the holder does while
      holding it (its release, a ``Condition`` wait or notify on it): the real race
      is with the holder's acquire, earlier.  This is exact for a blocking acquire;
      timed and non-blocking ones are handled by the caller (see
      ``DporStrategy._not_reversible``).
    """
    if second.op.kind == "Thread.join":
        return second.op.resource == PrimitiveId("Thread", first.thread)
    return first.thread != second.thread and first.op.kind in _HELD and second.op.kind in _ACQUIRES


def _join(into: dict[int, int], other: dict[int, int]) -> None:
    for t, n in other.items():
        if into.get(t, 0) < n:
            into[t] = n

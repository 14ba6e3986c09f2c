"""Stall diagnosis: prove, from evidence, that a thread is stuck in an uncontrolled primitive.

Lockstep runs one logical thread at a time and parks the others. If the running one
calls a *real* blocking primitive (a ``threading.Lock`` of a module lockstep does not
patch, a real ``Condition``, ``Event``, ``queue.Queue``...) that only a parked thread
could release, nothing can ever happen again: the execution is stalled. A wall-clock
rule alone ("no switch point for N seconds") cannot tell that apart from slow code on a
loaded machine, so it has to be long (the watchdog's ``stall_timeout``, 30 s). This
module gives the short answer (about 2 s) by *looking* at the stuck thread instead of
timing it.

One observation (:meth:`StallDetector.observe`) samples every OS thread's current
Python frame (``sys._current_frames()``). A thread is diagnosed as stalled when, over
at least ``diagnose_after`` seconds and ``min_samples`` observations with no scheduling
progress in between:

1. its frame is the same frame object at the same instruction in every sample;
2. that instruction is a call into a real blocking primitive (:func:`blocked_call`):
   the frame is inside the standard ``threading``/``queue`` modules, or it is a call /
   ``with`` whose receiver resolves (statically: names, attributes, constant
   subscripts; no user code runs) to a real lock, condition, event, queue...;
3. the thread used no CPU time meanwhile (where the platform can tell:
   ``time.pthread_getcpuclockid``), so it is blocked, not computing;
4. no other thread of the process moved either (every other frame unchanged), so no
   thread outside lockstep's control is about to release it.

Any sample that breaks the pattern restarts the evidence. Code that is slow but
progressing changes frames or burns CPU; a thread waiting for real work of a thread
outside lockstep sees that thread move: neither is ever diagnosed here, and both are
left to the watchdog's long timeout. What this gives up: a thread blocked in C code
that is not a recognisable primitive call (or spinning) is reported only by that long
timeout.

The interface is small so any backend's watchdog can use it: build a
:class:`StallDetector`, call ``observe(ident)`` on each poll while no step was taken
(``reset()`` when one was), and turn the returned :class:`BlockedCall` into a
failure message with :func:`stall_message`.
"""

from __future__ import annotations

import ast
import builtins
import dis
import inspect
import linecache
import os
import queue as _real_queue
import sys
import threading as _real_threading
import time as _real_time
import types
from collections.abc import Callable, Collection, Mapping
from types import CodeType, FrameType
from typing import Any, Final

import attrs

__all__ = [
    "DEFAULT_STALL_DIAGNOSIS",
    "BlockedCall",
    "StallDetector",
    "blocked_call",
    "stall_message",
]

#: Seconds of unchanged evidence before a stall is diagnosed (``Settings.stall_diagnosis``).
DEFAULT_STALL_DIAGNOSIS: Final = 2.0
#: CPU seconds a blocked thread may still be charged over the window (wake-ups, signals).
_CPU_TOLERANCE: Final = 0.02

_STDLIB_SYNC_FILES: Final = frozenset(
    os.path.abspath(path)
    for path in (_real_threading.__file__, _real_queue.__file__)
    if isinstance(path, str)
)
_STDLIB_DIR: Final = os.path.dirname(os.path.abspath(str(_real_threading.__file__))) + os.sep
_LOCKSTEP_DIR: Final = os.path.dirname(os.path.abspath(__file__)) + os.sep

_REAL_PRIMITIVES: Final[tuple[type, ...]] = tuple(
    {
        type(_real_threading.Lock()),
        type(_real_threading.RLock()),
        _real_threading._PyRLock,  # type: ignore[attr-defined]
        _real_threading.Condition,
        _real_threading.Semaphore,
        _real_threading.BoundedSemaphore,
        _real_threading.Event,
        _real_threading.Barrier,
        _real_threading.Thread,
        _real_queue.Queue,
        _real_queue.SimpleQueue,
    }
)
_BLOCKING_METHODS: Final = frozenset(
    {"acquire", "wait", "wait_for", "join", "get", "put", "__enter__"}
)
_CALL_OPS: Final = frozenset(
    {"CALL", "CALL_KW", "CALL_FUNCTION", "CALL_METHOD", "CALL_FUNCTION_EX", "PRECALL"}
)
_WITH_OPS: Final = frozenset({"BEFORE_WITH", "SETUP_WITH", "LOAD_SPECIAL"})


@attrs.frozen
class BlockedCall:
    """Where a thread is blocked and in what.

    ``primitive``: what it waits in (``"threading.Lock.acquire"``,
    ``"threading.Condition.wait"``, ``"queue.Queue.get"``...); ``location``: file:line
    of the innermost frame outside the standard library (the caller to look at);
    ``function``: that frame's qualified name; ``module``: that frame's module name
    (the module that most likely created the primitive, i.e. the one to patch);
    ``certain``: the receiver was resolved to a real primitive (False: only the call's
    shape says so, e.g. ``with get_lock():``).
    """

    primitive: str
    location: str
    function: str
    module: str | None
    certain: bool = True


def _qualname(code: CodeType) -> str:
    return str(getattr(code, "co_qualname", code.co_name))


def _module_of(frame: FrameType) -> str | None:
    name = frame.f_globals.get("__name__")
    return name if isinstance(name, str) else None


def _in_stdlib(filename: str) -> bool:
    path = os.path.abspath(filename)
    return (
        path.startswith(_STDLIB_DIR) and "site-packages" not in path and "dist-packages" not in path
    )


def _instruction_at(code: CodeType, offset: int) -> dis.Instruction | None:
    previous: dis.Instruction | None = None
    for ins in dis.get_instructions(code):
        if ins.offset == offset:
            return ins
        if ins.offset > offset:
            return previous
        previous = ins
    return previous


def _previous_instruction(code: CodeType, offset: int) -> dis.Instruction | None:
    previous: dis.Instruction | None = None
    for ins in dis.get_instructions(code):
        if ins.offset >= offset:
            return previous
        if ins.opname not in ("CACHE", "EXTENDED_ARG"):
            previous = ins
    return previous


def _source_segment(filename: str, positions: Any) -> str | None:
    """The source text an instruction spans (co_positions columns are UTF-8 byte offsets)."""
    if positions is None or positions.lineno is None or positions.end_lineno is None:
        return None
    if positions.col_offset is None or positions.end_col_offset is None:
        return None
    lines = [
        linecache.getline(filename, n).encode("utf-8")
        for n in range(positions.lineno, positions.end_lineno + 1)
    ]
    if not lines or not lines[0]:
        return None
    if len(lines) == 1:
        text = lines[0][positions.col_offset : positions.end_col_offset]
    else:
        text = b"".join(
            [lines[0][positions.col_offset :], *lines[1:-1], lines[-1][: positions.end_col_offset]]
        )
    try:
        return text.decode("utf-8")
    except UnicodeDecodeError:
        return None


_UNRESOLVED = object()
_SAFE_DESCRIPTORS: Final = (
    types.FunctionType,
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
    types.MemberDescriptorType,
    types.GetSetDescriptorType,
    classmethod,
    staticmethod,
)


def _static_attribute(obj: object, name: str) -> object:
    """``obj.name`` without running user code (no properties, no __getattr__)."""
    try:
        raw = inspect.getattr_static(obj, name)
        static = getattr(type(raw), "_ls_static", None)
        if static is not None:  # a watched instance's attribute: what its class would give
            raw = static(raw, obj)
    except AttributeError:
        return _UNRESOLVED
    if isinstance(obj, type) or not hasattr(type(raw), "__get__"):
        return raw
    if isinstance(raw, _SAFE_DESCRIPTORS):
        descriptor: Any = raw
        try:
            return descriptor.__get__(obj, type(obj))
        except Exception:
            return _UNRESOLVED
    return _UNRESOLVED


def _evaluate(node: ast.expr, frame: FrameType) -> object:
    """A name/attribute/constant-subscript expression's value in ``frame``, statically."""
    if isinstance(node, ast.Name):
        for scope in (frame.f_locals, frame.f_globals, vars(builtins)):
            if node.id in scope:
                return scope[node.id]
        return _UNRESOLVED
    if isinstance(node, ast.Attribute):
        base = _evaluate(node.value, frame)
        return _UNRESOLVED if base is _UNRESOLVED else _static_attribute(base, node.attr)
    if isinstance(node, ast.Subscript):
        base = _evaluate(node.value, frame)
        key = (
            node.slice.value
            if isinstance(node.slice, ast.Constant)
            else _evaluate(node.slice, frame)
        )
        if type(base) in (dict, list, tuple) and key is not _UNRESOLVED:
            try:
                return base[key]  # type: ignore[index]
            except (LookupError, TypeError):
                return _UNRESOLVED
        return _UNRESOLVED
    return _UNRESOLVED


def _parse(segment: str) -> ast.expr | None:
    try:
        return ast.parse(segment.strip(), mode="eval").body
    except SyntaxError:
        return None


def _describe(receiver: object, method: str) -> str:
    cls = type(receiver)
    module = cls.__module__.lstrip("_")
    name = {"lock": "Lock", "RLock": "RLock", "_PyRLock": "RLock"}.get(cls.__name__, cls.__name__)
    return f"{'threading' if module == 'thread' else module}.{name}.{method}"


def _user_frame_call(frame: FrameType, internal: frozenset[int]) -> BlockedCall | None:
    """Frame ``frame`` is not in the stdlib: is it at a call into a real primitive?

    Receivers whose ``id`` is in ``internal`` are the harness's own (batons) and never
    count; inside lockstep's own code only a resolved receiver counts.
    """
    code = frame.f_code
    ours = os.path.abspath(code.co_filename).startswith(_LOCKSTEP_DIR)
    ins = _instruction_at(code, frame.f_lasti)
    if ins is None:
        return None
    where = "?" if ours else f"{code.co_filename}:{frame.f_lineno}"
    function = "the thread's target" if ours else _qualname(code)
    module = None if ours else _module_of(frame)
    if ins.opname in _WITH_OPS:
        pushed = _previous_instruction(code, ins.offset)
        segment = _source_segment(code.co_filename, getattr(pushed, "positions", None))
        node = None if segment is None else _parse(segment)
        receiver = _UNRESOLVED if node is None else _evaluate(node, frame)
        if id(receiver) in internal:
            return None
        if receiver is not _UNRESOLVED and isinstance(receiver, _REAL_PRIMITIVES):
            return BlockedCall(_describe(receiver, "__enter__"), where, function, module)
        if receiver is _UNRESOLVED and not ours:
            return BlockedCall(
                "a with-statement on an uncontrolled object (probably a real lock)",
                where,
                function,
                module,
                certain=False,
            )
        return None
    if ins.opname not in _CALL_OPS:
        return None
    segment = _source_segment(code.co_filename, ins.positions)
    node = None if segment is None else _parse(segment)
    if not isinstance(node, ast.Call):
        return None
    callee = _evaluate(node.func, frame)
    method = node.func.attr if isinstance(node.func, ast.Attribute) else None
    receiver = getattr(callee, "__self__", _UNRESOLVED) if callee is not _UNRESOLVED else None
    if id(receiver) in internal:
        return None
    if receiver is not _UNRESOLVED and isinstance(receiver, _REAL_PRIMITIVES):
        name = getattr(callee, "__name__", method or "?")
        if name in _BLOCKING_METHODS:
            return BlockedCall(_describe(receiver, name), where, function, module)
        return None
    if callee is _UNRESOLVED and method in _BLOCKING_METHODS and not ours:
        return BlockedCall(
            f"an uncontrolled .{method}() (probably a real primitive)",
            where,
            function,
            module,
            certain=False,
        )
    return None


def blocked_call(
    frame: FrameType | None, *, internal: Collection[object] = ()
) -> BlockedCall | None:
    """What the thread whose innermost Python frame is ``frame`` is blocked in, if anything.

    Returns a :class:`BlockedCall` when the frame is in a call into a real blocking
    primitive (see the module docstring), else None. Reads the frame only: no code of
    the program runs. ``internal``: the harness's own primitives (a parked thread's
    baton), never reported. One look proves nothing by itself; :class:`StallDetector`
    asks for the same answer over time.
    """
    if frame is None:
        return None
    top = frame
    if os.path.abspath(top.f_code.co_filename) in _STDLIB_SYNC_FILES:
        inner = _user_frame_call(top, frozenset(id(obj) for obj in internal))
        if inner is None or not inner.certain:
            return None  # in threading/queue, but not waiting (is_set(), notify(), ...)
        outermost = top
        user: FrameType | None = top
        while user is not None and _in_stdlib(user.f_code.co_filename):
            if os.path.abspath(user.f_code.co_filename) in _STDLIB_SYNC_FILES:
                outermost = user
            user = user.f_back
        stdlib_module = _module_of(outermost) or "threading"
        primitive = f"{stdlib_module}.{_qualname(outermost.f_code)}"
        # The module to patch is the one that called threading/queue: another standard
        # module (concurrent.futures._base waits on its futures' conditions) when the
        # call came through one, else the user's.
        caller = outermost.f_back
        through = _module_of(caller) if caller is not None and caller is not user else None
        if user is None:
            return BlockedCall(primitive, "?", "?", through)
        return BlockedCall(
            primitive,
            f"{user.f_code.co_filename}:{user.f_lineno}",
            _qualname(user.f_code),
            through or _module_of(user),
        )
    if _in_stdlib(top.f_code.co_filename):
        return None  # another stdlib module (I/O, subprocess, sleep...): not ours to judge
    return _user_frame_call(top, frozenset(id(obj) for obj in internal))


def _thread_cpu_time(ident: int) -> float | None:
    getter = getattr(_real_time, "pthread_getcpuclockid", None)
    if getter is None:
        return None
    try:
        return _real_time.clock_gettime(getter(ident))
    except (OSError, OverflowError, ValueError):
        return None


def _frame_key(frame: FrameType) -> tuple[int, int, int]:
    return (id(frame), frame.f_lasti, id(frame.f_code))


class StallDetector:
    """Accumulates evidence that one OS thread is stuck in an uncontrolled primitive.

    ``observe(ident)`` takes one sample and returns the :class:`BlockedCall` once the
    evidence of the module docstring holds for ``diagnose_after`` seconds and
    ``min_samples`` samples; ``reset()`` forgets it (call it whenever the execution
    took a step). ``clock``, ``frames`` and ``cpu_time`` are injectable for tests.
    Not thread-safe: one watchdog owns one detector.
    """

    def __init__(
        self,
        diagnose_after: float = DEFAULT_STALL_DIAGNOSIS,
        *,
        min_samples: int = 3,
        clock: Callable[[], float] = _real_time.monotonic,
        frames: Callable[[], Mapping[int, FrameType]] = sys._current_frames,
        cpu_time: Callable[[int], float | None] = _thread_cpu_time,
    ) -> None:
        self.diagnose_after = diagnose_after
        self.min_samples = min_samples
        self._clock = clock
        self._frames = frames
        self._cpu_time = cpu_time
        self._key: object = None
        self._since = 0.0
        self._cpu0: float | None = None
        self._count = 0

    @staticmethod
    def poll_interval_for(diagnose_after: float) -> float:
        """How often a watchdog should call observe() to diagnose in time."""
        return max(0.01, min(0.25, diagnose_after / 4))

    def reset(self) -> None:
        """Forget the evidence gathered so far."""
        self._key = None
        self._count = 0

    def observe(
        self, ident: int | None, *, internal: Collection[object] = ()
    ) -> BlockedCall | None:
        """Sample thread ``ident``; the diagnosis once the evidence is complete, else None.

        ``internal``: the harness's own primitives (see :func:`blocked_call`).
        """
        if ident is None:
            self.reset()
            return None
        frames = self._frames()
        frame = frames.get(ident)
        call = blocked_call(frame, internal=internal)
        if frame is None or call is None:
            self.reset()
            return None
        me = _real_threading.get_ident()
        key = (
            _frame_key(frame),
            tuple(sorted((t, _frame_key(f)) for t, f in frames.items() if t not in (me, ident))),
        )
        now = self._clock()
        cpu = self._cpu_time(ident)
        if key != self._key or (
            cpu is not None and self._cpu0 is not None and cpu - self._cpu0 > _CPU_TOLERANCE
        ):
            self._key, self._since, self._cpu0, self._count = key, now, cpu, 1
            return None
        self._count += 1
        if self._count >= self.min_samples and now - self._since >= self.diagnose_after:
            return call
        return None


def stall_message(call: BlockedCall, thread: str, seconds: float, step: int) -> str:
    """The failure message for a diagnosed stall of logical thread ``thread``."""
    module = f"'{call.module}'" if call.module else "the module that creates it"
    where = f"{call.location} (in {call.function})" if call.function != "?" else call.location
    certainty = "" if call.certain else " (judged from the call's shape)"
    return (
        f"stalled after step {step}: thread {thread} has been blocked for {seconds:g} s in "
        f"{call.primitive}{certainty}, an uncontrolled primitive, at {where}, while "
        "lockstep holds every other thread, so nothing can release it. The primitive "
        "belongs to a module lockstep does not patch: add the module that creates it "
        f"(probably {module}) to patch= / --patch / your adapter's patch_modules()"
    )

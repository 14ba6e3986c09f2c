"""A module with idle worker threads that only its interpreter-exit hook stops (the
pattern of ``concurrent.futures.thread``): for tests/lockstep/test_ls_exit_hooks.py.

``start_worker()`` starts a non-daemon thread that waits for its own event; the hook
registered with ``threading._register_atexit`` at import sets every worker's event and
joins them. The registry is keyed by thread, as ``_threads_queues`` is.
"""

from __future__ import annotations

import threading
import weakref

hook_calls: list[int] = []  # appended to (a rebound global would be given back)
_workers: weakref.WeakKeyDictionary[threading.Thread, threading.Event] = weakref.WeakKeyDictionary()
_stopping = False


def _at_exit() -> None:
    global _stopping
    _stopping = True
    hook_calls.append(1)
    items = list(_workers.items())
    for _, event in items:
        event.set()
    for thread, _ in items:
        thread.join()


threading._register_atexit(_at_exit)  # type: ignore[attr-defined]


def start_worker() -> threading.Thread:
    """A worker that waits until the interpreter exits (or forever, without the hook)."""
    event = threading.Event()
    worker = threading.Thread(target=event.wait, name="idle-worker")
    _workers[worker] = event
    worker.start()
    return worker


def stopping() -> bool:
    """Whether the exit hook has run (in this process, as far as the module can tell)."""
    return _stopping

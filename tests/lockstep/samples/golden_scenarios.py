"""A scenario touching every primitive, for the recorded cross-version schedules.

A bounded work queue with a shutdown event, a stats object under an RLock, a
semaphore-limited section, timed waits and a sleep. The bug: the main thread
trusts ``join(timeout=...)`` to mean "the worker has finished", but the join's
timeout can fire while the worker is still winding down.
"""

import queue

import lockstep
import lockstep.time


def pipeline() -> None:
    jobs: lockstep.queue.Queue[int] = lockstep.queue.Queue(maxsize=2)
    stop = lockstep.threading.Event()
    stats_lock = lockstep.threading.RLock()
    stats = {"done": 0, "after_stop": 0}
    slots = lockstep.threading.BoundedSemaphore(1)
    cond = lockstep.threading.Condition(lockstep.threading.Lock())
    acknowledged = []

    def worker() -> None:
        while not stop.is_set():
            try:
                job = jobs.get(timeout=0.5)
            except queue.Empty:
                continue
            with slots, stats_lock:
                with stats_lock:
                    stats["done"] += job
                if acknowledged:
                    stats["after_stop"] += 1
            jobs.task_done()
        with cond:
            acknowledged.append("worker")
            cond.notify_all()

    w = lockstep.spawn(worker, name="worker")
    for job in (1, 2, 3):
        jobs.put(job)
    lockstep.time.sleep(0.1)
    jobs.join()
    stop.set()
    with cond:
        cond.wait_for(lambda: bool(acknowledged), timeout=2.0)
    w.join(timeout=5.0)
    assert stats["done"] == 6, stats
    assert stats["after_stop"] == 0, stats
    assert not w.is_alive(), "worker still running after join(timeout)"

"""Scenarios the CLI tests import by "module:qualname"."""

import lockstep


def _racy_count() -> int:
    """Two unsynchronised read-modify-write increments of one box; what the box holds after."""
    box = [0]

    def inc() -> None:
        value = box[0]
        lockstep.checkpoint("read", resource="box")
        box[0] = value + 1

    threads = [lockstep.spawn(inc), lockstep.spawn(inc)]
    for t in threads:
        t.join()
    return box[0]


def lost_update() -> None:
    count = _racy_count()
    assert count == 2, f"lost update: {count}"


def correct() -> None:
    lock = lockstep.threading.Lock()
    box = [0]

    def inc() -> None:
        with lock:
            box[0] += 1

    threads = [lockstep.spawn(inc), lockstep.spawn(inc)]
    for t in threads:
        t.join()
    assert box[0] == 2


def patched_lost_update() -> None:
    """Races only when samples.counter_module is patched (its time.sleep(0) is the switch)."""
    from samples import counter_module

    counter = counter_module.Counter(locked=False)
    threads = [lockstep.spawn(counter.increment), lockstep.spawn(counter.increment)]
    for t in threads:
        t.join()
    assert counter.value == 2, f"patched lost update: {counter.value}"


def lost_update_other_error() -> None:
    """lost_update's interleavings, failing with another exception type (a different failure)."""
    count = _racy_count()
    if count != 2:
        raise LookupError(f"lost update: {count}")


def lost_update_fixed() -> None:
    """lost_update's switch points with the read after the switch: the same choices, no bug."""
    box = [0]

    def inc() -> None:
        lockstep.checkpoint("read", resource="box")
        box[0] += 1

    threads = [lockstep.spawn(inc), lockstep.spawn(inc)]
    for t in threads:
        t.join()
    assert box[0] == 2, f"lost update: {box[0]}"

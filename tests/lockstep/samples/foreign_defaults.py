"""A function with a primitive as a default, defined here and imported elsewhere."""

import threading


def foreign(factory=threading.Lock):
    return factory()

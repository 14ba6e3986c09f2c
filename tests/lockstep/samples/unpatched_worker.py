"""A Thread subclass in a module the tests do not patch: a real OS thread if started."""

import threading


class Worker(threading.Thread):
    def __init__(self, sink):
        super().__init__(name="unpatched-worker")
        self.sink = sink

    def run(self):
        self.sink.append("worker")

"""A counter with an unsynchronised read-modify-write (for line-granularity tests)."""


class Counter:
    def __init__(self) -> None:
        self.value = 0

    def increment(self) -> None:
        current = self.value
        current += 1
        self.value = current

"""lockstep: a deterministic scheduler for threaded Python code."""

__all__: list[str] = []

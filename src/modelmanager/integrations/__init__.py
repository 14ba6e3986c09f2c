"""The core behind other servers' model-manager APIs, one subpackage per server.

An integration keeps its server's public API, errors and settings and puts
every state decision (loading, per-model lifecycle, LRU, pins, capacity,
unloading, leases) in the core; it imports its server's package lazily, and
the core never imports an integration (docs/roboflow-dropin.md).
"""

__all__: list[str] = []

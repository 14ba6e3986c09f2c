"""The bug catalogue's modules: one per known bug, ``bNN_<slug>.py``.

Each module holds the code of the bug's known-bug variant(s) (the core with
exactly that bug put back, through the core's extension points) and one
``BUG = Bug(...)`` declaration: its scenario, the invariants the variants
break, the strategies expected to catch them and the story of the
interleaving.  `models_spec._harness.catalogue` discovers and validates the modules
and derives everything else; ``CONTRIBUTING.md`` ("Add a bug") shows the
procedure.  Modules starting with ``_`` are shared support code.
"""

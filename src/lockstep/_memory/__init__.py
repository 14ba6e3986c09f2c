"""Watched shared memory and happens-before race detection (the implementation).

* ``_locations``: what an access touches (:class:`Access`) and its DPOR footprint;
* ``_state``: the per-execution state (what is watched) and the access hook;
* ``_containers`` / ``_instances`` / ``_classes``: tracked containers and instances;
* ``_watch``: :func:`watch`, validation and the ``__benign_races__`` declarations;
* ``_clocks`` / ``_detector``: vector clocks over the controlled primitives and the
  race detector.

The runtime knows only two things about it: ``Run.memory`` (None until the first
``watch`` of an execution) and ``Run.races`` (whether races are reported);
``run_execution`` closes the state at the end of each execution.

This package imports nothing at import time (``lockstep.strategies._dpor`` reads
``_locations`` while the runtime is still being imported): import the submodules.
"""

"""The ``lockstep check`` application for model managers: internal to models_spec.

The suite registered in the ``lockstep.suites`` entry-point group (`suite`), the
exploration and replay of one scenario on one stack (`check`) and the failure
reports (`report`).  Nothing here is a public name: run it through
``lockstep check``; the package's public surface is listed in
``models_spec/README.md``.
"""

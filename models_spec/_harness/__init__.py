"""The harness that runs scenarios on a stack: internal to models_spec.

The operation driver (`driver`), the watch on the stack's objects (`watching`),
the bug catalogue (`catalogue`) and every scenario by id (`scenario_index`), the
schedule corpus (`corpus`) and the adapter validation (`validate`).  Nothing
here is a public name: the package's public surface is listed in
``models_spec/README.md``; these modules change without notice.
"""

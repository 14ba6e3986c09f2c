"""The recorded schedule corpus of ``lockstep check``, shipped with the package.

Each ``B<nn>-*.json`` here is the shrunk `lockstep.Schedule` that breaks one
known-bug variant of the catalogue, and ``MANIFEST.json`` says how; the
recorder (``python3 -m models_spec.record_corpus``) writes them and
`models_spec._harness.corpus` reads them (``CORPUS_DIR`` is this directory).  They are
package data, so an installed (not only an editable) ``lockstep check``
replays them.  In a source checkout ``stateful_tests/schedules`` is a
symbolic link to this directory.
"""

"""Adapters that put model managers written elsewhere under the suite.

Each subpackage is one ``lockstep check --target`` for a third-party
implementation: ``roboflow_inference`` checks the model manager of
roboflow's ``inference`` server (``docs/roboflow-inference.md``).  A target
imports the package it checks only when one of its adapters is built, so
this package imports without any of them installed.
"""

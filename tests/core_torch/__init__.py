"""Tests of the torch example model under the core (marked ``torch``)."""

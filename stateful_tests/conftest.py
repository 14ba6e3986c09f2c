"""The stateful tests use the Hypothesis profiles registered in the root conftest.py."""

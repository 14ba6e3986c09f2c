"""Benchmarks, runnable as ``python3 -m benchmarks.<name>``; never imported by the packages."""

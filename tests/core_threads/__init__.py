"""Real-thread regression, variant-proof and stress tests of the core (see scenarios.py)."""

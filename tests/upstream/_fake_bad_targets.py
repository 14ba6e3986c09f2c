"""A module target whose ADAPTERS is not a list of names."""

ADAPTERS = "first"

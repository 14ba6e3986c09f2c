"""The lockstep version recorded in every schedule."""

from __future__ import annotations

__all__ = ["LOCKSTEP_VERSION"]

LOCKSTEP_VERSION = "0.1.0"

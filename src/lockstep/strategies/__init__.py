"""Scheduling strategies: one protocol, one implementation per file."""

from lockstep.strategies.base import ExecutionOutcome as ExecutionOutcome
from lockstep.strategies.base import StepContext as StepContext
from lockstep.strategies.base import Strategy as Strategy

__all__ = ["ExecutionOutcome", "StepContext", "Strategy"]

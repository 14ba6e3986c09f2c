"""Scheduling strategies: one protocol, one implementation per file."""

from lockstep.strategies.base import ExecutionOutcome as ExecutionOutcome
from lockstep.strategies.base import StepContext as StepContext
from lockstep.strategies.base import Strategy as Strategy
from lockstep.strategies.counting import CountingStrategy as CountingStrategy
from lockstep.strategies.counting import StrategyMetrics as StrategyMetrics
from lockstep.strategies.determinism import DeterminismCheck as DeterminismCheck
from lockstep.strategies.dfs import DFSStrategy as DFSStrategy
from lockstep.strategies.dpor import DporStrategy as DporStrategy
from lockstep.strategies.pct import PCTStrategy as PCTStrategy
from lockstep.strategies.random import RandomStrategy as RandomStrategy
from lockstep.strategies.registry import STRATEGY_NAMES as STRATEGY_NAMES
from lockstep.strategies.registry import make_strategy as make_strategy
from lockstep.strategies.replay import PrefixStrategy as PrefixStrategy
from lockstep.strategies.replay import ReplayStrategy as ReplayStrategy

__all__ = [
    "STRATEGY_NAMES",
    "CountingStrategy",
    "DFSStrategy",
    "DeterminismCheck",
    "DporStrategy",
    "ExecutionOutcome",
    "PCTStrategy",
    "PrefixStrategy",
    "RandomStrategy",
    "ReplayStrategy",
    "StepContext",
    "Strategy",
    "StrategyMetrics",
    "make_strategy",
]

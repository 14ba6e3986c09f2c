"""Scheduling strategies: one protocol, one implementation per file.

The :class:`Strategy` protocol (``begin_execution``, ``choose``, ``end_execution``,
``capabilities``: a :class:`Capabilities`) and
the values it sees (:class:`Choice`, :class:`StepContext`, :class:`ExecutionOutcome`,
:class:`OpDescriptor`, :class:`PrimitiveId`, :class:`StepRecord`); the search
strategies; the wrappers (:class:`CountingStrategy`, :class:`DeterminismCheck`) and
:func:`make_strategy` by name. The Hypothesis-driven strategy lives in
:mod:`lockstep.strategies.hypothesis` (it needs Hypothesis installed).
"""

from lockstep._schedule import Choice as Choice
from lockstep._trace import OpDescriptor as OpDescriptor
from lockstep._trace import PrimitiveId as PrimitiveId
from lockstep._trace import StepRecord as StepRecord
from lockstep.strategies._base import ExecutionOutcome as ExecutionOutcome
from lockstep.strategies._base import StepContext as StepContext
from lockstep.strategies._base import Strategy as Strategy
from lockstep.strategies._capabilities import Capabilities as Capabilities
from lockstep.strategies._counting import CountingStrategy as CountingStrategy
from lockstep.strategies._counting import StrategyMetrics as StrategyMetrics
from lockstep.strategies._determinism import DeterminismCheck as DeterminismCheck
from lockstep.strategies._dfs import DFSStrategy as DFSStrategy
from lockstep.strategies._dpor import DporStrategy as DporStrategy
from lockstep.strategies._pct import PCTStrategy as PCTStrategy
from lockstep.strategies._random import RandomStrategy as RandomStrategy
from lockstep.strategies._registry import STRATEGY_NAMES as STRATEGY_NAMES
from lockstep.strategies._registry import make_strategy as make_strategy
from lockstep.strategies._replay import GuidedStrategy as GuidedStrategy
from lockstep.strategies._replay import PrefixStrategy as PrefixStrategy
from lockstep.strategies._replay import ReplayStrategy as ReplayStrategy
from lockstep.strategies._replay import default_choice as default_choice

__all__ = [
    "STRATEGY_NAMES",
    "Capabilities",
    "Choice",
    "CountingStrategy",
    "DFSStrategy",
    "DeterminismCheck",
    "DporStrategy",
    "ExecutionOutcome",
    "GuidedStrategy",
    "OpDescriptor",
    "PCTStrategy",
    "PrefixStrategy",
    "PrimitiveId",
    "RandomStrategy",
    "ReplayStrategy",
    "StepContext",
    "StepRecord",
    "Strategy",
    "StrategyMetrics",
    "default_choice",
    "make_strategy",
]

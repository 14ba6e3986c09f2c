"""Decorators stacked on a :class:`~modelmanager.ModelManager`."""

from modelmanager.decorators.base import ModelManagerDecorator as ModelManagerDecorator
from modelmanager.decorators.fixed_size_cache import WithFixedSizeCache as WithFixedSizeCache

__all__ = ["ModelManagerDecorator", "WithFixedSizeCache"]

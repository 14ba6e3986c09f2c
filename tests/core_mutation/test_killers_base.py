"""Killers for mutants of `modelmanager.decorators.base` (docs/mutation.md)."""

from __future__ import annotations

from typing import cast

from modelmanager import ModelManager, ModelManagerDecorator, WithFixedSizeCache
from modelmanager.decorators.base import _OptionalMethod
from models_spec.fakes import FakeModel, ScriptedRegistry


def test_a_decorators_acquire_forwards_every_argument() -> None:
    """``acquire`` hands the id, the api key, the alias and the load kwargs to the inner layer.

    Kills ``ModelManagerDecorator.acquire`` passing None for the api key or
    the alias, dropping either of them (the alias then lands in the api
    key's place) or dropping the load kwargs.
    """
    stack = ModelManagerDecorator(ModelManager(ScriptedRegistry()))
    with stack.acquire("a", "key", "alias", device="cpu") as leased:
        model = cast(FakeModel, leased)
        assert (model.resolved_id, model.model_id) == ("alias", "a")
        assert model.api_key == "key"
        assert model.load_kwargs == {"device": "cpu"}
    assert stack.keys() == ["alias"]


def test_a_decorators_add_model_forwards_the_api_key() -> None:
    """``add_model`` hands the api key to the inner layer (the model is built with it).

    Kills ``ModelManagerDecorator.add_model`` passing None for the api key.
    """
    stack = ModelManagerDecorator(ModelManager(ScriptedRegistry()))
    stack.add_model("a", "key")
    with stack.lease("a") as leased:
        assert cast(FakeModel, leased).api_key == "key"


def test_an_optional_method_made_later_delegates_by_its_own_name() -> None:
    """An ``_OptionalMethod`` reads the inner layer's method of the name it was made with.

    Kills ``_OptionalMethod.__init__`` storing None for the name (every
    optional method then fails with TypeError). The base's own descriptors
    are made when ``base`` is imported, before a mutant is switched on, and so
    would be a test module's class: the descriptor is made inside the test.
    """

    class Delegating(ModelManagerDecorator):
        lru_order = _OptionalMethod("lru_order")

    stack = Delegating(WithFixedSizeCache(ModelManager(ScriptedRegistry()), max_size=2))
    stack.add_model("a")
    assert stack.lru_order() == ["a"]

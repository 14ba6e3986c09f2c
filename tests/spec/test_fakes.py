"""Unit tests of models_spec.fakes: scripts, registry, ghost bookkeeping."""

from __future__ import annotations

import pytest

from models_spec.fakes import (
    LOAD,
    UNLOAD,
    FakeModel,
    Ghost,
    Script,
    ScriptedLoadError,
    ScriptedProbe,
    ScriptedRegistry,
    ScriptedUnloadError,
    TornDownModelError,
    UnknownModelId,
)


def test_explicit_script_failures_are_per_id_and_attempt() -> None:
    """Explicit entries fail exactly the named attempts."""
    script = Script(load_failures={"a": [2]}, unload_failures={"b": [1, 3]})
    assert [script.load_fails("a", n) for n in (1, 2, 3)] == [False, True, False]
    assert [script.unload_fails("b", n) for n in (1, 2, 3)] == [True, False, True]
    assert not script.load_fails("b", 1)


def test_seeded_script_is_a_pure_function_of_the_seed() -> None:
    """Same seed, same answers; different seeds differ somewhere; p bounds are checked."""
    one, two = Script.from_seed(7, p_load=0.5), Script.from_seed(7, p_load=0.5)
    answers = [one.fails(LOAD, "x", n) for n in range(1, 65)]
    assert answers == [two.fails(LOAD, "x", n) for n in range(1, 65)]
    assert any(answers)
    assert not all(answers)
    other = Script.from_seed(8, p_load=0.5)
    assert answers != [other.fails(LOAD, "x", n) for n in range(1, 65)]
    with pytest.raises(ValueError, match="p_load"):
        Script(p_load=1.5)


def test_explicit_outcome_overrides_seed() -> None:
    """set_outcome wins over the seeded answer, both ways."""
    script = Script.from_seed(1, p_load=1.0, p_unload=0.0)
    script.set_outcome(LOAD, "x", 1, fail=False)
    script.set_outcome(UNLOAD, "x", 1, fail=True)
    assert not script.load_fails("x", 1)
    assert script.load_fails("x", 2)
    assert script.unload_fails("x", 1)
    with pytest.raises(ValueError, match="attempt"):
        script.set_outcome(LOAD, "x", 0, fail=True)
    with pytest.raises(ValueError, match="kind"):
        script.set_outcome("boom", "x", 1, fail=True)


def test_memory_script_and_probe_count_calls() -> None:
    """Each probe reads its own call number from the shared script."""
    script = Script(memory=[0.1, None], default_memory=0.9)
    script.set_memory(3, [0.2])
    probe_a, probe_b = ScriptedProbe(script, threshold=0.3), ScriptedProbe(script)
    assert [probe_a.free_fraction() for _ in range(5)] == [0.1, None, 0.9, 0.2, 0.9]
    assert probe_b.free_fraction() == 0.1
    probe_a.release_cache()
    assert (probe_a.calls, probe_a.releases, probe_a.threshold) == (5, 1, 0.3)
    with pytest.raises(ValueError, match="threshold"):
        ScriptedProbe(script, threshold=0.0)


def test_registry_constructs_counts_and_fails_as_scripted() -> None:
    """Attempts count per resolved id; a scripted failure raises ScriptedLoadError."""
    script = Script(load_failures={"alias": [1]})
    registry = ScriptedRegistry(script)
    ghost = registry.ghost
    with pytest.raises(ScriptedLoadError, match=r"'alias' \(attempt 1\)") as info:
        registry.get_model("alias")(model_id="canon")
    assert isinstance(info.value, RuntimeError)
    assert (info.value.resolved_id, info.value.attempt) == ("alias", 1)
    model = registry.get_model("alias")(model_id="canon", api_key="k", size=3)
    assert isinstance(model, FakeModel)
    assert (model.resolved_id, model.model_id, model.token) == ("alias", "canon", "alias#2")
    assert (model.api_key, model.load_kwargs) == ("k", {"size": 3})
    assert ghost.construct_attempts == {"alias": 2}
    assert ghost.max_constructing == {"alias": 1}
    assert ghost.constructing == {}
    assert ghost.models == [model]
    assert [e.kind for e in ghost.events] == [
        "construct_start",
        "construct_fail",
        "construct_start",
        "construct_end",
    ]
    assert [type(f) for _, f in ghost.failures] == [ScriptedLoadError]


def test_registry_universe_and_aliases() -> None:
    """Only ids in the universe or registered aliases are accepted."""
    registry = ScriptedRegistry(universe=["a"], aliases={"x": "a"})
    assert registry.accepts("a")
    assert registry.accepts("x")
    assert not registry.accepts("b")
    registry.get_model("x")
    with pytest.raises(UnknownModelId, match="'b'"):
        registry.get_model("b")
    assert registry.ghost.events == []
    with pytest.raises(ValueError, match=r"ghost\.script"):
        ScriptedRegistry(Script(), ghost=Ghost(Script()))


def test_clear_cache_tears_down_or_fails_as_scripted() -> None:
    """clear_cache counts calls and attempts; only success tears down."""
    registry = ScriptedRegistry(Script(unload_failures={"a": [1]}))
    model = registry.get_model("a")(model_id="a")
    with pytest.raises(ScriptedUnloadError, match="attempt 1"):
        model.clear_cache(delete_from_disk=False)
    assert not model.torn_down
    assert model.infer(5) == ("a#1", 5)
    model.clear_cache(delete_from_disk=True)
    assert model.torn_down
    assert model.teardowns == 1
    assert model.clear_calls == 2
    assert model.delete_from_disk == [False, True]
    assert registry.ghost.clear_attempts == {"a": 2}
    assert registry.ghost.clearing == {}
    with pytest.raises(TornDownModelError):
        model.infer()


def test_ghost_records_overlap_and_clear_in_use() -> None:
    """A constructor during clear_cache of the same id and a clear of a used model are recorded."""
    registry = ScriptedRegistry()
    ghost = registry.ghost
    model = registry.get_model("a")(model_id="a")
    with ghost.use(model):
        assert ghost.in_use == {"a#1": 1}
        model.clear_cache()
    assert ghost.in_use == {}
    assert [e.token for e in ghost.cleared_in_use] == ["a#1"]
    # Simulate a clear_cache in progress while a constructor starts.
    ghost.clearing["a"] = 1
    registry.get_model("a")(model_id="a")
    assert [reason for _, reason in ghost.overlaps] == [
        "constructor during clear_cache of the same id"
    ]
    with pytest.raises(TypeError, match="FakeModel"), ghost.use(object()):
        pass


def test_ghost_counts_concurrent_constructors_via_checkpoint_hook(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Re-entering a constructor from inside a checkpoint raises the live count to 2."""
    from models_spec import fakes

    registry = ScriptedRegistry()
    factory = registry.get_model("a")
    nested: list[object] = []

    def hook(label: str, *, resource: object = None) -> None:
        if label.startswith("construct:exit") and not nested:
            nested.append(None)
            nested.append(factory(model_id="a"))

    monkeypatch.setattr(fakes, "checkpoint", hook)
    factory(model_id="a")
    assert registry.ghost.max_constructing == {"a": 2}
    assert registry.ghost.overlaps[0][1] == "two constructors of one id"


def test_lock_probe_and_failures_since() -> None:
    """The lock probe is consulted at callback starts; failures_since filters by mark."""
    registry = ScriptedRegistry(Script(load_failures={"b": [1]}))
    ghost = registry.ghost
    ghost.lock_probe = lambda: True
    registry.get_model("a")(model_id="a")
    mark = ghost.mark()
    with pytest.raises(ScriptedLoadError):
        registry.get_model("b")(model_id="b")
    assert len(ghost.lock_held_in_callback) == 2
    assert [type(e) for e in ghost.failures_since(mark)] == [ScriptedLoadError]
    assert ghost.failures_since(ghost.mark()) == []
    assert len(ghost.live_models()) == 1


def test_fakes_checkpoint_through_lockstep(monkeypatch: pytest.MonkeyPatch) -> None:
    """Constructor and clear_cache call lockstep.checkpoint at entry and before exit."""
    import lockstep

    calls: list[tuple[str, object]] = []
    monkeypatch.setattr(
        lockstep, "checkpoint", lambda label, *, resource=None: calls.append((label, resource))
    )
    model = ScriptedRegistry().get_model("x")(model_id="c")
    model.clear_cache()
    assert calls == [
        ("construct:enter:x", "x"),
        ("construct:exit:x", "x"),
        ("clear_cache:enter:x", "x"),
        ("clear_cache:exit:x", "x"),
    ]

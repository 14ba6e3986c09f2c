"""lockstep.Settings: one typed, immutable, validated options object, and who builds it
(explore/replay keywords, the CLI's flags, the pytest plugin's marker and options)."""

from __future__ import annotations

import pickle
import typing
from typing import Any

import attrs
import pytest
from samples.cli_scenarios import correct, lost_update

import lockstep
from lockstep import InvalidArgument, Settings, pytest_plugin
from lockstep import _cli as cli
from lockstep._settings import REPLAY_FIELDS, SettingsChanges
from lockstep.errors import InvalidArgumentType


def test_every_field_has_a_type_a_default_and_a_doc():
    """Each field is annotated, has a default (Settings() builds) and a one-line doc."""
    default = Settings()
    for field in attrs.fields(Settings):
        assert field.type is not None, field.name
        assert field.default is not attrs.NOTHING, field.name
        assert getattr(default, field.name) == field.default
        doc = Settings.doc(field.name)
        assert doc, field.name
        assert "\n" not in doc, field.name


def test_the_keyword_forms_list_exactly_the_fields():
    """explore()'s keyword form has every field, typed as the field is; replay()'s has
    the fields a replay uses, and races (an override of the schedule's)."""
    hints = typing.get_type_hints(Settings)
    assert typing.get_type_hints(SettingsChanges) == hints
    assert set(REPLAY_FIELDS) == {"max_steps", "stall_timeout", "stall_diagnosis", "backend"} | {
        "races"
    }
    assert set(REPLAY_FIELDS) - {"races"} <= set(hints)


BAD_VALUES = [
    ("budget", 0, InvalidArgument, "budget must be >= 1, got 0"),
    ("budget", "5", InvalidArgumentType, "budget must be a positive int, got '5'"),
    ("budget", True, InvalidArgumentType, "budget must be a positive int, got True"),
    ("max_steps", -1, InvalidArgument, "max_steps must be >= 1, got -1"),
    ("shrink_budget", 0, InvalidArgument, "shrink_budget must be >= 1, got 0"),
    ("granularity", "word", InvalidArgument, "granularity must be 'op' or 'line', got 'word'"),
    ("shrink", 1, InvalidArgumentType, "shrink must be True or False, got 1"),
    ("races", "yes", InvalidArgumentType, "races must be True or False, got 'yes'"),
    ("keep_going", None, InvalidArgumentType, "keep_going must be True or False, got None"),
    ("progress", 0, InvalidArgumentType, "progress must be True, False or None, got 0"),
    ("stall_timeout", 0, InvalidArgument, "stall_timeout must be a positive number"),
    ("stall_diagnosis", -2.0, InvalidArgument, "stall_diagnosis must be a positive number"),
    ("stall_diagnosis", float("inf"), InvalidArgument, "or None \\(off\\), got inf"),
    ("time_budget", 0, InvalidArgument, "time_budget must be a positive number"),
    ("backend", "fibres", InvalidArgument, "unknown backend 'fibres'; expected one of"),
    ("backend", 3, InvalidArgumentType, "backend must be one of 'greenlet', 'thread' or None"),
]


@pytest.mark.parametrize(("field", "value", "error", "message"), BAD_VALUES)
def test_a_bad_value_names_the_field_the_value_and_what_is_allowed(field, value, error, message):
    """Construction and replace() both refuse it, with the same precise error."""
    with pytest.raises(error, match=message):
        Settings(**{field: value})
    with pytest.raises(error, match=message):
        Settings().replace(**{field: value})


def test_an_unknown_field_suggests_the_nearest_and_lists_the_known_ones():
    """A misspelt name is an InvalidArgument, at construction and in replace()."""
    with pytest.raises(InvalidArgument) as built:
        Settings(budgit=5)
    assert "Settings has no field 'budgit'; did you mean 'budget'?" in str(built.value)
    assert "(known: backend, budget, granularity, keep_going, max_steps," in str(built.value)
    with pytest.raises(InvalidArgument, match="did you mean 'stall_diagnosis'"):
        Settings().replace(stall_diagnostic=1.0)
    with pytest.raises(InvalidArgument, match="no field 'strategy' \\(known: "):
        Settings(strategy="pct")
    with pytest.raises(InvalidArgumentType, match="keyword arguments only"):
        Settings(5)  # type: ignore[call-arg]


def test_replace_returns_a_validated_copy_and_settings_are_values():
    """replace() leaves the original alone; settings are frozen, hashable and pickle."""
    base = Settings(budget=10)
    changed = base.replace(max_steps=50, keep_going=True)
    assert (base.max_steps, base.keep_going) == (10_000, False)
    assert (changed.budget, changed.max_steps, changed.keep_going) == (10, 50, True)
    assert changed.changed() == {"budget": 10, "max_steps": 50, "keep_going": True}
    assert base.replace() is base
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        base.budget = 3  # type: ignore[misc]
    assert hash(Settings(budget=10)) == hash(base)
    assert pickle.loads(pickle.dumps(changed)) == changed


def test_explore_runs_with_the_settings_and_keywords_are_changes_to_them():
    """explore(s, Settings(...)) and explore(s, field=...) are the same run; keywords
    apply to the settings given; an unknown keyword is refused like a field."""
    settings = Settings(budget=7, shrink=False, progress=False)
    by_object = lockstep.explore(correct, settings)
    by_keywords = lockstep.explore(correct, budget=7, shrink=False, progress=False)
    assert by_object.executions == by_keywords.executions == 7
    assert lockstep.explore(correct, settings, budget=3).executions == 3
    with pytest.raises(InvalidArgument, match="did you mean 'budget'"):
        lockstep.explore(correct, budgit=3)  # type: ignore[call-arg]
    with pytest.raises(InvalidArgumentType, match=r"settings must be a lockstep\.Settings"):
        lockstep.explore(correct, {"budget": 3})  # type: ignore[arg-type]


def test_replay_takes_only_the_keywords_a_replay_uses():
    """replay() refuses a setting that does not apply to one run (budget), naming the
    ones that do; a Settings' max_steps is raised to cover the schedule."""
    failing = lockstep.explore(lost_update, budget=50, progress=False).failure
    assert failing is not None
    schedule = failing.schedule
    with pytest.raises(InvalidArgument, match=r"replay\(\) has no keyword 'budget'.*known: back"):
        lockstep.replay(lost_update, schedule, budget=3)  # type: ignore[call-arg]
    again = lockstep.replay(lost_update, schedule, Settings(budget=99, max_steps=1))
    assert again.failure is not None
    assert again.failure.message == failing.message


def _parse(*argv: str) -> Settings:
    return cli.settings_from_args(cli.build_parser().parse_args(list(argv)))


def test_cli_flags_build_the_settings():
    """Each subcommand's flags become the Settings fields they name; flags not given
    leave the defaults; check's --budget stays the suite's, not Settings.budget."""
    explored = _parse(
        "explore",
        "m:f",
        "--budget",
        "12",
        "--max-steps",
        "40",
        "--time-budget",
        "3.5",
        "--no-races",
        "--stall-diagnosis",
        "0.5",
        "--backend",
        "thread",
        "--line-module",
        "json",
    )
    assert explored == Settings(
        budget=12,
        max_steps=40,
        time_budget=3.5,
        races=False,
        stall_diagnosis=0.5,
        backend="thread",
        granularity="line",
    )
    assert _parse("explore", "m:f") == Settings()
    assert _parse("replay", "x.json", "--stall-diagnosis", "4") == Settings(stall_diagnosis=4.0)
    assert _parse("show", "x.json", "--backend", "thread") == Settings(backend="thread")
    assert _parse("check", "--budget", "5", "--backend", "thread") == Settings(backend="thread")


class _Config:
    """The two pytest options the plugin reads for settings."""

    def __init__(self, **options: Any) -> None:
        self.options = {"--lockstep-budget": None, "--lockstep-backend": None, **options}

    def getoption(self, name: str) -> Any:
        return self.options[name]


def _plugin_settings(marker: dict[str, Any], **options: Any) -> Settings:
    settings: Settings = pytest_plugin._settings_for(marker, _Config(**options))  # type: ignore[arg-type]
    return settings


def test_the_plugin_builds_the_settings_from_the_marker_and_the_options():
    """Marker fields over the marker's settings, --lockstep-budget over the budget,
    --lockstep-backend only where nothing names a backend, never a progress line."""
    assert _plugin_settings({}) == Settings(progress=False)
    assert _plugin_settings({"budget": 5, "shrink": False, "patch": ["m"]}) == Settings(
        budget=5, shrink=False, progress=False
    )
    base = Settings(budget=9, keep_going=True, backend="thread")
    assert _plugin_settings({"settings": base, "max_steps": 30}) == base.replace(
        max_steps=30, progress=False
    )
    assert _plugin_settings({"budget": 5}, **{"--lockstep-budget": 2}).budget == 2
    assert _plugin_settings({}, **{"--lockstep-backend": "thread"}).backend == "thread"
    marked = _plugin_settings({"backend": "greenlet"}, **{"--lockstep-backend": "thread"})
    assert marked.backend == "greenlet"
    with pytest.raises(InvalidArgument, match="stall_diagnosis must be a positive number"):
        _plugin_settings({"stall_diagnosis": 0})
    with pytest.raises(InvalidArgumentType, match=r"\) must be a lockstep\.Settings"):
        _plugin_settings({"settings": {"budget": 3}})


def test_a_marker_with_a_bad_setting_fails_the_test_naming_it(pytester):
    """A marked test whose settings cannot be built fails with the field and the value."""
    pytester.makepyfile(
        test_bad="""
import pytest
import lockstep

@pytest.mark.lockstep(settings=lockstep.Settings(budget=3), max_steps=0)
def test_x():
    pass

@pytest.mark.lockstep(settings=lockstep.Settings(budget=3, shrink=False))
def test_y():
    pass
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(failed=1, passed=1)
    text = result.stdout.str()
    assert "max_steps must be >= 1, got 0" in text
    assert "3 executions" in text or "test_y" in text

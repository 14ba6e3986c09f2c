"""Schedules: encodings round-trip, files are created exclusively, versions are checked."""

from __future__ import annotations

import json

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lockstep import InvalidArgument, Schedule
from lockstep._schedule import choices_from_string, choices_to_string
from lockstep.errors import ScheduleExistsError, ScheduleFormatError, UnsupportedScheduleVersion
from lockstep.strategies import Choice

choices_st = st.lists(
    st.builds(Choice, st.integers(0, 40), st.sampled_from(["run", "timeout"])), max_size=200
).map(tuple)
module_name_st = st.lists(
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True), min_size=1, max_size=3
).map(".".join)
module_names_st = st.lists(module_name_st, max_size=4).map(tuple)
schedules_st = st.builds(
    Schedule,
    choices=choices_st,
    seed=st.none() | st.integers(-(2**63), 2**63),
    strategy=st.text(max_size=20),
    scenario_id=st.none() | st.text(min_size=1, max_size=40),
    granularity=st.sampled_from(["op", "line"]),
    patch=module_names_st,
    line_modules=module_names_st,
)


@given(choices_st)
def test_choices_string_round_trip(choices):
    """The run-length form decodes to exactly the encoded choices."""
    assert choices_from_string(choices_to_string(choices)) == choices


@given(schedules_st)
def test_compact_string_round_trip(schedule):
    """Schedule.from_string(to_string()) is the identity."""
    text = schedule.to_string()
    assert text.startswith("ls1:")
    assert Schedule.from_string(text) == schedule


@given(schedules_st)
def test_json_round_trip(schedule):
    """The JSON form round-trips every field."""
    assert Schedule.from_json(schedule.to_json()) == schedule


def test_run_length_form_is_readable():
    """Repeats compress as <choice>*<n>, timeouts end with t."""
    choices = (Choice(0), Choice(0), Choice(0), Choice(1), Choice(2, "timeout"), Choice(1))
    assert choices_to_string(choices) == "0*3.1.2t.1"


def test_save_is_exclusive_and_load_round_trips(tmp_path):
    """save() refuses to overwrite; load() returns the same schedule."""
    schedule = Schedule(choices=(Choice(0), Choice(1, "timeout")), seed=3, strategy="random")
    path = schedule.save(tmp_path / "sub" / "s.json")
    assert Schedule.load(path) == schedule
    with pytest.raises(ScheduleExistsError, match="refusing to overwrite"):
        schedule.save(path)
    assert Schedule.load(path) == schedule


def test_unknown_format_version_is_rejected(tmp_path):
    """A file from a future format is rejected with a clear error."""
    data = Schedule(choices=(Choice(0),)).to_dict()
    data["format_version"] = 99
    path = tmp_path / "future.json"
    path.write_text(json.dumps(data))
    with pytest.raises(UnsupportedScheduleVersion, match="format_version 99 is not supported"):
        Schedule.load(path)


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("choices", "0.x", "bad choice token 'x'"),
        ("choices", "1*0", "bad repeat count"),
        ("seed", "3", "seed must be an integer or null"),
        ("granularity", "bytecode", "granularity must be 'op' or 'line'"),
        ("strategy", 5, "strategy must be a string"),
        ("extra", 1, "unknown schedule field"),
        ("patch", "modelmanager.lifecycle", "patch must be a list of dotted module names"),
        ("patch", ["ok", ""], "patch must be a list of dotted module names"),
        ("patch", ["a..b"], "patch must be a list of dotted module names"),
        ("line_modules", [3], "line_modules must be a list of dotted module names"),
    ],
)
def test_load_validates_every_field(field, value, match):
    """Malformed fields raise ScheduleFormatError naming the field."""
    data = Schedule(choices=(Choice(0),)).to_dict()
    data[field] = value
    with pytest.raises(ScheduleFormatError, match=match):
        Schedule.from_dict(data)


def test_missing_field_and_bad_json_and_bad_string():
    """Missing fields, invalid JSON and corrupt strings are ScheduleFormatErrors."""
    data = Schedule(choices=()).to_dict()
    del data["choices"]
    with pytest.raises(ScheduleFormatError, match="missing field"):
        Schedule.from_dict(data)
    with pytest.raises(ScheduleFormatError, match="not valid JSON"):
        Schedule.from_json("{")
    with pytest.raises(ScheduleFormatError, match="starts with 'ls1:'"):
        Schedule.from_string("0.1.2")
    with pytest.raises(ScheduleFormatError, match="corrupt"):
        Schedule.from_string("ls1:!!!!")


def test_patch_and_line_modules_are_written_and_read_back(tmp_path):
    """The JSON file lists the patch and line modules in order; load restores them."""
    schedule = Schedule(
        choices=(Choice(0),),
        scenario_id="m:f",
        granularity="line",
        patch=("pkg.b", "pkg.a"),
        line_modules=("pkg.a",),
    )
    path = schedule.save(tmp_path / "s.json")
    data = json.loads(path.read_text())
    assert data["patch"] == ["pkg.b", "pkg.a"]
    assert data["line_modules"] == ["pkg.a"]
    assert Schedule.load(path) == schedule
    assert Schedule.from_string(schedule.to_string()).patch == ("pkg.b", "pkg.a")


def test_files_without_patch_fields_load_with_empty_lists():
    """Schedules written before patch/line_modules existed still load (as ())."""
    data = Schedule(choices=(Choice(0), Choice(1)), scenario_id="m:f").to_dict()
    del data["patch"], data["line_modules"]
    loaded = Schedule.from_dict(data)
    assert loaded.patch == ()
    assert loaded.line_modules == ()
    assert loaded.choices == (Choice(0), Choice(1))
    assert loaded.format_version == 1


@pytest.mark.parametrize(
    ("field", "value"),
    [("patch", ["pkg.mod"]), ("patch", ("",)), ("line_modules", ("1abc",)), ("patch", (None,))],
)
def test_constructor_validates_module_names(field, value):
    """patch / line_modules must be tuples of dotted module names."""
    with pytest.raises(InvalidArgument, match=f"{field} must be a tuple of dotted module names"):
        Schedule(choices=(), **{field: value})


def test_with_modules_replaces_only_what_is_given():
    """with_modules(patch=...) keeps line_modules and choices, and vice versa."""
    schedule = Schedule(choices=(Choice(2),), patch=("a",), line_modules=("b",))
    assert schedule.with_modules(patch=["c"]) == attrs.evolve(schedule, patch=("c",))
    assert schedule.with_modules(line_modules=()) == attrs.evolve(schedule, line_modules=())
    assert schedule.with_modules() == schedule

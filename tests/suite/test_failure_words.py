"""Failures in the user's terms (issue 33): what a failure of the check says by default.

Every known-bug variant's failure (its recorded schedule, replayed) is explained in the
manager's own calls: no spec encoding, no harness value, no harness traceback. The
spec's terms are kept for ``--verbose``. A failure raised by the user's code keeps its
traceback, the user's frames first.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest

import lockstep
from examples import own_manager
from lockstep._cli import main as lockstep_main
from models_spec import replayable
from models_spec._check.check import explore_scenario
from models_spec._check.report import explain_failure
from models_spec._harness.scenario_index import get_scenario, named_scenarios

SCHEDULES = Path(replayable.__file__).parent / "schedules"
CORPUS = sorted(p for p in SCHEDULES.glob("B*.json"))

INTERNAL = (
    "SpecState",
    "Snapshot(",
    "FakeModel(",
    "Ghost",
    "InvariantViolation",
    "models_spec.spec",
    "('admit'",
    "('evict'",
    "('complete'",
    "('restore'",
    "('remove_only'",
    "('give_back'",
    "('add',",
    "('remove',",
    "('ok',",
    "('raise',",
    "registered=",
    "lru=",
    "load_attempts",
    "admitted=(",
    "resolved_id=",
    "construct_end",
    "construct_start",
    "clear_start",
    "clear_end",
    "the spec says",
    "Traceback",
    'File "',
)
"""What a default failure message must never show: the spec's and the harness's names, a
traceback (the swimlanes name the file of each step, harness steps included)."""


CORE_WORDS = ("generation", "retiring", "lifecycle", "leasesteps", "cachebook")
"""The core's own vocabulary: a user's manager has no generations or lifecycle entries."""


@pytest.mark.parametrize("scenario_id", sorted(named_scenarios()))
def test_every_scenario_line_is_in_a_users_words(scenario_id: str) -> None:
    """The line a failure of the user's manager starts with (``Scenario <id> — <title>``)
    says what must hold in terms of the calls, not of the core's design."""
    scenario = named_scenarios()[scenario_id]
    assert not [word for word in CORE_WORDS if word in scenario.title.lower()], scenario.title


def _replayed(path: Path) -> lockstep.Failure:
    schedule = lockstep.Schedule.load(path)
    assert schedule.scenario_id is not None
    name = schedule.scenario_id.partition(":")[2]
    result = lockstep.replay(replayable.resolve(name), schedule, patch=schedule.patch)
    assert result.failure is not None, path.name
    return result.failure


def _leaks(text: str) -> list[str]:
    return [name for name in INTERNAL if name in text]


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_no_default_failure_text_shows_the_checkers_internal_names(path: Path) -> None:
    """Each variant's failure, as `lockstep replay` and `lockstep check` print it by
    default, speaks of the manager's calls only."""
    failure = _replayed(path)
    scenario = get_scenario(failure.schedule.scenario_id.partition(":")[2].rpartition("@")[0])
    check_text = explain_failure(
        failure, heading="heading", artifacts=None, scenario=scenario.story()
    )
    for text in (failure.message, failure.render(), check_text):
        assert not _leaks(text), (_leaks(text), text[:3000])


def test_the_spec_terms_are_kept_for_verbose() -> None:
    """I15's detail is the checker's own account, with the spec's encodings."""
    failure = _replayed(SCHEDULES / "B17-non-atomic-acquire.json")
    assert "('complete'" in failure.detail
    assert "SpecState" in failure.detail
    assert "('complete'" in failure.render(verbose=True)
    assert "('complete'" not in failure.render()


@pytest.mark.parametrize(
    ("schedule", "expected"),
    [
        (
            "B07-duplicate-lru.json",
            "I4 violated: the LRU order lists 'X' more than once (['X', 'X']): a correct "
            "manager keeps each loaded id exactly once in its LRU order, or evicting it "
            "leaves a stale entry behind (running then: thread T2's add_model('X'))",
        ),
        (
            "B05-failed-remove-desync.json",
            "I5 violated: thread R: remove('X') raised (its clear_cache failed), but the LRU "
            "order changed: ['A', 'X', 'B'] before the call, ['A', 'B'] after it: a remove "
            "that raises must leave the manager as it was, 'X' in the same LRU position",
        ),
        (
            "B16-error-masking.json",
            "I16 violated: thread R's remove('Y') unloaded 'Y' (its clear_cache returned), yet "
            "it raised LockTimeout: a remove whose unload succeeded must return normally, or "
            "the caller thinks the model is still loaded",
        ),
        (
            "B17-non-atomic-acquire.json",
            "I15 violated: thread U's with acquire('X') raised ModelNotFound, which no "
            "one-at-a-time order of the threads' calls explains (each call taking effect at "
            "one instant between its call and its return). The order that explains the most: "
            "main: add_model('X'); T: add_model('Z'). After those calls 'Z' was loaded, so a "
            "correct manager's with acquire('X') could not have taken effect there yet (it "
            "would still wait for another call)",
        ),
        (
            "B04-warm-fast-path.json",
            "I3 violated: thread A: add_model('X') returned normally, but at no instant "
            "between its call and its return was 'X' loaded with a model that was not being "
            "unloaded (its clear_cache ran the whole time): a correct manager's add_model "
            "returns only once the id has a live model, loading it again if it is being "
            "removed",
        ),
    ],
)
def test_exact_messages(schedule: str, expected: str) -> None:
    """A handful of messages word for word: the call, the thread, what a correct manager
    does there and why."""
    failure = _replayed(SCHEDULES / schedule)
    assert failure.message.partition(": ")[2] == expected


def _replay_cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = lockstep_main(["replay", *argv], out=out)
    return code, out.getvalue()


def test_a_replay_starts_with_the_scenario_and_shows_no_harness_traceback() -> None:
    """The scenario's title and each thread's calls first; an invariant failure is its
    message, without the checker's traceback; -v adds the checker's detail."""
    code, text = _replay_cli(str(SCHEDULES / "B07-duplicate-lru.json"))
    assert code == 1
    assert text.startswith(
        "Scenario B7-duplicate-lru-entries \u2014 two cold adds of X: the LRU never holds X "
        "twice\n  max_size 3\n  thread T1: add_model('X')\n  thread T2: add_model('X')\n"
    ), text[:400]
    assert "Traceback" not in text
    assert 'File "' not in text
    assert (
        "lockstep found a failure (invariant): invariant I4 violated after step 62: the LRU "
        "order lists 'X' more than once"
    ) in text  # the name and "violated" said once, not "... step 62: I4 violated: ..."
    for harness in ('driver.py"', 'invariants.py"', "_runtime.py", "Detail"):
        assert harness not in text, harness
    code, verbose = _replay_cli("-v", str(SCHEDULES / "B07-duplicate-lru.json"))
    assert code == 1
    assert "Detail (the check's own terms):\nlru=('X', 'X')" in verbose
    assert 'invariants.py", line' in verbose  # the whole traceback, for debugging the check


def test_show_html_starts_with_the_scenario(tmp_path: Path) -> None:
    """The HTML timeline of `lockstep show --html` opens with the scenario's story."""
    page = tmp_path / "b07.html"
    out = io.StringIO()
    code = lockstep_main(
        ["show", str(SCHEDULES / "B07-duplicate-lru.json"), "--html", str(page)], out=out
    )
    assert code == 0
    html = page.read_text(encoding="utf-8")
    head = html.index('<pre class="description">Scenario B7-duplicate-lru-entries')
    assert head < html.index('<div class="failure-box">') < html.index('<table class="timeline"')
    assert "thread T1: add_model(&#x27;X&#x27;)" in html
    assert "Traceback" not in html


class _Broken(own_manager.SerialManager):
    """A manager whose add_model raises an error of its own after loading."""

    def add_model(self, model_id: str, *args: Any, **kwargs: Any) -> None:
        super().add_model(model_id, *args, **kwargs)
        _check_invariant_of_my_own(model_id)


def _check_invariant_of_my_own(model_id: str) -> None:
    raise ValueError(f"my own bug with {model_id}")


class _BrokenAdapter(own_manager.SerialManagerAdapter):
    name = "broken"

    def build(self, registry: Any, **kwargs: Any) -> own_manager.SerialManager:
        return _Broken(registry, lock_timeout=kwargs.get("lock_timeout", 60.0))


def test_an_exception_of_the_users_code_keeps_its_traceback_the_users_frames_first() -> None:
    """The user's frames are shown, this file's first; the checker's are left out (one
    line says so)."""
    scenario = get_scenario("B10-alias-is-the-key")
    outcome = explore_scenario(scenario, _BrokenAdapter(), strategy="random", budget=1)
    failure = outcome.failure
    assert failure is not None
    assert failure.kind == "exception"
    for text in (
        failure.render(),
        explain_failure(failure, heading="h", artifacts=None, scenario=scenario.story()),
    ):
        assert "Traceback" in text
        files = re.findall(r'File "([^"]+)"', text)
        assert files, text
        assert files[0] == __file__, files
        assert not [f for f in files if f.endswith(("driver.py", "scenarios.py"))], files
        assert "ValueError: my own bug with" in text
        assert "left out" in text

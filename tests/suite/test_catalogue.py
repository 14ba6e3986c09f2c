"""The bug catalogue is derived from one module per bug, and rejects malformed modules.

`models_spec._harness.catalogue.discover` is pointed at temporary packages here: a new
bug module dropped into a package is picked up by everything derived from
the catalogue (scenarios, variants, the suite's plan and run, the corpus
file name, the invariant index, the documentation page) with no other
edit, and a malformed module fails discovery with a message naming the
file and the fix.
"""

from __future__ import annotations

import io
import itertools
import re
import textwrap
from pathlib import Path

import pytest

from lockstep.suites import SuiteOptions
from models_spec._check.suite import ModelManagerSuite, plan_jobs, table_rows
from models_spec._harness.catalogue import DOCS_PAGE, CatalogueError, discover, load

_COUNTER = itertools.count()

NEW_BUG = '''
    """B42 forgetful refresh: a refresh of an unloaded id appends it to the LRU.

    Bug path: `WithFixedSizeCache.refresh` (one override).
    """

    from modelmanager import WithFixedSizeCache
    from models_spec.bugs._support import cache_over_manager
    from models_spec._harness.catalogue import Bug, Variant
    from models_spec.scenarios import Op, Scenario, Setup


    class PhantomRefreshCache(WithFixedSizeCache):
        def refresh(self, model_id: str) -> None:
            with self._lru_guard():
                self._lru[model_id] = None


    BUG = Bug(
        id="B42",
        title="forgetful refresh",
        story="I refreshes Z, which is not loaded, while A adds X: Z becomes a phantom.",
        scenario=Scenario(
            "B42-forgetful-refresh",
            ("B42",),
            "a refresh of an unloaded id adds nothing",
            [("I", [Op("refresh", "Z")]), ("A", [Op("add", "X")])],
            Setup(max_size=2),
        ),
        variants=Variant(cache_over_manager(cache_cls=PhantomRefreshCache)),
        breaks=("I4",),
        caught_by=("pct", "random"),
    )
'''


def _package(root: Path, modules: dict[str, str]) -> str:
    """A fresh importable package under `root` holding `modules` (name -> source)."""
    name = f"bug_catalogue_probe_{next(_COUNTER)}"
    package = root / name
    package.mkdir()
    (package / "__init__.py").write_text('"""A catalogue package made by a test."""\n')
    for module, source in modules.items():
        (package / f"{module}.py").write_text(textwrap.dedent(source))
    return name


@pytest.fixture
def make_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.syspath_prepend(str(tmp_path))
    return lambda modules: _package(tmp_path, modules)


def test_a_new_bug_module_is_picked_up_with_no_other_edit(make_package) -> None:  # type: ignore[no-untyped-def]
    """One file in a package: its scenario, variant, expectations, corpus name, index
    entry and docs row exist, and the suite plans and runs it (CAUGHT, core PASS)."""
    package = make_package({"b42_forgetful_refresh": NEW_BUG})
    catalogue = discover(package)
    assert catalogue.ids == ("B42",)
    assert list(catalogue.scenarios) == ["B42-forgetful-refresh"]
    entry = catalogue.variant("variant-B42-forgetful-refresh")
    assert entry.breaks == ("I4",)
    assert entry.caught_by == ("pct", "random")
    assert entry.corpus_file == "B42-forgetful-refresh.json"
    assert entry.adapter().patch_modules()[-1].__name__ == f"{package}.b42_forgetful_refresh"
    assert catalogue.breaking("I4") == ("B42",)
    docs = catalogue.markdown()
    assert "variant-B42-forgetful-refresh" in docs
    assert "## B42: forgetful refresh" in docs

    options = SuiteOptions(budget=5)
    jobs = plan_jobs(options, catalogue=package, core_depths=(0,))
    assert [(j.scenario, j.implementation, j.role) for j in jobs] == [
        ("B42-forgetful-refresh", "core-depth0", "core"),
        ("B42-forgetful-refresh", "variant-B42-forgetful-refresh", "variant"),
    ]
    stream = io.StringIO()
    suite = ModelManagerSuite(stream=stream, catalogue=package, core_depths=(0,))
    assert suite.run(SuiteOptions(budget=5, output_dir=None)) == 0, stream.getvalue()
    rows = {row[1]: row[2] for row in table_rows(stream.getvalue())}
    assert rows == {"core-depth0": "PASS", "variant-B42-forgetful-refresh": "CAUGHT"}


BAD = [
    (
        {"bug_seven": NEW_BUG},
        r"bug_seven\.py: a bug module's name must be b<NN>_<slug>",
    ),
    ({"b42_x": '"""Doc."""\n'}, r"b42_x\.py: no module-level BUG = Bug\(\.\.\.\)"),
    ({"b42_x": '"""Doc."""\nBUG = 42\n'}, r"BUG must be a models_spec\._harness\.catalogue\.Bug"),
    (
        {"b07_forgetful_refresh": NEW_BUG},
        r"b07_forgetful_refresh\.py: BUG\.id is 'B42' but the file name says B7",
    ),
    (
        {"b42_a": NEW_BUG, "b42_b": NEW_BUG},
        r"b42_b\.py: bug id 'B42' is already declared by .*b42_a\.py",
    ),
    (
        {"b42_x": NEW_BUG.replace('"B42-forgetful-refresh",', '"forgetful-refresh",')},
        r"b42_x\.py: B42: the scenario id 'forgetful-refresh' must start with 'B42-'",
    ),
    (
        {"b42_x": NEW_BUG.replace('("B42",),', '("B7",),')},
        r"the scenario's bugs must be \('B42',\)",
    ),
    (
        {"b42_x": NEW_BUG.replace('breaks=("I4",)', 'breaks=("I99",)')},
        r"Bug\.breaks names unknown invariants \['I99'\].*failure kinds \['data-race'",
    ),
    (
        {"b42_x": NEW_BUG.replace('breaks=("I4",)', "breaks=()")},
        r"Bug\.breaks must name at least one invariant",
    ),
    (
        {"b42_x": NEW_BUG.replace('caught_by=("pct", "random")', 'caught_by=("luck",)')},
        r"caught_by names unknown strategies \['luck'\]",
    ),
    (
        {
            "b42_x": NEW_BUG.replace(
                'story="I refreshes Z, which is not loaded, while A adds X: Z becomes a phantom."',
                'story="   "',
            )
        },
        r"Bug\.story must be a non-empty str",
    ),
    (
        {
            "b42_x": NEW_BUG.replace(
                "cache_cls=PhantomRefreshCache))",
                "cache_cls=PhantomRefreshCache), capabilities=frozenset({'lru'}))",
            )
        },
        r"variant-B42-x lacks capabilities \['refresh'\] that its scenario",
    ),
    (
        {
            "b42_x": NEW_BUG.replace(
                "variants=Variant(cache_over_manager(cache_cls=PhantomRefreshCache)),",
                "variants=[Variant(cache_over_manager()), Variant(cache_over_manager())],",
            )
        },
        r"every variant after the first needs its own slug",
    ),
    (
        {"b42_x": NEW_BUG.split('"""', 2)[2]},
        r"needs a module docstring",
    ),
]


@pytest.mark.parametrize(("modules", "message"), BAD, ids=[m for _, m in BAD])
def test_a_malformed_bug_module_fails_discovery_precisely(make_package, modules, message) -> None:  # type: ignore[no-untyped-def]
    """Discovery raises CatalogueError naming the file, the field and the fix."""
    package = make_package(modules)
    with pytest.raises(CatalogueError, match=message):
        discover(package)


def test_lockstep_verdict_kinds_count_as_breaks(make_package) -> None:  # type: ignore[no-untyped-def]
    """A bug caught by lockstep itself (a data race, a deadlock) declares that kind."""
    source = NEW_BUG.replace('breaks=("I4",)', 'breaks=("I4", "data-race", "deadlock")')
    entry = discover(make_package({"b42_x": source})).variant("variant-B42-x")
    assert entry.breaks == ("I4", "data-race", "deadlock")


def test_docs_page_is_generated_from_the_catalogue() -> None:
    """docs/bugs.md is what the catalogue derives (rewrite it with
    `python3 -m models_spec._harness.catalogue --write-docs`)."""
    assert DOCS_PAGE.read_text(encoding="utf-8") == load().markdown(), (
        "docs/bugs.md is stale: run python3 -m models_spec._harness.catalogue --write-docs"
    )


def test_readme_names_no_stale_bug_count() -> None:
    """The README counts nothing the catalogue derives, or counts it right."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    catalogue = load()
    for last in re.findall(r"B1[\u2013-]B(\d+)", readme):
        assert int(last) == catalogue.bugs[-1].number, f"README says B1-B{last}"
    for caught, total in re.findall(r"(\d+)/(\d+) variants caught", readme):
        assert int(total) == len(catalogue.variant_entries), f"README says {caught}/{total}"

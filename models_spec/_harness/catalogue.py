"""The bug catalogue: one module per bug, discovered and validated; everything else derived.

Each known bug lives in ONE module of a catalogue package (`models_spec.bugs`
by default) named ``bNN_<slug>.py`` (``b07_duplicate_lru.py`` is B7).  The
module holds the code of the bug's known-bug variant(s) and one module-level
declaration::

    BUG = Bug(
        id="B7",
        title="duplicate LRU entries",
        story="T1 and T2 both add X ... (the interleaving, thread by thread)",
        scenario=Scenario("B7-duplicate-lru-entries", ("B7",), ...),
        variants=Variant(cache_over_manager(cache_cls=AppendBeforeLoadCache)),
        breaks=("I4",),
        caught_by=("pct", "dpor", "random"),
    )

Everything else is derived from those declarations by `discover` (cached
per package by `load`): the named scenarios (`BugCatalogue.scenarios`), the
variant registry (`BugCatalogue.variants`, what ``lockstep check`` runs), the
expectations the suite's tests check (each variant's `breaks` and
`caught_by`), the corpus file names (`VariantEntry.corpus_file`), the
invariant -> bugs index and the documentation table (`BugCatalogue.markdown`,
checked in as ``docs/bugs.md``).  Adding a bug is one new file plus its
recorded schedule (``python3 -m models_spec.record_corpus --bug B22``, which
also rewrites ``docs/bugs.md``); nothing else names it.

Validation happens when a module is imported (`Bug` and `Variant` check their
own fields) and at discovery (what needs the file name or the other modules),
before anything runs; a malformed module raises `CatalogueError` naming the
file and what to change, the way Hypothesis rejects a mis-declared state
machine at definition time:

* a public module whose name is not ``bNN_<slug>`` (lower case), or that has
  no ``BUG`` (or a ``BUG`` that is not a `Bug`);
* an id that does not match the file name's number;
* two modules declaring one id, one scenario id or one variant name;
* a scenario whose id does not start with ``"<id>-"`` or whose ``bugs`` is
  not ``(id,)``; a variant lacking a capability its scenario needs;
* unknown invariant ids (or lockstep failure kinds such as ``deadlock`` and
  ``data-race``) in `breaks`, unknown strategy names in `caught_by`,
  empty titles or stories, two variants of one bug with one slug.

Modules whose names start with ``_`` are support code and are not bugs.
Thread-safety: a catalogue is immutable once discovered; `load` caches.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Final

import attrs

from models_spec.adapter import CAPABILITIES, ManagerAdapter
from models_spec.bugs._support import StackBuilder, VariantAdapter
from models_spec.scenarios import Scenario

__all__ = [
    "DEFAULT_PACKAGE",
    "DOCS_PAGE",
    "SEARCH_STRATEGIES",
    "Bug",
    "BugCatalogue",
    "CatalogueError",
    "Variant",
    "VariantEntry",
    "discover",
    "load",
    "variant_adapter",
]

DEFAULT_PACKAGE: Final = "models_spec.bugs"
"""The package `load()` discovers when given no other."""

DOCS_PAGE: Final = Path(__file__).resolve().parents[2] / "docs" / "bugs.md"
"""Where the generated documentation page lives in a source checkout."""

SEARCH_STRATEGIES: Final = ("pct", "dpor", "random", "dfs")
"""Names `caught_by` may use (lockstep's search strategies)."""

_ID = re.compile(r"B([1-9][0-9]*)")
_MODULE = re.compile(r"b([0-9]{2,})_([a-z0-9]+(?:_[a-z0-9]+)*)")
_SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


class CatalogueError(ValueError):
    """A bug module is malformed (the message names the file, the field and the fix)."""


def _invariant_ids() -> frozenset[str]:
    from models_spec.invariants import CATALOGUE  # noqa: PLC0415 - invariants import the spec

    return frozenset(CATALOGUE)


_HARNESS_KINDS: Final = frozenset({"invariant", "exception", "divergence", "nondeterminism"})


def _known_labels() -> frozenset[str]:
    """What a catch may be named: an invariant id, or a lockstep failure kind that is
    itself a verdict on the code (``deadlock``, ``data-race``, ``stall``, ...)."""
    from lockstep.report import FAILURE_KINDS  # noqa: PLC0415

    return _invariant_ids() | (frozenset(FAILURE_KINDS) - _HARNESS_KINDS)


def _names(value: str | Iterable[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def _check_text(name: str, value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        raise CatalogueError(f"{name} must be a non-empty str (got {value!r})")


def _check_breaks(name: str, value: tuple[str, ...] | None, *, required: bool) -> None:
    if value is None and not required:
        return
    if not value:
        raise CatalogueError(
            f"{name} must name at least one invariant the variant breaks (e.g. ('I4',))"
        )
    unknown = sorted(set(value) - _known_labels())
    if unknown:
        invariants = sorted(_invariant_ids(), key=lambda i: int(i[1:]))
        kinds = sorted(_known_labels() - _invariant_ids())
        raise CatalogueError(
            f"{name} names unknown invariants {unknown}; known: {invariants} "
            f"(models_spec.invariants) or the lockstep failure kinds {kinds}"
        )


def _check_caught_by(name: str, value: tuple[str, ...] | None) -> None:
    if value is None:
        return
    unknown = sorted(set(value) - set(SEARCH_STRATEGIES))
    if unknown:
        raise CatalogueError(
            f"{name} names unknown strategies {unknown}; use some of {list(SEARCH_STRATEGIES)}"
        )
    if len(set(value)) != len(value):
        raise CatalogueError(f"{name} lists a strategy twice: {list(value)}")


def _optional_names(value: str | Iterable[str] | None) -> tuple[str, ...] | None:
    return None if value is None else _names(value)


@attrs.frozen
class Variant:
    """One way of putting a bug back into the core (declared in its bug module).

    `build` is a stack builder (``models_spec.bugs._support``), called with
    `ManagerAdapter.build`'s keywords.  `slug` names it
    (``variant-<bug id>-<slug>``); None, allowed for a bug's first variant
    only, takes the module's slug (``b07_duplicate_lru`` -> ``duplicate-lru``).
    `breaks` / `caught_by` override the bug's for this variant.
    """

    build: StackBuilder
    slug: str | None = None
    capabilities: frozenset[str] = CAPABILITIES
    breaks: tuple[str, ...] | None = attrs.field(default=None, converter=_optional_names)
    caught_by: tuple[str, ...] | None = attrs.field(default=None, converter=_optional_names)

    def __attrs_post_init__(self) -> None:
        if not callable(self.build):
            raise CatalogueError(f"Variant.build must be a stack builder (got {self.build!r})")
        if self.slug is not None and (
            not isinstance(self.slug, str) or not _SLUG.fullmatch(self.slug)
        ):
            raise CatalogueError(
                f"Variant.slug must be lower-case words joined by '-' (got {self.slug!r})"
            )
        if not isinstance(self.capabilities, frozenset) or not self.capabilities <= CAPABILITIES:
            raise CatalogueError(
                f"Variant.capabilities must be a frozenset within {sorted(CAPABILITIES)} "
                f"(got {self.capabilities!r})"
            )
        _check_breaks("Variant.breaks", self.breaks, required=False)
        _check_caught_by("Variant.caught_by", self.caught_by)


def _variants(value: Variant | Iterable[Variant]) -> tuple[Variant, ...]:
    return (value,) if isinstance(value, Variant) else tuple(value)


@attrs.frozen
class Bug:
    """The declaration a bug module makes as ``BUG`` (see the module docstring).

    * `id`: ``"B7"``; must match the file name's number.
    * `title`: a few words; `story`: the interleaving, thread by thread.
    * `scenario`: the named scenario that catches it, id ``"<id>-<slug>"``,
      ``bugs == (id,)``.
    * `variants`: one `Variant` or several (ways of putting the bug back).
    * `breaks`: the invariants its variants may break (any counts as
      caught; the recorded schedule must break one of them); a lockstep
      failure kind that judges the code (``deadlock``, ``data-race``,
      ``stall``) counts as well.
    * `caught_by`: the search strategies expected to catch every variant
      within the suite's default budget (checked by the tests); () = no
      expectation.
    * `module`: filled in by discovery.
    """

    id: str
    title: str
    story: str
    scenario: Scenario
    variants: tuple[Variant, ...] = attrs.field(converter=_variants)
    breaks: tuple[str, ...] = attrs.field(converter=_names)
    caught_by: tuple[str, ...] = attrs.field(default=(), converter=_names)
    module: str = ""

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.id, str) or not _ID.fullmatch(self.id):
            raise CatalogueError(f"Bug.id must look like 'B7' (got {self.id!r})")
        _check_text(f"{self.id}: Bug.title", self.title)
        _check_text(f"{self.id}: Bug.story", self.story)
        if not isinstance(self.scenario, Scenario):
            raise CatalogueError(
                f"{self.id}: Bug.scenario must be a models_spec.scenarios.Scenario "
                f"(got {self.scenario!r})"
            )
        if not self.scenario.id.startswith(f"{self.id}-"):
            raise CatalogueError(
                f"{self.id}: the scenario id {self.scenario.id!r} must start with "
                f"'{self.id}-' (e.g. '{self.id}-what-goes-wrong')"
            )
        if self.scenario.bugs != (self.id,):
            raise CatalogueError(
                f"{self.id}: the scenario's bugs must be ({self.id!r},) "
                f"(got {self.scenario.bugs!r})"
            )
        if not self.variants or not all(isinstance(v, Variant) for v in self.variants):
            raise CatalogueError(f"{self.id}: Bug.variants must be one Variant or several")
        slugs = [v.slug for v in self.variants]
        if None in slugs[1:]:
            raise CatalogueError(
                f"{self.id}: every variant after the first needs its own slug "
                "(Variant(..., slug='what-differs'))"
            )
        if len(set(slugs)) != len(slugs):
            raise CatalogueError(f"{self.id}: two variants share the slug {slugs}")
        _check_breaks(f"{self.id}: Bug.breaks", self.breaks, required=True)
        _check_caught_by(f"{self.id}: Bug.caught_by", self.caught_by)

    @property
    def number(self) -> int:
        """7 for "B7"."""
        return int(self.id[1:])

    @property
    def module_slug(self) -> str:
        """``duplicate-lru`` for ``...b07_duplicate_lru``."""
        match = _MODULE.fullmatch(self.module.rpartition(".")[2])
        return match.group(2).replace("_", "-") if match else ""


@attrs.frozen
class VariantEntry:
    """One known-bug variant as the catalogue derives it from its bug's declaration."""

    bug: Bug
    variant: Variant
    name: str
    breaks: tuple[str, ...]
    caught_by: tuple[str, ...]

    @property
    def corpus_file(self) -> str:
        """The recorded schedule's file name, ``B07-duplicate-lru.json``."""
        return f"B{self.bug.number:02d}-{self.name.split('-', 2)[2]}.json"

    @property
    def scenario(self) -> Scenario:
        """The bug's named scenario (the one this variant is run against)."""
        return self.bug.scenario

    def adapter(self) -> VariantAdapter:
        """A fresh adapter building this variant's stack."""
        return VariantAdapter(
            self.bug.id, self.name, self.bug.module, self.variant.build, self.variant.capabilities
        )


def _entries(bug: Bug) -> tuple[VariantEntry, ...]:
    entries = []
    for variant in bug.variants:
        slug = variant.slug if variant.slug is not None else bug.module_slug
        entries.append(
            VariantEntry(
                bug,
                variant,
                f"variant-{bug.id}-{slug}",
                variant.breaks if variant.breaks is not None else bug.breaks,
                variant.caught_by if variant.caught_by is not None else bug.caught_by,
            )
        )
    return tuple(entries)


@attrs.frozen
class BugCatalogue:
    """The bugs of one package, in bug order, and every view derived from them."""

    package: str
    bugs: tuple[Bug, ...]
    variant_entries: tuple[VariantEntry, ...] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        entries = tuple(entry for bug in self.bugs for entry in _entries(bug))
        object.__setattr__(self, "variant_entries", entries)

    @property
    def ids(self) -> tuple[str, ...]:
        """``("B1", "B2", ...)``."""
        return tuple(bug.id for bug in self.bugs)

    @property
    def scenarios(self) -> Mapping[str, Scenario]:
        """The named scenarios by id, in bug order."""
        return {bug.scenario.id: bug.scenario for bug in self.bugs}

    @property
    def variants(self) -> Mapping[str, VariantEntry]:
        """The variants by name (``variant-B7-duplicate-lru``), in bug order."""
        return {entry.name: entry for entry in self.variant_entries}

    def bug(self, bug_id: str) -> Bug:
        """The bug called `bug_id`; KeyError naming the known ids."""
        for bug in self.bugs:
            if bug.id == bug_id:
                return bug
        raise KeyError(f"no bug {bug_id!r} in {self.package}; known: {', '.join(self.ids)}")

    def variant(self, name: str) -> VariantEntry:
        """The variant called `name`; KeyError naming the known ones."""
        try:
            return self.variants[name]
        except KeyError:
            raise KeyError(
                f"no variant {name!r} in {self.package}; known: {', '.join(self.variants)}"
            ) from None

    def variants_of(self, bug_id: str) -> tuple[VariantEntry, ...]:
        """The variants of the bug called `bug_id`, its first one first (KeyError if unknown)."""
        self.bug(bug_id)
        return tuple(e for e in self.variant_entries if e.bug.id == bug_id)

    def breaking(self, invariant: str) -> tuple[str, ...]:
        """The bugs whose variants may break `invariant` (the invariant -> bugs index)."""
        return tuple(dict.fromkeys(e.bug.id for e in self.variant_entries if invariant in e.breaks))

    def markdown(self) -> str:
        """The documentation page (``docs/bugs.md``): a table, then one section per bug."""
        from models_spec.invariants import CATALOGUE  # noqa: PLC0415

        lines = [
            "# The bug catalogue",
            "",
            "Generated from the bug modules of `models_spec/bugs/` by",
            "`python3 -m models_spec._harness.catalogue --write-docs` (the corpus recorder",
            "rewrites it too); a test checks it is current. Each bug is one module",
            "holding its scenario, its known-bug variant(s), the invariants they break",
            "and the story below; `CONTRIBUTING.md` shows how to add one.",
            "",
            f"{len(self.bugs)} bugs, {len(self.variant_entries)} known-bug variants.",
            "",
            "| bug | title | scenario | variant | breaks | caught by | corpus |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        for entry in self.variant_entries:
            lines.append(
                f"| {entry.bug.id} | {entry.bug.title} | `{entry.bug.scenario.id}` | "
                f"`{entry.name}` | {' '.join(entry.breaks)} | "
                f"{', '.join(entry.caught_by) or '-'} | `{entry.corpus_file}` |"
            )
        lines += ["", "## Invariants and the bugs that break them", ""]
        lines += ["| invariant | title | bugs |", "| --- | --- | --- |"]
        for inv_id, info in CATALOGUE.items():
            lines.append(f"| {inv_id} | {info.title} | {' '.join(self.breaking(inv_id)) or '-'} |")
        for bug in self.bugs:
            lines += ["", f"## {bug.id}: {bug.title}", "", _paragraph(bug.story), ""]
            lines += ["```", bug.scenario.describe(), "```", ""]
            lines.append(f"Module: `{bug.module}`.")
        return "\n".join(lines) + "\n"


def _paragraph(text: str) -> str:
    return " ".join(text.split())


def _module_error(module: str, message: str) -> CatalogueError:
    path = module.replace(".", "/") + ".py"
    return CatalogueError(f"{path}: {message}")


def _load_bug(package: str, name: str) -> Bug:
    module_name = f"{package}.{name}"
    match = _MODULE.fullmatch(name)
    if match is None:
        raise _module_error(
            module_name,
            "a bug module's name must be b<NN>_<slug> in lower case (e.g. b07_duplicate_lru); "
            "support modules start with '_'",
        )
    try:
        module: ModuleType = importlib.import_module(module_name)
    except CatalogueError as error:
        raise _module_error(module_name, str(error)) from None
    bug = getattr(module, "BUG", None)
    if bug is None:
        raise _module_error(module_name, "no module-level BUG = Bug(...) declaration")
    if not isinstance(bug, Bug):
        raise _module_error(
            module_name,
            f"BUG must be a models_spec._harness.catalogue.Bug (got {type(bug).__name__})",
        )
    if bug.number != int(match.group(1)):
        raise _module_error(
            module_name,
            f"BUG.id is {bug.id!r} but the file name says B{int(match.group(1))}: rename "
            f"the file to b{bug.number:02d}_{match.group(2)}.py or fix the id",
        )
    if not (module.__doc__ or "").strip():
        raise _module_error(module_name, "needs a module docstring (the bug path of its variant)")
    return attrs.evolve(bug, module=module_name)


def _check_unique(bugs: Sequence[Bug], what: str, key: Callable[[Bug], Iterable[str]]) -> None:
    seen: dict[str, str] = {}
    for bug in bugs:
        for value in key(bug):
            if value in seen:
                raise _module_error(
                    bug.module, f"{what} {value!r} is already declared by {seen[value]}"
                )
            seen[value] = bug.module.replace(".", "/") + ".py"


def discover(package: str = DEFAULT_PACKAGE) -> BugCatalogue:
    """Import every bug module of `package`, validate, and build the catalogue.

    Raises `CatalogueError` for a malformed module (see the module docstring)
    and ImportError when `package` cannot be imported.  Not cached: `load`
    is.
    """
    pkg = importlib.import_module(package)
    names = sorted(
        info.name
        for info in pkgutil.iter_modules(getattr(pkg, "__path__", []))
        if not info.name.startswith("_")
    )
    bugs = sorted((_load_bug(package, name) for name in names), key=lambda bug: bug.number)
    _check_unique(bugs, "bug id", lambda bug: [bug.id])
    _check_unique(bugs, "scenario id", lambda bug: [bug.scenario.id])
    catalogue = BugCatalogue(package, tuple(bugs))
    seen: dict[str, str] = {}
    for entry in catalogue.variant_entries:
        if entry.name in seen:
            raise _module_error(
                entry.bug.module, f"variant name {entry.name!r} is already declared"
            )
        seen[entry.name] = entry.bug.module
        missing = sorted(entry.bug.scenario.all_needs - entry.variant.capabilities)
        if missing:
            raise _module_error(
                entry.bug.module,
                f"{entry.name} lacks capabilities {missing} that its scenario "
                f"{entry.bug.scenario.id!r} needs (it would only ever be skipped)",
            )
    return catalogue


@functools.cache
def load(package: str = DEFAULT_PACKAGE) -> BugCatalogue:
    """The catalogue of `package`, discovered once per process (see `discover`)."""
    return discover(package)


def variant_adapter(name: str, package: str = DEFAULT_PACKAGE) -> ManagerAdapter:
    """A fresh adapter of the variant called `name` (KeyError naming the known ones)."""
    return load(package).variant(name).adapter()


def _main(argv: Sequence[str] | None = None) -> int:
    import argparse  # noqa: PLC0415

    parser = argparse.ArgumentParser(prog="python3 -m models_spec._harness.catalogue")
    parser.add_argument("--package", default=DEFAULT_PACKAGE)
    parser.add_argument(
        "--write-docs",
        nargs="?",
        const=str(DOCS_PAGE),
        help=f"write the documentation page (default {DOCS_PAGE})",
    )
    args = parser.parse_args(argv)
    text = load(args.package).markdown()
    if args.write_docs:
        Path(args.write_docs).write_text(text, encoding="utf-8")
        print(f"wrote {args.write_docs}")
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    # Bug modules import `models_spec._harness.catalogue`, not `__main__`: run that module's copy.
    from models_spec._harness.catalogue import _main as _catalogue_main

    raise SystemExit(_catalogue_main())

"""Search past the default check: ``python3 -m models_spec.hunt [--first 4] [--count 20]``.

The default ``lockstep check`` runs each scenario once per strategy with seed
0 and a small budget, so that it answers in seconds. A core change deserves
more: this runs the seeded scenario families (``random-<k>``, ``basic-<k>``
and ``mixed-<k>``, which adds pins and leases with ops inside them,
`models_spec.scenarios`) for ``k`` in ``[first, first +
count)`` (``--ops`` per thread) against each implementation (default: the core's cells of the
check, `DEFAULT_CELLS`), with the random and PCT strategies seeded ``k``
too, ``budget`` executions each. Every search of it found core/spec
disagreements the default check had not (``tests/suite/test_known_core_gaps.py``,
``tests/spec/test_swallowed_timeouts.py``).

``mixed-<k>`` is not run on a ``wait`` cell: its pinned adds can fill the
cache with pins nobody unpins, and a cold add then waits for an unpin until
its timeout, as ``on_full="wait"`` is documented to, which I17 reports as a
deadlock masked by timeouts.

One line per failure: the scenario, the implementation, the strategy, the
seed, the execution that failed and the failure's first line, then the
command that reruns that one search with shrinking and prints the whole
explanation (``--shrink``). Exit status 0 when nothing failed, 1 when
something did, 2 for a bad argument (one line says which).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Final, TextIO

import attrs

from models_spec._check.check import CheckOutcome, explore_scenario
from models_spec._check.suite import adapter_for
from models_spec.scenarios import Scenario, basic_scenario, mixed_scenario, random_scenario

__all__ = ["DEFAULT_CELLS", "FAMILIES", "Finding", "hunt", "main"]

DEFAULT_CELLS: Final = (
    "core-depth0",
    "core-depth1",
    "core-depth0-wait",
    "core-depth0-refuse",
    "core-depth0-weighted",
)
"""The core's cells that the check runs on seeded scenarios (depth 0 with each full-cache
policy and with weights, and one decorator over it)."""

FAMILIES: Final[dict[str, Callable[..., Scenario]]] = {
    "random": random_scenario,
    "basic": basic_scenario,
    "mixed": mixed_scenario,
}
"""The seeded scenario families, by the prefix of their ids."""

_STRATEGIES: Final = ("random", "pct")
_OPS: Final = 2  # ops per thread of the seeded families by default


@attrs.frozen
class Finding:
    """One search that failed: what ran, and the failure's first line."""

    scenario: str
    implementation: str
    strategy: str
    seed: int
    executions: int
    summary: str
    ops: int = _OPS

    def command(self) -> str:
        """The command that reruns this one search with shrinking (the whole explanation)."""
        family = self.scenario.partition("-")[0]
        ops = "" if self.ops == _OPS else f"--ops {self.ops} "
        return (
            f"python3 -m models_spec.hunt --first {self.seed} --count 1 --families {family} "
            f"--implementations {self.implementation} --strategies {self.strategy} "
            f"{ops}--shrink"
        )


def hunt(
    first: int,
    count: int,
    *,
    implementations: Sequence[str] = DEFAULT_CELLS,
    families: Sequence[str] = tuple(FAMILIES),
    strategies: Sequence[str] = _STRATEGIES,
    budget: int = 80,
    ops: int = _OPS,
    shrink: bool = False,
) -> Iterator[tuple[Finding, CheckOutcome]]:
    """Run every search (module doc) and yield each failure as it is found.

    Raises `ValueError` for a bad size, family or strategy and `KeyError` for an
    unknown implementation, before anything runs.
    """
    for name, value, low in (("first", first, 0), ("count", count, 1), ("budget", budget, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an int >= {low} (got {value!r})")
    if isinstance(ops, bool) or not isinstance(ops, int) or not 1 <= ops <= 6:
        raise ValueError(f"ops must be an int in 1..6 (got {ops!r})")
    for family in families:
        if family not in FAMILIES:
            raise ValueError(f"unknown family {family!r}; known: {', '.join(FAMILIES)}")
    for strategy in strategies:
        if strategy not in _STRATEGIES:
            raise ValueError(f"unknown strategy {strategy!r}; known: {', '.join(_STRATEGIES)}")
    adapters = {name: adapter_for(name) for name in implementations}
    for seed in range(first, first + count):
        for family in families:
            scenario = FAMILIES[family](seed, ops=ops)
            for name, adapter in adapters.items():
                if family == "mixed" and getattr(adapter, "on_full", None) == "wait":
                    continue  # a cache full of pins: the wait for an unpin is I17 by design
                for strategy in strategies:
                    outcome = explore_scenario(
                        scenario,
                        adapter,
                        strategy=strategy,
                        seed=seed,
                        budget=budget,
                        shrink=shrink,
                    )
                    if outcome.failure is None:
                        continue
                    summary = str(outcome.failure).splitlines()[0]
                    finding = Finding(
                        scenario.id, name, strategy, seed, outcome.executions, summary, ops
                    )
                    yield finding, outcome


def _names(text: str) -> tuple[str, ...]:
    return tuple(part for part in text.split(",") if part)


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """The command line (module doc); returns the exit status."""
    out = sys.stdout if out is None else out
    parser = argparse.ArgumentParser(
        prog="python3 -m models_spec.hunt", description=__doc__.split("\n\n")[1]
    )
    parser.add_argument("--first", type=int, default=4, help="first seed (default: 4)")
    parser.add_argument("--count", type=int, default=20, help="how many seeds (default: 20)")
    parser.add_argument("--budget", type=int, default=80, help="executions per search")
    parser.add_argument(
        "--ops", type=int, default=_OPS, help=f"ops per thread, 1 to 6 (default: {_OPS})"
    )
    parser.add_argument(
        "--implementations",
        type=_names,
        default=DEFAULT_CELLS,
        help="comma-separated cell names, core or known-bug variants (default: the core's)",
    )
    parser.add_argument("--families", type=_names, default=tuple(FAMILIES))
    parser.add_argument("--strategies", type=_names, default=_STRATEGIES)
    parser.add_argument(
        "--shrink", action="store_true", help="shrink each failure and print all of it"
    )
    args = parser.parse_args(argv)
    found = 0
    try:
        for finding, outcome in hunt(
            args.first,
            args.count,
            implementations=args.implementations,
            families=args.families,
            strategies=args.strategies,
            budget=args.budget,
            ops=args.ops,
            shrink=args.shrink,
        ):
            found += 1
            print(
                f"FAIL {finding.scenario} {finding.implementation} {finding.strategy} "
                f"seed={finding.seed} at execution {finding.executions}: {finding.summary}",
                file=out,
            )
            print(f"  rerun: {finding.command()}", file=out)
            if args.shrink:
                print(str(outcome.failure), file=out)
    except (ValueError, KeyError) as error:
        print(f"models_spec.hunt: {error.args[0] if error.args else error}", file=sys.stderr)
        return 2
    print(f"{found} failing search(es)", file=out)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

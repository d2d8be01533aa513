"""What the hard tier's gates do to a fault kind moved to another root (docs/environment.md §6.20).

    python env/tools/reroot_probe.py 11-16

The hard tier needs footprints that several answers share, and the obvious way to get more answers
is to move a kind whose rule means something on several services (a certificate, a pool, a
resolver, the replicas, a CPU limit) to the roots the matrix has no row for. This tool makes each
such incident from the matrix row of its kind (every service name in its injection, fix and
certificates moved, the propagation the topology gives), places it in a hard slot of the set of
each seed given, exactly as a generated set's donor is placed (4 worlds, range learners refused),
and prints how many seeds yield a hard task and what refused the others. Nothing here is used by
the generator: a tool for whoever grows the incident space.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from typing import Final

from srez_env.generator import matrix, space
from srez_env.generator.matrix import Row
from srez_env.generator.sets import GenerationError, realise
from srez_env.generator.space import callers_up, moved

__all__ = ["MOVABLE", "callers_up", "candidates", "moved", "probe"]

MOVABLE: Final = {
    "K02": ("gateway", "auth", "payments", "db"),
    "K03": ("auth", "payments"),
    "K08": ("gateway", "auth", "payments"),
    "K13": ("gateway", "auth", "payments", "db", "cache"),
    "K14": ("gateway", "auth", "payments", "db", "cache"),
}
"""The kinds whose rule reads a key every listed service has, and those services."""
SLOT: Final = "sre-009"
"""The hard slot the incidents are placed in (its name only: a variant brings its own story)."""


def candidates() -> list[Row]:
    """One moved incident per (root, kind) the matrix has no row for."""
    rows = matrix.load().rows
    have = {(r.root, r.kind) for r in rows}
    out: list[Row] = []
    for row in rows:
        for service in MOVABLE.get(row.kind, ()):
            if (service, row.kind) not in have:
                have.add((service, row.kind))
                out.append(moved(row, service))
    return out


def probe(row: Row, seeds: list[int]) -> tuple[int, Counter[str]]:
    """Seeds whose hard slot takes ``row``'s incident, and what refused the others."""
    slot = next(r for r in matrix.load().rows if r.id == SLOT)
    made, refused = 0, Counter[str]()
    for seed in seeds:
        try:
            realise(space.variant(row, slot), seed, SLOT, space.DONOR_WORLDS, exposed_ok=False)
            made += 1
        except (GenerationError, ValueError) as e:
            found = re.search(r"last problem: (.*?)(?: \(|\)$|$)", str(e))
            refused[found.group(1) if found else str(e).splitlines()[0]] += 1
    return made, refused


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("seeds", help="a seed or a range (11-16)")
    args = parser.parse_args(argv)
    first, _, last = args.seeds.partition("-")
    seeds = list(range(int(first), int(last or first) + 1))
    kinds = matrix.load().kind_name
    for row in candidates():
        made, refused = probe(row, seeds)
        why = "; ".join(f"{text} ({n})" for text, n in refused.most_common())
        print(f"{row.root}/{kinds[row.kind]}: {made} of {len(seeds)} seeds  {why}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Survey the hard tier's footprints and write the generator's table (docs/environment.md §6.20).

    python env/tools/footprint_table.py [--seeds 101-110] [--jobs 2]

Tries every donor of the incident space on every hard slot of the sets of the seeds given (the
generator's reference seeds by default), as the generator places a donor, and counts which
footprint each valid hard task shows (:mod:`srez_env.generator.footprints`). Writes
``env/srez_env/generator/footprints.json``. Rerun it after a change to the engine, the logs, the
matrix or the space: ``tests/env/test_footprints.py`` fails while the table is stale. Takes some
ten minutes on two cores.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

Hit = tuple[str, frozenset[str] | None, tuple[int, str, str, str]]
TABLE = Path(__file__).resolve().parents[1] / "srez_env" / "generator" / "footprints.json"


def survey(seed: int) -> list[Hit]:
    """(answer, footprint or None when no valid task, witness) of every donor on every hard
    slot of the set of ``seed``, each under the id the slot's task has in that set."""
    from srez_env.generator import footprints, sets, space

    rows = sets.select_rows(None, None)
    order = sets.shuffled_order(seed, 0, len(rows))
    out: list[Hit] = []
    for index, slot in enumerate(rows):
        if slot.tier != "H" or slot.kind == "K00":
            continue
        task_id = sets.member_id(seed, order.index(index))
        for donor in space.donors(slot, sets._fault_rows(rows), seed):
            answer = footprints.answer_key(donor.root, donor.kind)
            witness = (seed, slot.id, donor.id, task_id)
            try:
                task = sets.donor_task(donor, slot, seed, task_id, 0)
            except ValueError:  # GenerationError included: no valid hard task in its worlds
                out.append((answer, None, witness))
                continue
            out.append((answer, footprints.footprint(task), witness))
    return out


def seeds_of(text: str) -> list[int]:
    first, _, last = text.partition("-")
    return list(range(int(first), int(last or first) + 1))


def main(argv: list[str] | None = None) -> int:
    from srez_core.atomic import atomic_write_bytes
    from srez_env.generator import footprints, sets

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = f"{sets.REFERENCE_SEEDS[0]}-{sets.REFERENCE_SEEDS[-1]}"
    parser.add_argument("--seeds", default=default, help=f"a seed or a range (default {default})")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=TABLE)
    args = parser.parse_args(argv)
    seeds = seeds_of(args.seeds)
    tries: Counter[str] = Counter()
    hits: dict[frozenset[str], Counter[str]] = defaultdict(Counter)
    witnesses: dict[frozenset[str], tuple[int, str, str, str]] = {}
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            surveys = list(pool.map(survey, seeds))
    else:  # in this process: the tool may be loaded from its path, which workers cannot import
        surveys = [survey(seed) for seed in seeds]
    for found in surveys:
        for answer, seen, witness in found:
            tries[answer] += 1
            if seen is not None:
                hits[seen][answer] += 1
                witnesses.setdefault(seen, witness)
    data = footprints.to_json(seeds, tries, hits, witnesses)
    atomic_write_bytes(args.out, (json.dumps(data, indent=1) + "\n").encode())
    table = footprints.from_json(data)
    print(f"{sum(tries.values())} tries, {len(hits)} footprints, {len(table.answers)} shared:")
    for seen, answers in table.answers.items():
        down = sorted(f.removeprefix("status:") for f in seen if f.startswith("status:"))
        rates = ", ".join(f"{a} {hits[seen][a] / tries[a]:.2f}" for a in answers)
        print(f"  {' '.join(d for d in down if not d.endswith(':healthy'))}: {rates}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

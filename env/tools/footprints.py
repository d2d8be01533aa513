"""How much a hard task's T0 footprint gives away (docs/environment.md §6.20): the hard tasks of
the generated sets of the seeds given, the nearest-signature learner fit on the other sets each
time, and the best any lookup could do grouping by the signature and by the statuses alone.

    python env/tools/footprints.py 11-22 [--jobs 2]

Prints the learner's leave-one-set-out passes, the two ceilings, the share of tasks in groups of
one answer, and the groups of the statuses with their answers, largest first. Slow (a set takes
some 8 s): a tool for whoever grows the incident space, not a test.
"""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor

Answer = tuple[str, str]
Example = tuple[int, frozenset[str], tuple[object, ...], Answer]
BENIGN = ("duration:", "client closed", "retrying", "retries exhausted")
"""Templates of the harmless warnings every world may draw: no footprint of an incident."""


def hard_examples(seed: int) -> list[Example]:
    """(seed, signature, full answer, (root, kind)) of each hard task of the set of ``seed``."""
    from srez_env.baselines.learners import answer_of, signature
    from srez_env.generator import sets

    out: list[Example] = []
    for task in sets.generate(seed, 40):
        if task.difficulty == "hard":
            answer = answer_of(task)
            out.append((seed, signature(task), tuple(answer), (answer.service, answer.kind)))
    return out


def nearest(train: list[Example], mine: frozenset[str]) -> tuple[object, ...]:
    """The full answer of the nearest training signature (Jaccard; ties to the commonest)."""
    scored = [(len(mine & s) / len(mine | s), full) for _, s, full, _ in train]
    best = max(score for score, _ in scored)
    return Counter(full for score, full in scored if score == best).most_common(1)[0][0]


def ceiling(
    examples: list[Example], keep: str
) -> tuple[float, dict[frozenset[str], Counter[Answer]]]:
    """The best lookup's share (the likeliest answer of each group) and the groups, grouping by
    the signature without benign warnings (``keep="all"``) or by the statuses (``"status"``)."""
    groups: dict[frozenset[str], Counter[Answer]] = defaultdict(Counter)
    for _, sig, _, answer in examples:
        key = frozenset(
            f
            for f in sig
            if not f.startswith("budget")
            and not any(b in f for b in BENIGN)
            and (keep == "all" or f.startswith("status"))
        )
        groups[key][answer] += 1
    best = sum(c.most_common(1)[0][1] for c in groups.values())
    return best / len(examples), groups


def seeds_of(text: str) -> list[int]:
    first, _, last = text.partition("-")
    return list(range(int(first), int(last or first) + 1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("seeds", nargs="+", help="seeds or ranges (11-22)")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    seeds = [s for text in args.seeds for s in seeds_of(text)]
    with ProcessPoolExecutor(args.jobs) as pool:
        by_seed = dict(zip(seeds, pool.map(hard_examples, seeds), strict=True))
    examples = [e for rows in by_seed.values() for e in rows]
    passed = 0
    for seed, rows in by_seed.items():
        train = [e for other, more in by_seed.items() if other != seed for e in more]
        passed += sum(nearest(train, sig) == full for _, sig, full, _ in rows)
    print(f"nearest signature, one set left out: {passed} of {len(examples)} hard tasks")
    full_share, _ = ceiling(examples, "all")
    status_share, groups = ceiling(examples, "status")
    single = sum(sum(c.values()) for c in groups.values() if len(c) == 1)
    print(f"best lookup by signature: {full_share:.0%}; by statuses alone: {status_share:.0%}")
    print(f"tasks in status groups of one answer: {single} of {len(examples)}")
    for key, answers in sorted(groups.items(), key=lambda kv: -sum(kv[1].values())):
        down = sorted(f.removeprefix("status:") for f in key if not f.endswith(":healthy"))
        shown = ", ".join(f"{root}/{kind} {n}" for (root, kind), n in answers.most_common())
        print(f"  {sum(answers.values()):3d}  [{' '.join(down) or 'all healthy'}]  {shown}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

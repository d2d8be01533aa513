"""How much a hard task's T0 footprint gives away (docs/environment.md §6.20): the hard tasks of
the generated sets of the seeds given, the nearest-signature learner fit on the other sets each
time, and the best any lookup could do grouping by the signature and by the statuses alone.

    python env/tools/footprints.py 11-22 [--jobs 2]

Prints the learner's leave-one-set-out passes, the two ceilings, the share of tasks in groups of
one answer, and the groups of the statuses with their answers, largest first. Then what the two
generator levers that need no new incident would leave the learner (:func:`gated`): admitting a
hard task only when two or more answers share its statuses, and on top of that keeping the
answers of each group equally frequent. Slow (a set takes some 8 s): a tool for whoever grows the
incident space, not a test.
"""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from random import Random

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


def leave_one_set_out(by_seed: dict[int, list[Example]]) -> tuple[int, int]:
    """(passed, played): the nearest signature on each set, fit on the others."""
    passed = played = 0
    for seed, rows in by_seed.items():
        train = [e for other, more in by_seed.items() if other != seed for e in more]
        played += len(rows)
        passed += sum(nearest(train, sig) == full for _, sig, full, _ in rows)
    return passed, played


def gated(
    by_seed: dict[int, list[Example]],
    groups: dict[frozenset[str], Counter[Answer]],
    *,
    balanced: bool,
) -> dict[int, list[Example]]:
    """The hard tasks a generator would keep if it admitted only status groups of two or more
    answers and, when ``balanced``, each answer of a group with the chance that makes the group's
    answers equally frequent (the rarest's count over its own; the control is always kept)."""

    def status(sig: frozenset[str]) -> frozenset[str]:
        return frozenset(f for f in sig if f.startswith("status"))

    rng = Random(0)
    kept: dict[int, list[Example]] = {}
    for seed, rows in by_seed.items():
        kept[seed] = []
        for example in rows:
            group = groups[status(example[1])]
            if len(group) < 2:
                continue
            share = min(group.values()) / group[example[3]]
            if not balanced or example[3] == ("none", "none") or rng.random() < share:
                kept[seed].append(example)
    return kept


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
    passed, played = leave_one_set_out(by_seed)
    print(f"nearest signature, one set left out: {passed} of {played} hard tasks")
    full_share, _ = ceiling(examples, "all")
    status_share, groups = ceiling(examples, "status")
    single = sum(sum(c.values()) for c in groups.values() if len(c) == 1)
    print(f"best lookup by signature: {full_share:.0%}; by statuses alone: {status_share:.0%}")
    print(f"tasks in status groups of one answer: {single} of {len(examples)}")
    for key, answers in sorted(groups.items(), key=lambda kv: -sum(kv[1].values())):
        down = sorted(f.removeprefix("status:") for f in key if not f.endswith(":healthy"))
        shown = ", ".join(f"{root}/{kind} {n}" for (root, kind), n in answers.most_common())
        print(f"  {sum(answers.values()):3d}  [{' '.join(down) or 'all healthy'}]  {shown}")
    for balanced, what in ((False, "shared statuses only"), (True, "and answers balanced")):
        passed, played = leave_one_set_out(gated(by_seed, groups, balanced=balanced))
        print(f"nearest signature, {what}: {passed} of {played} hard tasks kept")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

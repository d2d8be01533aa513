"""The benchmark card's figure of the cheap learners at scale (docs/benchmark-card.md, figure
``learners-at-scale``): what recall earns when a learner has read many published sets.

Issue-level bar (docs/environment.md §6.18 and §6.20): on the canonical set and on generated sets
the tests do not ship, no cheap learner (prompt lookup; nearest T0 signature fit on ten or more
sets; range calibrators fit on 400 or more tasks, both scopes) passes more than 30 % of the hard
tier or reaches the heuristic expert's mean reward; the heuristic expert passes at most 30 % of
the hard tier; the diagnostician at least 90 % of every tier. This module measures each of those
in one process and prints them as one figure, so that every change to the generator moves a
number the card keeps, rather than a figure typed into prose.

The learners are fit on the ten sets of :data:`FIT_SEEDS` (400 tasks): not the generator's own
reference seeds (``srez_env.generator.sets.REFERENCE_SEEDS``), whose range learners the generator
defeats by construction, and not the sets played. Generating twelve sets takes most of the time
(about a minute and a half on two cores), so the card's fast test leaves this figure out and
``tests/test_benchmark_card.py::test_the_learners_at_scale_are_what_a_fresh_evaluation_gives``
(marked slow) checks it; ``make card`` rewrites it with the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Final

from bench.card import mean_reward, play_all
from srez_env.baselines import learners, ranges
from srez_env.generator.sets import generate
from srez_env.grade import Grade
from srez_env.task import Task
from srez_env.tasks import load_tasks

FIT_SEEDS: Final = tuple(range(201, 211))
"""The ten generated sets every learner is fit on (400 tasks)."""
HELD_OUT_SEEDS: Final = (4242, 9001)
"""The generated sets played beside the canonical one: the card's quoted seed and one no test
generates."""
BAR: Final = 0.30
"""The share of the hard tier no cheap learner and not the heuristic expert may pass."""
TIERS: Final = ("easy", "medium", "hard")


def _generated(seed: int) -> list[Task]:
    return generate(seed, 40)


def _hard(tasks: Sequence[Task], grades: Sequence[Grade]) -> tuple[int, int]:
    hard = [g for t, g in zip(tasks, grades, strict=True) if t.difficulty == "hard"]
    return sum(g.passed for g in hard), len(hard)


class _Fitted:
    """The three learners, fit on the same published sets."""

    def __init__(self, published: Sequence[Task]) -> None:
        self.lookup = learners.PromptLookup().fit(published)
        self.nearest = learners.NearestSignature().fit(published)
        self.ranges = ranges.learn(published)


def _one_set(name: str, tasks: Sequence[Task], fitted: _Fitted) -> str:
    heuristic = play_all(tasks, ["heuristic"])
    diagnostician = play_all(tasks, ["diagnostician"])
    parts = []
    for label, learner in (("prompt lookup", fitted.lookup), ("nearest signature", fitted.nearest)):
        got = learners.score(learner, tasks, label)
        parts.append(f"{label} {got.hard_passed}/{got.hard} (mean {got.mean_reward:.3f})")
    for scope in ranges.SCOPES:
        grades = [ranges.run(tasks, fitted.ranges, scope)[t.id] for t in tasks]
        passed, of = _hard(tasks, grades)
        parts.append(f"range {scope} {passed}/{of} (mean {mean_reward(grades):.3f})")
    passed, of = _hard(tasks, heuristic)
    tiers = []
    for tier in TIERS:
        in_tier = [g for t, g in zip(tasks, diagnostician, strict=True) if t.difficulty == tier]
        tiers.append(f"{sum(g.passed for g in in_tier)}/{len(in_tier)} {tier}")
    return (
        f"| {name} | {' · '.join(parts)} | {passed}/{of} (mean {mean_reward(heuristic):.3f}) |"
        f" {', '.join(tiers)} |"
    )


def figure(jobs: int = 2) -> str:
    """The ``learners-at-scale`` figure: a table of each played set's hard-tier passes by every
    learner (fit on :data:`FIT_SEEDS`), the heuristic expert, and the diagnostician per tier."""
    seeds = (*FIT_SEEDS, *HELD_OUT_SEEDS)
    with ProcessPoolExecutor(jobs) as pool:
        made = dict(zip(seeds, pool.map(_generated, seeds), strict=True))
    fitted = _Fitted([t for seed in FIT_SEEDS for t in made[seed]])
    played = [("canonical", load_tasks())]
    played += [(f"seed {seed}", made[seed]) for seed in HELD_OUT_SEEDS]
    rows = [_one_set(name, tasks, fitted) for name, tasks in played]
    return "\n".join(
        [
            f"Fit on the generated sets of seeds {FIT_SEEDS[0]} to {FIT_SEEDS[-1]}"
            f" ({sum(len(made[s]) for s in FIT_SEEDS)} tasks); hard tasks passed, a learner"
            f" played with a perfect fixer (the bar: at most {BAR:.0%} of the hard tier, and"
            " below the heuristic expert's mean reward):",
            "",
            "| set | cheap learners, hard passed | heuristic expert, hard passed |"
            " diagnostician, passed per tier |",
            "|---|---|---|---|",
            *rows,
        ]
    )

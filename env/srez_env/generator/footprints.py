"""Footprints that several answers share, and each answer drawn as often as the others there
(docs/environment.md §6.20).

A hard task's *footprint* is what its incident shows in the six calls of the learners' T0
signature (:func:`srez_env.baselines.learners.signature`): every service's status and the
templates of every WARN and ERROR line of every service's logs. The budget and the harmless
warnings a world draws for itself (:func:`srez_env.generator.sets.decoy_log_pool`) are left out:
they say nothing of the incident. A learner that remembers other sets' footprints answers a
task with the answer it saw most often with that footprint, so a footprint only hides its answer
when several answers make it about equally often.

The table (``footprints.json``, written by ``python env/tools/footprint_table.py``) counts, over
every donor tried on every hard slot of the reference sets, how often each answer (root service
and fault kind) gave a valid hard task with each footprint, out of how often it was tried. A
footprint is *shared* when at least :data:`MIN_ANSWERS` answers land on it in at least
:data:`RATE_FLOOR` of their tries. Each hard slot of a generated set aims for one shared
footprint and one of its answers (:meth:`Table.plan`), and the generator tries that answer in
worlds of its own until it shows that footprint: a set holds the answers of a footprint equally
often, so the footprint leaves a learner one guess among several.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Final

from srez_env.baselines.learners import signature
from srez_env.task import Task

MIN_ANSWERS: Final = 3
"""How many answers a footprint must be shared by before a hard slot may aim for it: a
footprint of two leaves a learner one task of two. Each shared footprint has four or five
answers today (docs/environment.md §6.20)."""
RATE_FLOOR: Final = 0.1
"""The least share of its tries in which an answer must land on a footprint to count among its
answers: a rarer one would take the generator that many more worlds to show it there."""
TABLE_FORMAT: Final = "srez-footprints/1"

Footprint = frozenset[str]
Aim = tuple[Footprint, str]
"""A hard slot's aim: a shared footprint and the answer (``root/kind``) to show it with."""


def answer_key(service: str, kind: str) -> str:
    """An answer as the table names it: ``root/kind`` (the kind's matrix code, ``K03``)."""
    return f"{service}/{kind}"


def footprint(task: Task) -> Footprint:
    """What ``task``'s incident shows at T0: its signature without the budget, computed with the
    world's harmless warnings left out."""
    quiet = task.model_copy(update={"noise": task.noise.model_copy(update={"decoy_logs": []})})
    return frozenset(f for f in signature(quiet) if not f.startswith("budget:"))


@dataclass(frozen=True)
class Table:
    """The shared footprints and the answers that share each (sorted)."""

    answers: Mapping[Footprint, tuple[str, ...]]

    def plan(self, seed: int, slots: int, kinds: Collection[str]) -> list[Aim]:
        """What each of a set's ``slots`` hard fault slots aims for, in the slots' order: a
        shared footprint and one of its answers, among the answers of ``kinds`` (matrix codes).

        The footprints take the slots in proportion to the square of their answers (largest
        remainder; ties in an order the seed shuffles), since a footprint's task leaves a
        learner one guess among its answers; each footprint's slots go round its answers in an
        order the seed shuffles, so a set holds every answer of a footprint before any twice;
        and the whole list is shuffled by the seed. A footprint that the set's kinds leave fewer
        than :data:`MIN_ANSWERS` answers is not shared in that set; with none, the plan is
        empty."""
        rng = random.Random(int.from_bytes(hashlib.sha256(f"plan:{seed}".encode()).digest()[:8]))
        shared: dict[Footprint, list[str]] = {}
        for seen, answers in sorted(self.answers.items(), key=lambda kv: sorted(kv[0])):
            mine = [a for a in answers if a.split("/")[1] in kinds]
            if len(mine) >= MIN_ANSWERS:
                shared[seen] = mine
        if not shared or slots <= 0:
            return []
        order = list(shared)
        rng.shuffle(order)
        weight = {seen: len(shared[seen]) ** 2 for seen in order}
        total = sum(weight.values())
        quota = {seen: slots * weight[seen] // total for seen in order}
        # the slots the floors leave go to the largest remainders (the shuffled order on a tie)
        rest = sorted(order, key=lambda seen: -(slots * weight[seen] % total))
        for seen in rest[: slots - sum(quota.values())]:
            quota[seen] += 1
        aims: list[Aim] = []
        for seen in order:
            rounds = shared[seen]
            rng.shuffle(rounds)
            aims += [(seen, rounds[i % len(rounds)]) for i in range(quota[seen])]
        rng.shuffle(aims)
        return aims


def shared(tries: Mapping[str, int], hits: Mapping[Footprint, Mapping[str, int]]) -> Table:
    """The table of shared footprints from the survey's counts: ``tries[answer]`` hard slots
    tried with ``answer``, ``hits[footprint][answer]`` of them valid with ``footprint``."""
    answers: dict[Footprint, tuple[str, ...]] = {}
    for seen, counts in hits.items():
        landing = sorted(
            answer
            for answer, n in counts.items()
            if tries.get(answer) and n / tries[answer] >= RATE_FLOOR
        )
        if len(landing) >= MIN_ANSWERS:
            answers[seen] = tuple(landing)
    return Table(answers)


Witness = tuple[int, str, str, str]
"""(set seed, slot row, donor row, task id): a hard task the survey made, to make again."""


def to_json(
    seeds: list[int],
    tries: Counter[str],
    hits: Mapping[Footprint, Counter[str]],
    witnesses: Mapping[Footprint, Witness],
) -> dict[str, object]:
    """The table file's content: the survey's raw counts, so that a change of
    :data:`MIN_ANSWERS` or :data:`RATE_FLOOR` needs no new survey, and for each footprint the
    first task that showed it, which ``tests/env/test_footprints.py`` makes again to tell a table
    the engine has moved away from."""
    footprints = [
        {"features": sorted(seen), "hits": dict(sorted(counts.items())), "witness": witnesses[seen]}
        for seen, counts in sorted(hits.items(), key=lambda kv: sorted(kv[0]))
    ]
    return {
        "format": TABLE_FORMAT,
        "seeds": seeds,
        "tries": dict(sorted(tries.items())),
        "footprints": footprints,
    }


def from_json(data: Mapping[str, object]) -> Table:
    """The table of a file :func:`to_json` wrote.

    Raises:
        ValueError: not a table of this format.
    """
    if data.get("format") != TABLE_FORMAT:
        msg = f"footprint table format must be {TABLE_FORMAT}, got {data.get('format')!r}"
        raise ValueError(msg)
    tries = data.get("tries")
    rows = data.get("footprints")
    if not isinstance(tries, dict) or not isinstance(rows, list):
        msg = "footprint table must hold a 'tries' object and a 'footprints' list"
        raise ValueError(msg)
    hits = {frozenset(row["features"]): row["hits"] for row in rows}
    return shared(tries, hits)


@functools.cache
def table() -> Table:
    """The packaged table (``footprints.json``)."""
    text = resources.files(__package__).joinpath("footprints.json").read_text(encoding="utf-8")
    return from_json(json.loads(text))

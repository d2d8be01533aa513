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
:data:`RATE_FLOOR` of their tries. The generator keeps a drawn incident only when its footprint
is shared, and then with the chance :func:`Table.keep` gives (:func:`shared`): every answer of a
shared footprint is then kept as often as the others, so the footprint leaves a learner one
guess among several, and the footprints shared by more answers are drawn more often.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Final

from srez_env.baselines.learners import signature
from srez_env.task import Task

MIN_ANSWERS: Final = 3
"""How many answers a footprint must be shared by before the generator keeps a hard task that
shows it. Three is what the space gives today: four or more answers share only the footprint of
a failing auth (docs/environment.md §6.20)."""
RATE_FLOOR: Final = 0.1
"""The least share of its tries in which an answer must land on a footprint to count among its
answers. A rarer one would make every other answer of the footprint that much rarer to keep, and
the generator try that many more worlds."""
TABLE_FORMAT: Final = "srez-footprints/1"

Footprint = frozenset[str]


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
    """The chance of keeping each answer on each shared footprint."""

    chances: Mapping[Footprint, Mapping[str, float]]

    def keep(self, answer: str, seen: Footprint) -> float:
        """The chance of keeping a task of ``answer`` that shows ``seen`` (0 off a shared one)."""
        return self.chances.get(seen, {}).get(answer, 0.0)

    @functools.cached_property
    def _best(self) -> dict[str, float]:
        best: dict[str, float] = {}
        for answers in self.chances.values():
            for answer, chance in answers.items():
                best[answer] = max(best.get(answer, 0.0), chance)
        return best

    def best(self, answer: str) -> float:
        """The largest chance ``answer`` is kept with on any footprint: a draw above it will not
        keep a task of that answer whatever its world shows, so it is not worth realising."""
        return self._best.get(answer, 0.0)


def shared(tries: Mapping[str, int], hits: Mapping[Footprint, Mapping[str, int]]) -> Table:
    """The table of chances from the survey's counts: ``tries[answer]`` hard slots tried with
    ``answer``, ``hits[footprint][answer]`` of them valid with ``footprint``.

    A try of answer ``a`` ends kept on shared footprint ``f`` with chance ``rate(a, f) *
    keep(a, f)``, and the chances make that ``c * n(f)`` for every answer of ``f``, where
    ``n(f)`` is how many answers share ``f`` and ``c`` the largest constant that keeps every
    chance at most 1. So a footprint's answers are kept equally often, and a footprint shared by
    more answers is drawn more often (in proportion to the square of its answers), since each of
    its tasks leaves a learner that many more guesses."""
    answers: dict[Footprint, dict[str, float]] = {}
    for seen, counts in hits.items():
        rates = {
            answer: n / tries[answer]
            for answer, n in counts.items()
            if tries.get(answer) and n / tries[answer] >= RATE_FLOOR
        }
        if len(rates) >= MIN_ANSWERS:
            answers[seen] = rates
    if not answers:
        return Table({})
    scale = min(rate / len(rates) for rates in answers.values() for rate in rates.values())
    return Table(
        {
            seen: {answer: scale * len(rates) / rate for answer, rate in rates.items()}
            for seen, rates in answers.items()
        }
    )


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

"""The trivial-agent floors beside every ``srez eval`` leaderboard.

A score means something only above what a trivial agent gets on the same tasks, so ``srez eval``
plays the floors (``noop``, ``restart-all``: :mod:`srez_env.baselines.floors`) that were not asked
for, on the same tasks and seeds as the runs it reports (so ``--limit`` and ``--resume`` limit
them as they limit the agents asked for: the floors play the (task, seed) pairs of the runs made
and kept, no more), and reports them with the others (their rows are marked as floors). They are played in this process and are not written to the results folder: they are
deterministic and cost about 10 ms a run, so they are always the floors of this ``srez`` on
these tasks, whatever the backend of the runs beside them, and an earlier evaluation's floors can
never be mixed in. ``--no-floors`` leaves them out; asking for them with ``--agent`` runs them
like any other agent (on the chosen backend, written to the results folder).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from srez_env.agents import make_agent
from srez_env.baselines.floors import FLOOR_AGENTS
from srez_env.grade import grade_episode
from srez_env.play import play_episode
from srez_env.task import Task

Grade = dict[str, object]


def missing_floors(agents: Sequence[str]) -> list[str]:
    """The floors ``agents`` does not include, in their order."""
    return [f for f in FLOOR_AGENTS if f not in agents]


def floor_grades(floors: Sequence[str], played: Sequence[tuple[Task, int]]) -> list[Grade]:
    """Each floor on each (task, run seed) of ``played``, graded, as in ``result.json``."""
    grades: list[Grade] = []
    for spec in floors:
        for task, seed in played:
            env = play_episode(task, make_agent(spec, task, seed), name=spec, run_seed=seed)
            grades.append(grade_episode(env.record()).model_dump(mode="json", by_alias=True))
    return grades


def played_pairs(
    tasks: Sequence[Task], runs: Sequence[Mapping[str, object]]
) -> list[tuple[Task, int]]:
    """The (task, run seed) pairs of ``runs`` (rows with ``task_id`` and ``run_seed``), once
    each, in the order of ``tasks`` then seed; rows of other tasks or without a seed are left
    out."""
    seeds: dict[str, set[int]] = {}
    for row in runs:
        seed = row.get("run_seed")
        if isinstance(seed, int):
            seeds.setdefault(str(row.get("task_id")), set()).add(seed)
    return [(task, seed) for task in tasks for seed in sorted(seeds.get(task.id, ()))]

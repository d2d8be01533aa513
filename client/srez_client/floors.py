"""The trivial-agent floors beside every ``srez eval`` leaderboard.

A score means something only above what a trivial agent gets on the same tasks, so ``srez eval``
plays the floors (``noop``, ``restart-all``: :mod:`srez_env.baselines.floors`) that were not asked
for, on the same tasks and seeds, and reports them with the others (their rows are marked as
floors). They are played in this process and are not written to the results folder: they are
deterministic and cost about 10 ms a run, so they are always the floors of this ``srez`` on
these tasks, whatever the backend of the runs beside them, and an earlier evaluation's floors can
never be mixed in. ``--no-floors`` leaves them out; asking for them with ``--agent`` runs them
like any other agent (on the chosen backend, written to the results folder).
"""

from __future__ import annotations

from collections.abc import Sequence

from srez_env.agents import make_agent
from srez_env.baselines.floors import FLOOR_AGENTS
from srez_env.grade import grade_episode
from srez_env.play import play_episode
from srez_env.task import Task

Grade = dict[str, object]


def missing_floors(agents: Sequence[str]) -> list[str]:
    """The floors ``agents`` does not include, in their order."""
    return [f for f in FLOOR_AGENTS if f not in agents]


def floor_grades(floors: Sequence[str], tasks: Sequence[Task], seeds: int) -> list[Grade]:
    """Each floor on each task and seed, graded, as in ``result.json``."""
    grades: list[Grade] = []
    for spec in floors:
        for task in tasks:
            for seed in range(seeds):
                env = play_episode(task, make_agent(spec, task, seed), name=spec, run_seed=seed)
                grades.append(grade_episode(env.record()).model_dump(mode="json", by_alias=True))
    return grades

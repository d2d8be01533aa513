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

:class:`FloorsAhead` plays them while the runs go: the floors of the (task, seed) pairs planned
are played in a forked process on another core, and used when the pairs kept are the pairs
planned (otherwise, or where there is no fork or no second core, they are played here as
before). Either way the grades are the same: the floors are deterministic.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import signal
from collections.abc import Mapping, Sequence

from srez_client.inline_split import can_fork
from srez_env.agents import make_agent
from srez_env.baselines.floors import FLOOR_AGENTS
from srez_env.grade import grade_episode
from srez_env.play import play_episode
from srez_env.task import Task

logger = logging.getLogger(__name__)

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


class FloorsAhead:
    """The floors of the planned (task, seed) pairs, played in a forked process meanwhile.

    The child is forked before the runs start (no thread of this process exists yet to be
    copied mid-lock), plays :func:`floor_grades` on what it inherited, writes the pickled grades
    to a pipe and leaves with ``os._exit`` (no cleanup of this process's state runs twice).
    :meth:`grades` reads them; :meth:`close` (also on Ctrl-C) kills and reaps a child not read.
    """

    def __init__(self, floors: Sequence[str], planned: list[tuple[Task, int]]) -> None:
        self.floors = list(floors)
        self.planned = planned
        self._child: tuple[int, int] | None = None  # pid, read end of its pipe
        if self.floors and planned and can_fork():
            self._child = self._fork()

    def _fork(self) -> tuple[int, int] | None:
        read, write = os.pipe()
        try:
            pid = os.fork()
        except OSError as e:
            os.close(read)
            os.close(write)
            logger.warning("floors played after the runs: cannot fork (%s)", e)
            return None
        if pid == 0:  # the child: play, write, leave without unwinding the parent's state
            status = 1
            try:
                os.close(read)
                data = pickle.dumps(floor_grades(self.floors, self.planned))
                with os.fdopen(write, "wb") as pipe:
                    pipe.write(data)
                status = 0
            finally:
                os._exit(status)
        os.close(write)
        return pid, read

    def grades(self, played: list[tuple[Task, int]]) -> list[Grade]:
        """The floors' grades on ``played``: the child's when they are the pairs planned."""
        child, self._child = self._child, None
        if child is not None and played == self.planned:
            grades = _collect(*child)
            if grades is not None:
                return grades
            logger.warning("floors played after the runs: the process playing them failed")
        elif child is not None:
            _kill(*child)
        return floor_grades(self.floors, played)

    def close(self) -> None:
        """Stops a child whose grades were not read."""
        child, self._child = self._child, None
        if child is not None:
            _kill(*child)


def _collect(pid: int, read: int) -> list[Grade] | None:
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        return None
    grades: list[Grade] = pickle.loads(data)  # noqa: S301 - written by our own fork
    return grades


def _kill(pid: int, read: int) -> None:
    os.close(read)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)

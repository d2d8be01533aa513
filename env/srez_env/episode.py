"""The record of one episode: what the agent did and what the world became (docs/environment.md
§3.9).

:class:`srez_env.env.SREEnv` fills an :class:`EpisodeLog` while the agent plays and hands out an
:class:`EpisodeRecord` on request; :func:`srez_env.grade.grade_episode` reads only the record. The
grader therefore depends on this module and never on the environment that produced the record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from srez_env.sim.timeline import World
from srez_env.task import Task

EndReason = Literal["submit", "agent_exit", "time_limit", "step_budget"]


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One executed call, for grading."""

    step: int
    clock: int
    tool: str
    args: dict[str, Any]
    ok: bool
    error: str | None = None
    old_value: Any = None  # set_config: the file value before the edit


@dataclass(slots=True)
class EpisodeLog:
    """Everything the grader reads about the agent's behaviour."""

    calls: list[CallRecord] = field(default_factory=list)
    declared: tuple[str, str] | None = None
    witnessed: list[str] = field(default_factory=list)
    first_mutation_step: int | None = None
    end_reason: EndReason | None = None
    submit_clock: int | None = None
    summary: str = ""


@dataclass(frozen=True, slots=True)
class EpisodeRecord:
    """One episode as the grader sees it: the task, the world's timeline (every config state the
    episode went through, including the soak), the agent's calls and who played."""

    task: Task
    world: World
    log: EpisodeLog
    steps_used: int
    clock: int
    """The clock when the record was taken; the grader falls back to it without a submit."""
    agent: str = ""
    model: str = "none"
    run_seed: int = 0

    @property
    def done(self) -> bool:
        return self.log.end_reason is not None

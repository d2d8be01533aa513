"""Scoring an SRE-Zero episode from the tool calls a rollout made (no verifiers import here).

The tool server runs the episode; the host scores it from the calls the server recorded in the
rollout's state, by replaying them through a fresh simulator. The simulator is deterministic, so
the replay is the episode the agent played, and the grade never has to leave the scoring process
(nothing graded sits in the state the tool server shares while the agent acts).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from srez_env.agents import make_agent
from srez_env.env import SREEnv
from srez_env.grade import Grade, grade_episode
from srez_env.task import Task

AGENT_NAME: Final = "verifiers"
CHECKS: Final = ("valid", "func", "safe", "intent", "rca")


def replay(task: Task, actions: Sequence[Mapping[str, Any]], *, run_seed: int = 0) -> SREEnv:
    """The episode of ``task`` after ``actions``, ended: an episode the agent left without
    submitting is ended as an agent exit (as the harness ends it everywhere)."""
    env = SREEnv(task, run_seed=run_seed, agent=AGENT_NAME)
    env.reset()
    for action in actions:
        if env.done:
            break
        env.step(action)
    env.force_submit("agent_exit")
    return env


def grade_actions(task: Task, actions: Sequence[Mapping[str, Any]]) -> Grade:
    """The grade of the episode ``actions`` play on ``task``."""
    return grade_episode(replay(task, actions).record())


def check_scores(grade: Grade) -> dict[str, float]:
    """The five checks, ``resolved`` and ``passed`` as 1.0 or 0.0 (verifiers metrics)."""
    scores = {name: float(grade.checks[name].passed) for name in CHECKS}
    scores["resolved"] = float(grade.resolved)
    scores["passed"] = float(grade.passed)
    return scores


def oracle_actions(task: Task) -> list[dict[str, Any]]:
    """The scripted oracle's tool calls on ``task`` (the gold answer of a task)."""
    env = SREEnv(task, agent="scripted")
    agent = make_agent("scripted", task)
    observation: Mapping[str, Any] = env.reset()
    actions: list[dict[str, Any]] = []
    while not env.done:
        action = agent.act(observation)
        actions.append(dict(action) if isinstance(action, Mapping) else {"raw": action})
        observation = env.step(action).observation
    return actions

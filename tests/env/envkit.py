"""Shared helpers for the environment tests: play a task with an agent or a list of actions."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from srez_env.agents import make_agent
from srez_env.env import SREEnv
from srez_env.generator.verify import injected_instances as injected_instances
from srez_env.grade import Grade, grade_episode
from srez_env.play import play_episode
from srez_env.task import Task


def run_agent(task: Task, spec: str, run_seed: int = 0) -> SREEnv:
    """Plays a whole episode with a named agent; returns the finished env."""
    return play_episode(task, make_agent(spec, task, run_seed), name=spec, run_seed=run_seed)


def started(task: Task) -> SREEnv:
    """A new episode of ``task``, reset to T0."""
    env = SREEnv(task, agent="test")
    env.reset()
    return env


def play(task: Task, actions: Iterable[dict[str, Any]], *, submit: bool = True) -> SREEnv:
    """Plays the given actions (then submits, unless told not to) and returns the env."""
    env = started(task)
    for action in actions:
        env.step(action)
    if submit and not env.done:
        env.step({"tool": "submit", "args": {}})
    return env


def grade_of(task: Task, actions: Iterable[dict[str, Any]]) -> Grade:
    """The grade of playing ``actions`` then submitting."""
    return grade_episode(play(task, actions).record())


def checks(grade: Grade) -> dict[str, bool]:
    """``{check: passed}``."""
    return {name: c.passed for name, c in grade.checks.items()}


def a(tool: str, **args: Any) -> dict[str, Any]:
    """An action."""
    return {"tool": tool, "args": args}

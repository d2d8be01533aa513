"""Shared helpers for the environment tests: play a task with an agent or a list of actions."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from srez_env.agents import make_agent
from srez_env.env import SREEnv
from srez_env.grade import Grade
from srez_env.sim.rules import RuleHit
from srez_env.task import Task


def run_agent(task: Task, spec: str, run_seed: int = 0) -> SREEnv:
    """Plays a whole episode with a named agent; returns the finished env."""
    env = SREEnv(task, run_seed=run_seed, agent=spec)
    obs: Mapping[str, Any] = env.reset()
    agent = make_agent(spec, task, run_seed)
    while not env.done:
        obs = env.step(agent.act(obs)).observation
    return env


def play(task: Task, actions: Iterable[dict[str, Any]], *, submit: bool = True) -> SREEnv:
    """Plays the given actions (then submits, unless told not to) and returns the env."""
    env = SREEnv(task, agent="test")
    env.reset()
    for action in actions:
        env.step(action)
    if submit and not env.done:
        env.step({"tool": "submit", "args": {}})
    return env


def grade_of(task: Task, actions: Iterable[dict[str, Any]]) -> Grade:
    """The grade of playing ``actions`` then submitting."""
    return play(task, actions).grade()


def checks(grade: Grade) -> dict[str, bool]:
    """``{check: passed}``."""
    return {name: c.passed for name, c in grade.checks.items()}


def a(tool: str, **args: Any) -> dict[str, Any]:
    """An action."""
    return {"tool": tool, "args": args}


def injected_instances(task: Task) -> list[RuleHit]:
    """The rule instances a task's injection should fire at T0 (§6.3), derived from the file."""
    kind = task.fault_kind
    if kind == "none":
        return []
    edit = task.injection.config[0]
    s, key = edit.service, edit.key
    if kind == "wrong_upstream_port":
        if key == "server.port":  # server side: both db clients are refused
            return sorted([RuleHit(kind, "auth->db"), RuleHit(kind, "payments->db")])
        dependency = key.split(".")[-2] if key.startswith("upstream.") else key.split(".")[0]
        return [RuleHit(kind, f"{s}->{dependency}")]
    if kind == "dependency_timeout":
        dependency = key.split(".")[-2] if key.startswith("upstream.") else key.split(".")[0]
        return [RuleHit(kind, f"{s}->{dependency}")]
    return [RuleHit(kind, s)]

"""Agents: the contract every agent meets, and the factory the harness uses.

An agent is anything with a ``name`` and ``act(observation) -> action``. The first call receives
the prompt from ``SREEnv.reset()``; each later call receives the observation of the previous
step. An action is ``{"tool": name, "args": {...}}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from srez_env.errors import EnvError
from srez_env.task import Task

AGENT_KINDS = ("scripted", "heuristic", "random", "replay:FILE")


class Agent(Protocol):
    """The agent contract (ENV_DESIGN §3.10)."""

    name: str

    def act(self, observation: Mapping[str, Any]) -> dict[str, Any]:
        """The next tool call, given the prompt (first call) or the last observation."""
        ...


class AgentSpecError(EnvError, ValueError):
    """An agent spec names no known agent."""


def make_agent(spec: str, task: Task, run_seed: int = 0) -> Agent:
    """Builds an agent from its spec: scripted, heuristic, random or replay:FILE."""
    from srez_env.baselines.heuristic import HeuristicAgent
    from srez_env.baselines.random_agent import RandomAgent
    from srez_env.baselines.replay import ReplayAgent, load_replay
    from srez_env.baselines.scripted import ScriptedAgent

    if spec == "scripted":
        return ScriptedAgent(task)
    if spec == "heuristic":
        return HeuristicAgent()
    if spec == "random":
        return RandomAgent(task.seed, run_seed)
    if spec.startswith("replay:"):
        return ReplayAgent(load_replay(Path(spec.removeprefix("replay:"))))
    msg = f"unknown agent {spec!r} (known: {', '.join(AGENT_KINDS)})"
    raise AgentSpecError(msg)

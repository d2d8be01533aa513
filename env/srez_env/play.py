"""Playing a whole episode in this process: an agent acts until the episode ends.

The calibrators, the generator's checks and the tests play agents this way; the harness's own
backends add time limits, transcripts and the dialog around the same loop.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from srez_env.agent_contract import Agent
from srez_env.env import SREEnv
from srez_env.task import Task


def play_episode(task: Task, agent: Agent, *, name: str, run_seed: int = 0) -> SREEnv:
    """Plays ``task`` with ``agent`` from the prompt to the end; returns the finished env.

    Args:
        task: The task to play.
        agent: The agent; it receives the prompt, then each step's observation.
        name: The agent name the episode (and so its grade) records.
        run_seed: The run seed the episode records.
    """
    env = SREEnv(task, run_seed=run_seed, agent=name)
    observation: Mapping[str, Any] = env.reset()
    while not env.done:
        observation = env.step(agent.act(observation)).observation
    return env

"""RL figures for ``make bench`` (:func:`rl_figures`): what the Gymnasium environment costs per
step on top of the simulator.

The scripted and heuristic trajectories of all 40 tasks are recorded once as JSON actions, then
replayed (resets excluded from the clock) three ways: ``SREEnv.step`` directly; the same plus
:func:`~srez_env.grade.grade_episode` at the end (what the Gymnasium environment does on the last
step); and ``gymnasium.make("srez/SREZero-v0")`` with its default wrappers, JSON text in and out.
The ratios compare the best steps per second of each, in this run.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from srez_env.agents import make_agent
from srez_env.env import SREEnv
from srez_env.grade import grade_episode
from srez_env.task import Task
from srez_env.tasks import load_tasks

AGENTS = ("scripted", "heuristic")
ROUNDS = 5
"""Replays of each kind; the fastest counts."""


def _trajectory(task: Task, spec: str) -> list[Any]:
    env = SREEnv(task)
    observation: Any = env.reset()
    agent = make_agent(spec, task)
    actions = []
    while not env.done:
        action = agent.act(observation)
        actions.append(action)
        observation = env.step(action).observation
    return actions


def rl_figures() -> dict[str, Any]:
    """Steps per second through the Gymnasium environment against ``SREEnv.step``."""
    try:
        import gymnasium

        import srez_client.integrations.gym  # noqa: F401 - registers srez/SREZero-v0
    except ImportError:
        return {"skipped": "gymnasium is not installed (pip install 'srez[gym]')"}
    tasks = load_tasks()
    runs = [(task, _trajectory(task, spec)) for spec in AGENTS for task in tasks]
    texts = [(task, [json.dumps(a) for a in actions]) for task, actions in runs]

    def direct(graded: bool) -> Callable[[], tuple[float, int]]:
        def replay() -> tuple[float, int]:
            clock, steps = 0.0, 0
            for task, actions in runs:
                env = SREEnv(task)
                env.reset()
                start = time.perf_counter()
                for action in actions:
                    env.step(action)
                if graded:
                    grade_episode(env.record())
                clock += time.perf_counter() - start
                steps += len(actions)
            return clock, steps

        return replay

    gym_env = gymnasium.make("srez/SREZero-v0", task=tasks)

    def through_gym() -> tuple[float, int]:
        clock, steps = 0.0, 0
        for task, actions in texts:
            gym_env.reset(seed=0, options={"task_id": task.id})
            start = time.perf_counter()
            for action in actions:
                gym_env.step(action)
            clock += time.perf_counter() - start
            steps += len(actions)
        return clock, steps

    replays = {"direct": direct(graded=False), "graded": direct(graded=True), "gym": through_gym}
    best = dict.fromkeys(replays, 0.0)
    for _ in range(ROUNDS):  # interleaved, so a busy moment of the machine hits all three
        for name, replay in replays.items():
            seconds, steps = replay()
            best[name] = max(best[name], steps / seconds)
    direct_sps, graded_sps, gym_sps = best["direct"], best["graded"], best["gym"]
    return {
        "episodes": len(runs),
        "steps": sum(len(a) for _, a in runs),
        "direct_steps_per_s": round(direct_sps),
        "direct_graded_steps_per_s": round(graded_sps),
        "gym_steps_per_s": round(gym_sps),
        "gym_vs_direct": round(gym_sps / direct_sps, 3),
        "gym_vs_direct_graded": round(gym_sps / graded_sps, 3),
    }

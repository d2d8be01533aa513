"""The scripted expert's trajectory of a task as scripted model replies, for driving an LLM agent
through a whole task against :class:`fakes.openai_server.FakeOpenAI`."""

from __future__ import annotations

from typing import Any

from fakes.openai_server import Scripted, tool_call
from srez_env.agents import make_agent
from srez_env.env import SREEnv
from srez_env.task import Task
from srez_env.tasks import load_tasks


def expert_replies(task_id: str | Task, *, usage: tuple[int, int] = (100, 20)) -> list[Scripted]:
    """One tool-call reply per action of the scripted expert on ``task_id`` (a packaged task's id,
    or any task itself), submit included."""
    task = load_tasks([task_id])[0] if isinstance(task_id, str) else task_id
    env = SREEnv(task)
    observation: Any = env.reset()
    oracle = make_agent("scripted", task)
    replies = []
    while not env.done:
        action = oracle.act(observation)
        assert isinstance(action, dict)
        replies.append(tool_call(action["tool"], action["args"], usage=usage))
        observation = env.step(action).observation
    return replies

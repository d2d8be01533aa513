"""The solver: one episode per sample, driven by Inspect's own generate loop.

For each sample the solver builds a :class:`~srez_client.integrations.inspect.episode.SampleEpisode`
(the sample id names the task, the epoch the run seed: epoch 1 is run seed 0, as ``srez eval
--seeds N`` numbers its runs), gives the model the project's system prompt, the incident prompt
and the tools, then calls ``generate`` one reply at a time (``tool_calls="single"``: Inspect
executes every tool call of the reply) until the episode ends. The episode object lives in this
closure, not in the sample's store (it is not JSON); the store receives the grade
(:data:`GRADE_KEY`), which the scorer reads.

What Inspect does not hand to a tool is settled here so that every call costs its step, as in
``srez eval``: a call Inspect refused (schema mismatch, unknown tool, malformed arguments) is
judged by the environment and the tool message then carries the environment's answer; a reply
with no tool call is handed over as text and answered in a user message. A limit of Inspect's
(messages, tokens, time) ends the episode where it stands (``time_limit`` for the time limits,
``agent_exit`` otherwise) and the sample is graded all the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
)
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import ToolCallError
from inspect_ai.util import LimitExceededError

from srez_client.integrations.inspect.episode import SYSTEM_PROMPT, SampleEpisode
from srez_client.integrations.inspect.tools import episode_tools
from srez_env.task import Task

GRADE_KEY: Final = "srez:grade"
"""Store key of the sample's grade (``result.json`` as a JSON object)."""
TIME_LIMITS: Final = frozenset({"time", "working"})
"""Inspect limit types recorded as the episode's ``time_limit``."""


@solver
def srez_agent(tasks: Mapping[str, Task]) -> Solver:
    """Plays each sample's task with the model under evaluation.

    Args:
        tasks: The tasks of the dataset by id (the sample ids).
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        episode = SampleEpisode(
            tasks[str(state.sample_id)], run_seed=state.epoch - 1, model=str(state.model)
        )
        state.messages = [
            ChatMessageSystem(content=SYSTEM_PROMPT),
            ChatMessageUser(content=episode.prompt_text),
        ]
        state.tools = list(episode_tools(episode))
        try:
            while not episode.done and not state.completed:
                before = len(state.messages)
                state = await generate(state, tool_calls="single")
                settle(episode, state.messages, before)
        except LimitExceededError as limit:
            episode.end("time_limit" if limit.type in TIME_LIMITS else "agent_exit")
            raise
        finally:
            state.store.set(GRADE_KEY, episode.grade().model_dump(mode="json", by_alias=True))
        return state

    return solve


def settle(episode: SampleEpisode, messages: list[ChatMessage], start: int) -> None:
    """Hands the environment what Inspect did not in the messages from ``start``: refused calls
    (their tool message gets the environment's answer) and a reply with no tool call (answered
    in a user message appended to ``messages``)."""
    new: Sequence[ChatMessage] = messages[start:]
    replies = [m for m in new if isinstance(m, ChatMessageAssistant)]
    if not replies or (episode.done and not replies[-1].tool_calls):
        return
    reply = replies[-1]
    if not reply.tool_calls:
        messages.append(ChatMessageUser(content=episode.text_reply(reply.text)))
        return
    calls = {call.id: call for call in reply.tool_calls}
    for message in new:
        if not isinstance(message, ChatMessageTool) or message.error is None:
            continue
        if message.error.type != "parsing" or message.tool_call_id not in calls:
            continue
        call = calls[message.tool_call_id]
        args = None if call.parse_error else call.arguments
        answer = episode.refused(call.function, args)
        message.error = ToolCallError("parsing", answer)

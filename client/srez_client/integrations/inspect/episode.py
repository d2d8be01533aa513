"""One sample's episode: the simulator behind the tools an Inspect model calls (no Inspect here).

:class:`SampleEpisode` holds an in-process :class:`~srez_env.env.SREEnv` and answers each call as
the project's own LLM agent is answered: the observation as compact JSON
(:func:`srez_env.agents.llm_adapters.observation_text`). Every call costs a step, as in any run:

* a call Inspect executes goes to :meth:`SampleEpisode.call`;
* a call Inspect refuses before it reaches a tool (arguments that do not match the schema, an
  unknown tool name, arguments that are not JSON) goes to :meth:`SampleEpisode.refused`, so the
  environment rejects it with its own error code and counts it, as ``srez eval`` does;
* a reply with no tool call goes to :meth:`SampleEpisode.text_reply`: the environment parses the
  text as one JSON call (``PARSE_ERROR`` otherwise), as the project's LLM agent hands it over.

The episode ends on ``submit``, at the step budget, or through :meth:`SampleEpisode.end` when the
model stops or a limit of Inspect's ends the sample; :meth:`SampleEpisode.grade` then grades it
with the same grader as every run (:func:`srez_env.grade.grade_episode`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from srez_env.agents.llm_adapters import Reply, decide, observation_text, system_prompt
from srez_env.env import SREEnv
from srez_env.episode import EndReason
from srez_env.grade import Grade, grade_episode
from srez_env.task import Task

AGENT_NAME: Final = "inspect"
"""The agent's name in the grade: the model is whatever Inspect was given."""
SYSTEM_PROMPT: Final = system_prompt("tools")
"""The system prompt of the project's tool-calling LLM agent, word for word."""


class SampleEpisode:
    """The episode of one sample (one task, one epoch)."""

    def __init__(self, task: Task, *, run_seed: int, model: str) -> None:
        self.env = SREEnv(task, run_seed=run_seed, agent=AGENT_NAME, model=model)
        self.prompt: dict[str, Any] = self.env.reset()

    @property
    def done(self) -> bool:
        """Whether the episode has ended (submit, step budget, or :meth:`end`)."""
        return self.env.done

    @property
    def prompt_text(self) -> str:
        """The incident prompt: preamble, brief, alerts, budget, tools and glossary."""
        return str(self.prompt["text"])

    def call(self, tool: str, args: Mapping[str, Any]) -> str:
        """Executes one call; the observation the model reads."""
        return self._step({"tool": tool, "args": dict(args)})

    def refused(self, tool: str, args: Mapping[str, Any] | None, raw: str | None = None) -> str:
        """A call Inspect refused before any tool ran: the environment judges and counts it.

        Args:
            tool: The tool name the model used (possibly unknown).
            args: Its arguments, when they were JSON.
            raw: The arguments as the model wrote them, when they were not JSON.
        """
        if args is None:
            return self._step(f'{{"tool": {json.dumps(tool)}, "args": {raw or ""}}}')
        return self._step({"tool": tool, "args": dict(args)})

    def text_reply(self, text: str) -> str:
        """A reply with no tool call: the one JSON call in its text, else the text itself, is
        handed over (the project's LLM agent reads a text reply the same way)."""
        return self._step(decide("tools", Reply(text=text)).action)

    def end(self, reason: EndReason) -> None:
        """Ends the episode where it stands, if it has not ended (no step is used)."""
        if reason == "submit":
            msg = "only the submit tool ends an episode by submit"
            raise ValueError(msg)
        self.env.force_submit(reason)

    def grade(self) -> Grade:
        """The grade of the ended episode (ends it as ``agent_exit`` first if it runs)."""
        if not self.done:
            self.env.force_submit("agent_exit")
        return grade_episode(self.env.record())

    def _step(self, action: Mapping[str, Any] | str) -> str:
        return observation_text(self.env.step(action).observation)

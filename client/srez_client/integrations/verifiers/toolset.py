"""The 14 SRE-Zero tools as a verifiers tool server (MCP over streamable HTTP), one per rollout.

verifiers launches it as ``python -m srez_client.integrations.verifiers.toolset`` beside each
rollout; it fetches the rollout's task data (:class:`SrezData`, a public reference), builds the
episode, and serves the tools under their own names (``get_logs``, ``submit`` ...). Each call is
one step of the episode, and the server records it in the rollout's state (:class:`SrezState`),
from which the host scores the rollout (:mod:`.scoring`). Calls are serialised: an episode is a
sequence, so two tool calls the model makes at once run one after the other.

The parameters each tool advertises are its argument model's (types, enums, defaults,
descriptions). An argument of the wrong JSON type is refused by the MCP layer before it reaches
the episode (no step is used); everything the simulator checks (an unknown key, a bad value or
version, a call after the end) costs a step and says why, as everywhere in SRE-Zero.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import verifiers.v1 as vf

from srez_client.integrations.task_source import resolve
from srez_client.integrations.verifiers.models import SrezData, SrezState
from srez_client.integrations.verifiers.scoring import AGENT_NAME
from srez_env.actions import TOOLS, ToolSpec
from srez_env.env import SREEnv

_LOOSE = {("set_config", "value"): str | int | float | bool}
"""Parameters the simulator accepts in more JSON types than their model's (a number for a
config value): the MCP layer must not refuse what the episode takes."""


def _signature(spec: ToolSpec) -> inspect.Signature:
    params = []
    for name, field in spec.args.model_fields.items():
        annotation = _LOOSE.get((spec.name, name), field.annotation)
        default = inspect.Parameter.empty if field.is_required() else field.default
        params.append(
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=default,
                annotation=Annotated[annotation, field],
            )
        )
    return inspect.Signature(params, return_annotation=str)


class SrezToolset(vf.Toolset[vf.ToolsetConfig, SrezState]):
    """The SRE-Zero tools over one episode (see the module docstring)."""

    TOOL_PREFIX = None
    """Tools keep their own names: the prompt and the glossary name them so."""

    def __init__(self, config: vf.ToolsetConfig) -> None:
        super().__init__(config)
        self.episode: SREEnv | None = None
        self._turn = asyncio.Lock()

    async def setup_task(self, task: SrezData) -> None:
        """Starts the rollout's episode."""
        self.episode = SREEnv(resolve(task.ref), agent=AGENT_NAME)
        self.episode.reset()

    def register(self, mcp: Any) -> None:
        """Adds the tools, each a step of the episode with the state synced around it."""
        for spec in TOOLS.values():
            synced = self._with_state(self._tool(spec))
            mcp.add_tool(self._serialised(synced), name=spec.name, description=spec.description)

    def _tool(self, spec: ToolSpec) -> Callable[..., Awaitable[str]]:
        async def call(**args: Any) -> str:
            return self.call(spec.name, args)

        call.__name__ = spec.name
        call.__signature__ = _signature(spec)  # type: ignore[attr-defined]
        return call

    def _serialised(self, fn: Callable[..., Awaitable[str]]) -> Callable[..., Awaitable[str]]:
        @functools.wraps(fn)
        async def one_at_a_time(**args: Any) -> str:
            async with self._turn:
                return await fn(**args)

        one_at_a_time.__signature__ = inspect.signature(fn)  # type: ignore[attr-defined]
        return one_at_a_time

    def call(self, tool: str, args: dict[str, Any]) -> str:
        """One step: the observation as JSON text; the call is recorded in the state."""
        if self.episode is None:
            msg = "the tool server has no episode: the rollout's task was not set up"
            raise RuntimeError(msg)
        action = {"tool": tool, "args": args}
        result = self.episode.step(action)
        state: SrezState = self.state
        state.actions.append(action)
        state.done = self.episode.done
        return json.dumps(result.observation)


if __name__ == "__main__":
    SrezToolset.run()

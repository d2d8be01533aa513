"""An episode in this process (``srez mcp --task``), recorded by the ``inline`` backend's host
(:class:`~srez_client.backends.inline.host.HostedRun`): its run folder, dialog and grade are
those of an inline ``srez eval`` run that made the same calls.

The run ends when the episode does: at ``submit`` (or at the step budget) it is graded and filed
before the call is answered, so an MCP client that closes the connection at once loses nothing;
a client that leaves without submitting ends it as an agent that exits does (``agent_exit``),
in :meth:`InlinePort.close`. The grade is written to the run folder, never sent to the client.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import ValidationError

from srez_client.backends.inline.host import HostedRun, InlineRun
from srez_client.integrations.mcp.port import (
    EpisodePort,
    Observation,
    PortError,
    first_error,
)
from srez_daemon.protocol.agent import SUBMIT_TOOL
from srez_daemon.protocol.api import AgentTask, submit_args


class InlinePort(EpisodePort):
    """The episode of ``hosted``, one call at a time."""

    def __init__(self, hosted: HostedRun) -> None:
        self.hosted = hosted
        self.run: InlineRun | None = None
        """The finished run, once it ended."""

    async def task(self) -> AgentTask:
        episode, manifest = self.hosted.episode, self.hosted.manifest
        return AgentTask(
            task_id=manifest.task_id,
            run_id=manifest.run_id,
            run_seed=manifest.run_seed,
            max_steps=episode.task.max_steps,
            prompt=episode.prompt,
        )

    async def call(self, tool: str, args: dict[str, Any]) -> Observation:
        if self.run is not None:
            raise PortError.ended()
        if tool == SUBMIT_TOOL:  # as the agent socket takes it: POST /submit
            try:
                args = submit_args(args)
            except ValidationError as e:
                raise PortError.bad_request(first_error(e)) from e
        outcome = await asyncio.to_thread(self.hosted.episode.call, tool, args)
        if self.hosted.episode.done:
            await self._end()
        return Observation.from_step(outcome.observation)

    async def _end(self) -> None:
        if self.run is None:
            self.run = await asyncio.to_thread(self.hosted.end, None)

    async def close(self) -> None:
        """Ends the run if the client left before the episode ended (``agent_exit``)."""
        if self.run is None:
            if not self.hosted.episode.done:
                self.hosted.episode.force_submit("agent_exit")
            await self._end()

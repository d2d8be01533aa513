"""An episode reached through a run's agent socket (docs/design.md §5): the daemon executes and
records every call, so the MCP server adds nothing to the record and sees nothing of the grade."""

from __future__ import annotations

import stat
import urllib.parse
from pathlib import Path
from typing import Any

import orjson

from srez_client.errors import DaemonUnreachableError, UsageError
from srez_client.integrations.mcp.agent_http import AgentHTTP
from srez_client.integrations.mcp.port import EpisodePort, Observation, PortError
from srez_daemon.protocol.agent import SUBMIT_TOOL
from srez_daemon.protocol.api import AgentTask


class SocketPort(EpisodePort):
    """The agent socket at ``path``, over one kept-alive connection (aiohttp's client:
    :mod:`.agent_http`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._http = AgentHTTP(path)

    @classmethod
    def checked(cls, path: Path) -> SocketPort:
        """A port to ``path``, refused at once when it is not a socket.

        Raises:
            UsageError: If ``path`` does not exist or is not a unix socket.
        """
        try:
            mode = path.stat().st_mode
        except OSError as e:
            msg = f"--socket {path}: {e.strerror or e} (the run's agent socket: $SREZ_AGENT_SOCKET inside a run)"
            raise UsageError(msg) from None
        if not stat.S_ISSOCK(mode):
            msg = f"--socket {path} is not a unix socket (the run's agent socket: $SREZ_AGENT_SOCKET inside a run)"
            raise UsageError(msg)
        return cls(path)

    async def _request(self, method: str, path: str, body: bytes = b"") -> bytes:
        status, data = await self._http.request(method, path, body)
        if status < 300:
            return data
        try:
            error = orjson.loads(data)["error"]
            code, message = str(error["code"]), str(error["message"])
        except (orjson.JSONDecodeError, KeyError, TypeError):
            code, message = f"http_{status}", data.decode(errors="replace")[:300]
        raise PortError(code, message)

    async def task(self) -> AgentTask:
        return AgentTask.model_validate_json(await self._request("GET", "/task"))

    async def call(self, tool: str, args: dict[str, Any]) -> Observation:
        path = "/submit" if tool == SUBMIT_TOOL else f"/tools/{urllib.parse.quote(tool, safe='')}"
        try:
            body = await self._request("POST", path, orjson.dumps(args))
        except DaemonUnreachableError as e:
            raise PortError.unreachable(str(e)) from e
        return Observation.from_body(body)

    async def close(self) -> None:
        await self._http.close()

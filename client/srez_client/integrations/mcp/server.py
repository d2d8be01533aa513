"""The MCP server: the agent's tools, the incident prompt, over stdio or streamable HTTP.

Built on the ``mcp`` library's low-level :class:`mcp.server.Server`, so each tool keeps the exact
JSON Schema the task hands out (``GET /task``: the specs of :mod:`srez_env.actions`, arguments
with ``additionalProperties: false``). Arguments are not checked here: the host checks them, so a
bad call gets the same error observation, and costs the same step, as on the agent socket. The
incident prompt is the server's instructions and the prompt :data:`~.port.PROMPT_NAME`.

This is the only module of the package that imports ``mcp``; the command line imports it when
``srez mcp`` runs, never at start-up.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import stat
from collections.abc import Callable
from typing import Any, Final, cast

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from srez_client.integrations.mcp.http_token import BearerToken
from srez_client.integrations.mcp.port import PROMPT_NAME, ToolCalls
from srez_daemon.protocol import srez_version
from srez_daemon.protocol.api import AgentTask

logger = logging.getLogger(__name__)

LOOPBACK: Final = "127.0.0.1"
"""The only address the HTTP transport listens on."""
MCP_PATH: Final = "/mcp"


def mcp_tools(task: AgentTask) -> list[types.Tool]:
    """The task's tools (OpenAI function specs in its prompt) as MCP tools, schemas unchanged."""
    tools = []
    for spec in task.prompt.get("tools", []):
        function = spec["function"]
        tools.append(
            types.Tool(
                name=function["name"],
                description=function.get("description"),
                input_schema=function["parameters"],
            )
        )
    return tools


def build_server(task: AgentTask, calls: ToolCalls) -> Server[Any]:
    """The MCP server of one episode: its tools, its prompt, and ``calls`` to execute them."""
    text = str(task.prompt.get("text", ""))
    tools = mcp_tools(task)
    prompt = types.Prompt(
        name=PROMPT_NAME,
        description=f"The incident of task {task.task_id}: brief, alerts, tools and step budget",
    )

    async def list_tools(
        _ctx: ServerRequestContext[Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        _ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        result = await calls.call(params.name, params.arguments)
        content: list[types.ContentBlock] = [types.TextContent(type="text", text=result.text)]
        return types.CallToolResult(content=content, is_error=result.is_error)

    async def list_prompts(
        _ctx: ServerRequestContext[Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[prompt])

    async def get_prompt(
        _ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        if params.name != PROMPT_NAME:
            msg = f"unknown prompt {params.name!r}: this server has {PROMPT_NAME!r}"
            raise MCPError(code=types.INVALID_PARAMS, message=msg)
        message = types.PromptMessage(
            role="user", content=types.TextContent(type="text", text=text)
        )
        return types.GetPromptResult(description=prompt.description, messages=[message])

    server: Server[Any] = Server(
        "srez",
        version=srez_version(),
        title="SRE-Zero",
        instructions=text,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )
    server.middleware = []  # no tracing span per message: nothing here exports them
    return server


async def serve_stdio(server: Server[Any]) -> None:
    """Serves one client on this process's stdin and stdout until it closes them.

    When they are pipes (as an MCP client starts its servers), they are read and written on the
    event loop: the library's own stdio reads and writes through worker threads, three thread
    hops per call, which cost a loaded machine about a millisecond a call (``make bench``).
    """
    pipes = await _stdio_pipes()
    stdin, stdout = (None, None) if pipes is None else pipes
    async with stdio_server(stdin, stdout) as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


class _PipeLines:
    """The lines of a pipe, as the library's stdio server iterates a file."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> _PipeLines:
        return self

    async def __anext__(self) -> str:
        line = await self._reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


class _PipeText:
    """Text written to a pipe, as the library's stdio server writes a file."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode())

    async def flush(self) -> None:
        await self._writer.drain()


async def _stdio_pipes() -> tuple[anyio.AsyncFile[str], anyio.AsyncFile[str]] | None:
    """Stdin and stdout on the event loop, or None when either is not a pipe or a socket."""
    if not all(stat.S_ISFIFO(m) or stat.S_ISSOCK(m) for m in (_mode(0), _mode(1))):
        return None
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**24)  # a message is one line, however long
    await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(0, "rb", closefd=False)
    )
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(1, "wb", closefd=False)
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    # the library's stdio server takes any object that reads and writes like its files
    return cast("anyio.AsyncFile[str]", _PipeLines(reader)), cast(
        "anyio.AsyncFile[str]", _PipeText(writer)
    )


def _mode(fd: int) -> int:
    try:
        return os.fstat(fd).st_mode
    except OSError:
        return 0


def loopback_socket(port: int) -> socket.socket:
    """A listening TCP socket on 127.0.0.1:``port`` (0: a free port).

    Raises:
        OSError: If the port cannot be bound (in use, privileged).
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((LOOPBACK, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


async def serve_http(
    server: Server[Any], sock: socket.socket, token: str, announce: Callable[[str], None]
) -> None:
    """Serves streamable HTTP at ``http://127.0.0.1:PORT/mcp`` on ``sock``, to requests that carry
    ``token`` (:class:`~.http_token.BearerToken`), until SIGINT or SIGTERM; ``announce`` gets the
    URL once it listens."""
    import uvicorn

    app = server.streamable_http_app(streamable_http_path=MCP_PATH, host=LOOPBACK)
    guarded = BearerToken(app, token)
    runner = uvicorn.Server(uvicorn.Config(guarded, log_level="warning", lifespan="on"))
    url = f"http://{LOOPBACK}:{sock.getsockname()[1]}{MCP_PATH}"
    serving = asyncio.ensure_future(runner.serve(sockets=[sock]))
    while not runner.started and not serving.done():  # noqa: ASYNC110 - uvicorn has only the flag
        await asyncio.sleep(0.005)
    if runner.started:
        announce(url)
    await serving

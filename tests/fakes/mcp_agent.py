"""An MCP client agent for ``--agent mcp:NAME`` runs, written against the ``mcp`` client API.

It does what a CLI agent (Claude Code, Codex CLI ...) does with the configuration the launcher
hands it: starts the ``srez`` server of the JSON configuration (``argv[1]``, from
``{mcp_config}``), reads the prompt from standard input, lists the tools, and calls them; its
"policy" is a replay file (``argv[2]``: one ``{"tool": ..., "args": {...}}`` per line, the
scripted expert's trajectory say). It prints one JSON line per fact it checked (flushed at once:
the daemon ends the sandbox soon after ``submit``), which ends up in the run's ``logs/agent.log``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from mcp.client.stdio import stdio_client

from mcp import Client, StdioServerParameters


def report(**fact: object) -> None:
    print(json.dumps(fact), flush=True)


async def play(config: dict[str, Any], actions: list[dict[str, Any]], prompt: str) -> None:
    server = config["mcpServers"]["srez"]
    params = StdioServerParameters(
        command=server["command"], args=server["args"], env=server.get("env") or None
    )
    async with Client(stdio_client(params)) as client:
        tools = (await client.list_tools()).tools
        report(
            tools=sorted(t.name for t in tools),
            prompt_is_instructions=client.instructions == prompt,
        )
        for action in actions:
            result = await client.call_tool(action["tool"], action["args"])
            report(tool=action["tool"], is_error=result.is_error)


def main() -> None:
    prompt = sys.stdin.read()
    config = json.loads(Path(sys.argv[1]).read_text())
    lines = Path(sys.argv[2]).read_text().splitlines()
    asyncio.run(play(config, [json.loads(line) for line in lines if line], prompt))


if __name__ == "__main__":
    main()

"""An MCP client agent whose policy is a real model, for ``--agent mcp:NAME`` runs.

It does what a model-driven MCP client does with the configuration the launcher hands it: starts
the ``srez`` server of the JSON configuration (``argv[1]``), reads the prompt from standard input,
lists the tools, and asks an OpenAI-compatible server (``argv[2]``, its base URL; ``argv[3]``, the
model) for each next call, with the server's tools as the reply's JSON schema (``response_format``,
as ``llm-json`` sends it, so a small model's every reply is one call). Each result goes back to the
model as the next message. After ``argv[4]`` calls it submits. It prints one JSON line per fact
(flushed at once: the daemon ends the sandbox soon after ``submit``), which ends up in the run's
``logs/agent.log``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import urllib.request
from pathlib import Path
from typing import Any

from mcp.client.stdio import stdio_client

from mcp import Client, StdioServerParameters
from srez_env.agents.llm_adapters import response_format

MAX_TOKENS = 256


def report(**fact: object) -> None:
    print(json.dumps(fact), flush=True)


def complete(base_url: str, model: str, messages: list[dict[str, str]], schema: Any) -> str:
    body = {
        "model": model,
        "messages": messages,
        "max_tokens": MAX_TOKENS,
        "temperature": 0,
        "response_format": schema,
    }
    request = urllib.request.Request(
        f"{base_url.rstrip('/')}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer unused"},
    )
    with urllib.request.urlopen(request, timeout=600) as reply:  # noqa: S310 - a loopback server
        content: str = json.load(reply)["choices"][0]["message"]["content"]
    return content


async def play(config: dict[str, Any], base_url: str, model: str, calls: int, prompt: str) -> None:
    server = config["mcpServers"]["srez"]
    params = StdioServerParameters(
        command=server["command"], args=server["args"], env=server.get("env") or None
    )
    async with Client(stdio_client(params)) as client:
        listed = (await client.list_tools()).tools
        tools = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description or "",
                    "parameters": t.input_schema,
                },
            }
            for t in listed
            if t.name != "submit"
        ]
        schema = response_format(tools, MAX_TOKENS)
        report(tools=sorted(t.name for t in listed))
        messages = [
            {"role": "system", "content": client.instructions or prompt},
            {"role": "user", "content": "Investigate the incident: reply with one tool call."},
        ]
        for _ in range(calls):
            reply = await asyncio.to_thread(complete, base_url, model, messages, schema)
            try:
                action = json.loads(reply)
            except json.JSONDecodeError:
                report(unparsed=reply[:200])
                messages += [{"role": "assistant", "content": reply}]
                continue
            result = await client.call_tool(action["tool"], action["args"])
            text = " ".join(getattr(part, "text", "") for part in result.content)
            report(tool=action["tool"], is_error=result.is_error, model_reply=True)
            messages += [
                {"role": "assistant", "content": reply},
                {"role": "user", "content": text[:2000] + "\nNext tool call?"},
            ]
        # said before the call: the daemon ends the sandbox as soon as submit is answered
        report(tool="submit", model_reply=False)
        await client.call_tool("submit", {})


def main() -> None:
    prompt = sys.stdin.read()
    config = json.loads(Path(sys.argv[1]).read_text())
    asyncio.run(play(config, sys.argv[2], sys.argv[3], int(sys.argv[4]), prompt))


if __name__ == "__main__":
    main()

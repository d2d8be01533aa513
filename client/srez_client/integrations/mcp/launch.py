"""Starts an ``mcp:NAME`` agent inside its run (:mod:`.agent_kind`): reads the task from the agent
socket, writes the MCP configuration and the prompt into the agent's scratch folder, and replaces
itself with the agent's command, the prompt on its standard input.

Run as ``python -m srez_client.integrations.mcp.launch -- COMMAND...`` with
``SREZ_AGENT_SOCKET`` set (the daemon does both). Standard library only, besides the project's own
pure modules: it runs before the agent, on every run.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from srez_client.integrations.mcp.agent_kind import (
    CONFIG_VAR,
    PROMPT_VAR,
    config_json,
    config_toml,
    fill,
    server_spec,
)

EXIT_NOT_STARTED = 127
"""Exit status when the command could not be started (as a shell says of a missing program)."""


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("agent", timeout=60)
        self.unix_path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(60)
        self.sock.connect(self.unix_path)


def fetch_task(path: str) -> dict[str, Any]:
    """``GET /task`` of the agent socket at ``path``."""
    conn = _UnixConnection(path)
    try:
        conn.request("GET", "/task")
        response = conn.getresponse()
        body = response.read()
    finally:
        conn.close()
    if response.status != 200:
        msg = f"GET /task answered {response.status}: {body[:200]!r}"
        raise OSError(msg)
    task = json.loads(body)
    assert isinstance(task, dict)
    return task


def main(argv: Sequence[str] | None = None) -> int:
    """Prepares and runs the agent's command; returns only when it could not be started."""
    args = list(sys.argv[1:] if argv is None else argv)
    command = args[1:] if args[:1] == ["--"] else args
    socket_path = os.environ.get("SREZ_AGENT_SOCKET")
    if not command or not socket_path:
        sys.stderr.write("srez-mcp-launch: usage: SREZ_AGENT_SOCKET=... launch -- COMMAND...\n")
        return 2
    try:
        prompt = str(fetch_task(socket_path)["prompt"]["text"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.stderr.write(f"srez-mcp-launch: cannot read the task from {socket_path}: {e}\n")
        return 1
    spec = server_spec(sys.executable, socket_path, os.environ)
    scratch = Path(tempfile.mkdtemp(prefix="srez-mcp-"))
    config, prompt_file = scratch / "mcp.json", scratch / "prompt.txt"
    config.write_text(config_json(spec))
    prompt_file.write_text(prompt)
    values = {
        "mcp_config": str(config),
        "mcp_toml": config_toml(spec),
        "prompt": prompt,
        "prompt_file": str(prompt_file),
    }
    filled = fill(command, values)
    env = {**os.environ, CONFIG_VAR: str(config), PROMPT_VAR: str(prompt_file)}
    stdin = os.open(prompt_file, os.O_RDONLY)
    os.dup2(stdin, 0)
    os.close(stdin)
    try:
        os.execvpe(filled[0], filled, env)
    except OSError as e:
        sys.stderr.write(f"srez-mcp-launch: cannot run {filled[0]!r}: {e.strerror or e}\n")
    return EXIT_NOT_STARTED


if __name__ == "__main__":
    sys.exit(main())

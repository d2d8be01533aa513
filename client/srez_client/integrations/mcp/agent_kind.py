"""``--agent mcp:NAME``: any MCP client as the agent under test (pure: no I/O, no ``mcp``).

A ``mcp:NAME`` agent is a custom command (``--agent-cmd``, like ``cmd:NAME``) that the run starts
through :mod:`.launch`: inside the agent's sandbox, the launcher reads the task from the agent
socket, writes an MCP configuration whose one server, ``srez``, is ``srez mcp --socket`` on that
socket (as ``python -m srez_client.integrations.mcp --socket``), and then runs the command with these placeholders filled in (each anywhere inside an
argument):

====================  =====================================================================
``{mcp_config}``      the path of the configuration as JSON, ``{"mcpServers": {"srez": ...}}``
                      (Claude Code's ``--mcp-config``; Gemini CLI's ``settings.json`` shape)
``{mcp_toml}``        the ``srez`` server as a TOML inline table (Codex CLI:
                      ``-c mcp_servers.srez={mcp_toml}``)
``{prompt}``          the incident prompt's text
``{prompt_file}``     the path of a file holding it
====================  =====================================================================

The prompt is also the command's standard input, and the two paths are in its environment
(:data:`CONFIG_VAR`, :data:`PROMPT_VAR`). ``run.json`` records the command as run: the launcher
first, then the command as given.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

LAUNCH_MODULE: Final = "srez_client.integrations.mcp.launch"
"""The module that starts an ``mcp:NAME`` agent inside the run."""
SERVER_MODULE: Final = "srez_client.integrations.mcp"
"""What the configuration runs: ``srez mcp --socket`` alone (:mod:`srez_client.integrations.mcp.__main__`)."""
SERVER_NAME: Final = "srez"
"""The MCP server's name in the configuration (its tools are ``mcp__srez__*`` in Claude Code)."""
CONFIG_VAR: Final = "SREZ_MCP_CONFIG"
"""The agent's variable naming the JSON configuration file."""
PROMPT_VAR: Final = "SREZ_PROMPT_FILE"
"""The agent's variable naming the prompt file."""
PASSED_TO_SERVER: Final = ("PYTHONPATH",)
"""Variables of the agent's environment its MCP server is given explicitly: a client may start a
server with a few variables only (Codex CLI passes a fixed list), and the server must import the
same code as the agent."""
_BARE_KEY: Final = re.compile(r"[A-Za-z0-9_-]+")


def launcher_argv(python: str, command: Sequence[str]) -> tuple[str, ...]:
    """The command a run of ``mcp:NAME`` records and runs: the launcher, then ``command``."""
    return (python, "-m", LAUNCH_MODULE, "--", *command)


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """How an MCP client starts ``srez mcp --socket`` (stdio)."""

    command: str
    args: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)


def server_spec(python: str, socket: str, environ: Mapping[str, str]) -> ServerSpec:
    """``srez mcp --socket SOCKET`` run by ``python`` (the agent's own interpreter, which the
    sandbox shows) as ``python -m srez_client.integrations.mcp``: the same server without the
    rest of the command line, which reads the task files as it starts (the sandbox hides them),
    with the variables of :data:`PASSED_TO_SERVER` that ``environ`` has."""
    env = {k: environ[k] for k in PASSED_TO_SERVER if environ.get(k)}
    return ServerSpec(python, ("-m", SERVER_MODULE, "--socket", socket), env)


def config_json(spec: ServerSpec) -> str:
    """The configuration as JSON: ``{"mcpServers": {"srez": {"command", "args", "env"}}}``."""
    server = {"command": spec.command, "args": list(spec.args), "env": dict(spec.env)}
    return json.dumps({"mcpServers": {SERVER_NAME: server}}, indent=2) + "\n"


def _toml_string(text: str) -> str:
    # a JSON string is a TOML basic string: the same quotes, and escapes TOML accepts
    return json.dumps(text)


def config_toml(spec: ServerSpec) -> str:
    """The server as a TOML inline table: ``{ command = "...", args = [...], env = {...} }``."""
    args = ", ".join(_toml_string(a) for a in spec.args)
    env = ", ".join(
        f"{k if _BARE_KEY.fullmatch(k) else _toml_string(k)} = {_toml_string(v)}"
        for k, v in spec.env.items()
    )
    return f"{{ command = {_toml_string(spec.command)}, args = [{args}], env = {{ {env} }} }}"


def fill(command: Sequence[str], values: Mapping[str, str]) -> list[str]:
    """``command`` with every ``{name}`` of ``values`` replaced in each argument (other braces,
    a JSON argument's say, are left as they are)."""
    out = []
    for arg in command:
        for name, value in values.items():
            arg = arg.replace("{" + name + "}", value)
        out.append(arg)
    return out

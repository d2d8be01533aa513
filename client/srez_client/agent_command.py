"""Custom agent commands ("bring your own agent") as agents of their own: ``--agent cmd:NAME``,
or ``--agent mcp:NAME`` for a command that is an MCP client (:mod:`srez_client.integrations.mcp`:
the run starts it through a launcher that hands it an MCP configuration and the prompt).

A custom command is named by the launch, never guessed: ``cmd:NAME`` files its runs under
``results/<task>/<model>/<NAME>/``, ``run.json`` records the command line (``agent_cmd``) and the
name, and the daemon runs that recorded command (it never hands a custom command the oracle, nor
attests its exit claims or provider waits). The command comes from ``--agent-cmd`` (a shell-style
string, split with :func:`shlex.split`) or, when that is not given, from ``SREZ_AGENT_CMD`` (a
JSON list of strings, as the daemon has always read it).

``SREZ_AGENT_CMD`` set while the agent is a built-in one (``scripted``, ``heuristic``, ``llm`` ...)
is refused, not reinterpreted. Running it under a name it was not given would be the other way,
and a worse one: a variable left in a shell would silently turn a baseline sweep into runs of
some other program under some made-up name, and a name the user did not choose is one they will
not look for. A one-line refusal costs one retype and makes the user say what the agent is.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from srez_client.errors import UsageError
from srez_client.integrations.mcp.agent_kind import launcher_argv
from srez_client.shell_words import absolute_argv, split_words
from srez_env.agents import MCP_PREFIX, AgentSpecError, custom_agent_name

ENV_VAR: Final = "SREZ_AGENT_CMD"


def parse_option(text: str) -> tuple[str, ...]:
    """``--agent-cmd``'s value as an argv (shell-style quoting, no shell)."""
    return tuple(split_words(text, "--agent-cmd", example="--agent-cmd 'python3 my_agent.py'"))


def parse_env(raw: str) -> tuple[str, ...]:
    """``SREZ_AGENT_CMD``'s value (a JSON list of strings) as an argv."""
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = None
    if not (isinstance(parsed, list) and parsed and all(isinstance(a, str) for a in parsed)):
        msg = f'{ENV_VAR} must be a JSON list of strings, e.g. ["python3", "my_agent.py"]'
        raise UsageError(msg)
    return tuple(parsed)


def agent_command(
    agent_spec: str,
    agent_cmd: Sequence[str] | None,
    environ: Mapping[str, str],
    *,
    cwd: Path | None = None,
) -> tuple[str, ...] | None:
    """The command a launch of ``agent_spec`` runs: None for a built-in agent. An ``mcp:NAME``
    agent's command runs behind its launcher (:func:`~srez_client.integrations.mcp.agent_kind.launcher_argv`).

    Arguments of the command that name an existing file relative to ``cwd`` (default: the
    current folder) are made absolute, since the agent does not start in the launcher's folder
    (:func:`absolute_argv`); a script named that does not exist there is refused.

    Raises:
        UsageError: ``cmd:NAME`` with a bad NAME or without a command; a command (``agent_cmd``
            or ``SREZ_AGENT_CMD``) for a built-in agent; a script file that is not there; an
            ``mcp:NAME`` agent without the ``mcp`` library (``srez[mcp]``).
    """
    try:
        name = custom_agent_name(agent_spec)
    except AgentSpecError as e:
        raise UsageError(str(e)) from None
    from_env = environ.get(ENV_VAR, "").strip()
    if name is None:
        if agent_cmd:
            msg = f"--agent-cmd is for custom agents: run it as --agent cmd:NAME (or mcp:NAME), not --agent {agent_spec}"
            raise UsageError(msg)
        if from_env:
            msg = f"{ENV_VAR} is set but the agent is the built-in {agent_spec!r}: a custom command is its own agent; run it as --agent cmd:NAME (filed under NAME), or unset {ENV_VAR}"
            raise UsageError(msg)
        return None
    if agent_cmd:
        argv = tuple(agent_cmd)
    elif from_env:
        argv = parse_env(from_env)
    else:
        msg = f"--agent {agent_spec} needs its command: --agent-cmd 'python3 my_agent.py' or {ENV_VAR}='[\"python3\", \"my_agent.py\"]'"
        raise UsageError(msg)
    where = cwd or Path.cwd()
    source = "--agent-cmd" if agent_cmd else ENV_VAR
    for arg in argv:
        path = where / arg
        if Path(arg).suffix in SCRIPT_SUFFIXES and not arg.startswith("-") and not path.exists():
            msg = f"{source} names {arg!r}, which is not a file in {where}: a relative path is taken from the folder you launch from"
            raise UsageError(msg)
    if agent_spec.startswith(MCP_PREFIX):
        if importlib.util.find_spec("mcp") is None:
            msg = f"--agent {agent_spec} serves its tools with srez mcp, which needs the MCP library: pip install 'srez[mcp]'"
            raise UsageError(msg)
        return launcher_argv(sys.executable, absolute_argv(argv, where))
    return absolute_argv(argv, where)


SCRIPT_SUFFIXES: Final = frozenset({".py", ".sh", ".js", ".mjs", ".ts", ".rb", ".pl"})
"""Suffixes that make an argument a script the command runs: one that is missing would start
the interpreter only to fail (``python3`` exits 2, read as a refused configuration), so it is
refused before the launch."""


def absolute_replay(agent_spec: str) -> str:
    """``replay:PATH`` with PATH made absolute: a daemon or a resumed evaluation does not share the
    launcher's working folder. A ``replay:`` without a path stays as it is, to be refused as that,
    not as the folder ``.``."""
    if agent_spec.startswith("replay:") and agent_spec[len("replay:") :].strip():
        return f"replay:{Path(agent_spec[len('replay:') :]).expanduser().resolve()}"
    return agent_spec

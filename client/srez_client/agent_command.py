"""Custom agent commands ("bring your own agent") as agents of their own: ``--agent cmd:NAME``.

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

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from srez_client.errors import UsageError
from srez_client.shell_words import split_words
from srez_env.agents import AgentSpecError, custom_agent_name

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
    """The command a launch of ``agent_spec`` runs: None for a built-in agent.

    Arguments of the command that name an existing file relative to ``cwd`` (default: the
    current folder) are made absolute, since the agent does not start in the launcher's folder.

    Raises:
        UsageError: ``cmd:NAME`` with a bad NAME or without a command; a command (``agent_cmd``
            or ``SREZ_AGENT_CMD``) for a built-in agent.
    """
    try:
        name = custom_agent_name(agent_spec)
    except AgentSpecError as e:
        raise UsageError(str(e)) from None
    from_env = environ.get(ENV_VAR, "").strip()
    if name is None:
        if agent_cmd:
            msg = f"--agent-cmd is for custom agents: run it as --agent cmd:NAME, not --agent {agent_spec}"
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
    return _absolute_files(argv, cwd or Path.cwd())


def _absolute_files(argv: tuple[str, ...], cwd: Path) -> tuple[str, ...]:
    out = []
    for arg in argv:
        path = Path(arg)
        if arg and not arg.startswith("-") and not path.is_absolute() and (cwd / path).exists():
            arg = str((cwd / path).resolve())
        out.append(arg)
    return tuple(out)


def absolute_replay(agent_spec: str) -> str:
    """``replay:PATH`` with PATH made absolute: a daemon or a resumed evaluation does not share the
    launcher's working folder."""
    if agent_spec.startswith("replay:"):
        return f"replay:{Path(agent_spec[len('replay:') :]).expanduser().resolve()}"
    return agent_spec

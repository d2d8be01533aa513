"""What a ``local`` run's daemon is started with: its environment, and agent specs made absolute.

The daemon gets only the environment it needs: locale, ``PATH``, ``HOME``, Python's own variables
and the ``SREZ_*`` settings of the run (:data:`PASS_ENV`); never the token (a file), and never a
provider key for the built-in LLM agents. Their runs get what the backend's model relay told
them (:func:`srez_client.relay.settings.model_environment`: the agent's ``SREZ_LLM_*`` settings,
the relay's URL and the run's scoped token); the keys stay with the relay, in this process. A
custom command given ``--model`` (``cmd:NAME``, ``mcp:NAME``: a program of yours, such as a
vendor's CLI speaking its own provider protocol, which an OpenAI-compatible relay cannot serve)
gets, as before, the launch's ``agent_env`` and the variables the daemon forwards to a
model-calling agent (:data:`srez_daemon.protocol.agent.MODEL_PASS_PATTERNS`); a baseline run
never sees a provider key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from srez_client.backends.base import LaunchSpec
from srez_client.backends.local.files import agent_socket_path, task_file_path
from srez_client.backends.local.sandbox import NO_ISOLATION, Isolation, absolute_command
from srez_daemon.protocol.agent import model_variables
from srez_env.agents.llm import LLM_SPECS
from srez_env.agents.python_agent import import_path, module_source

PASS_ENV: Final = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONUTF8",
    "PYTHONDONTWRITEBYTECODE",
    "VIRTUAL_ENV",
    "SREZ_PTY_IDLE_S",
    "SREZ_MAX_SESSIONS",
    "SREZ_EXEC_ALLOW",
    "SREZ_PROVIDER_WAIT_CAP_S",
    "SREZ_PROVIDER_WAIT_RUN_CAP_S",
    "SREZ_AGENT_WALL_CAP_S",
)
"""Variables passed through to the daemon (when set); nothing else of this environment is.
``SREZ_AGENT_CMD`` is not among them: a custom command reaches the daemon through ``run.json``
(``agent_cmd`` of a ``cmd:NAME`` run), where it is recorded."""


def passed_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """What of ``environ`` a daemon receives (for tests and ``srez runs`` diagnostics)."""
    return {k: environ[k] for k in PASS_ENV if k in environ}


def daemon_environment(
    folder: Path,
    spec: LaunchSpec,
    state_dir: Path,
    isolation: Isolation = NO_ISOLATION,
) -> dict[str, str]:
    """The environment of the daemon of the run whose live folder is ``folder``: what passes
    from this one, where its files are, its sandbox (which hides ``state_dir``) and its model:
    ``spec.model_env``, the host's model relay grant, for a built-in LLM agent (never a provider
    key: without a grant it gets nothing of its model); a custom command gets the provider's
    variables instead. A task that is not packaged is named by ``SREZ_TASK_FILE`` (the live
    folder's ``task.json``), and its set's folder is hidden from the sandbox too."""
    env = passed_environment(os.environ)
    if "SREZ_AGENT_CMD" in env:
        env["SREZ_AGENT_CMD"] = absolute_command(env["SREZ_AGENT_CMD"], Path.cwd())
    if isolation.bwrap is not None:
        hide = [str(state_dir.resolve())]
        held = spec.task_file
        if held is not None and held.set_folder is not None:  # hidden as srez_env/tasks is
            hide.append(str(held.set_folder.resolve()))
        env.update(
            SREZ_SANDBOX="bubblewrap",
            SREZ_BWRAP=str(isolation.bwrap),
            SREZ_SANDBOX_HIDE=os.pathsep.join(hide),
        )
    else:
        env["SREZ_SANDBOX"] = "none"
    if spec.task_file is not None:
        env["SREZ_TASK_FILE"] = str(task_file_path(folder).resolve())
    env.update(
        SREZ_RUN_DIR=str((folder / "run").resolve()),
        SREZ_TOKEN_FILE=str((folder / "token").resolve()),
        SREZ_HOST="127.0.0.1",
        SREZ_PORT="0",
        SREZ_ENDPOINT_FILE=str((folder / "endpoint.json").resolve()),
        SREZ_AGENT_SOCKET=str(agent_socket_path(folder)),
    )
    python_agent = import_path(spec.agent_spec)
    source = module_source(python_agent[0]) if python_agent is not None else None
    if source is not None:  # the agent process imports it, from the run folder
        root = str(source.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    if spec.time_limit_s is not None:
        env["SREZ_AGENT_TIME_LIMIT_S"] = f"{spec.time_limit_s:g}"
    if spec.model not in ("", "none"):
        if spec.agent_spec in LLM_SPECS:
            env.update(spec.model_env)
        else:  # a custom command's model and key are its own business
            env.update(model_variables(os.environ))
            env.update(spec.agent_env)
    return env

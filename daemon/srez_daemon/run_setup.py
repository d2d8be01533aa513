"""What a run is launched with: ``run.json``, its task, the agent's command line, its environment
and its sandbox, read from the run folder and the daemon's settings before anything starts.

The agent process is the daemon's own ``srez-agent`` unless ``SREZ_AGENT_CMD`` names another, or
``run.json`` names a custom agent (``agent_spec`` ``cmd:NAME`` or ``mcp:NAME``, its command in
``agent_cmd``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final

from pydantic import ValidationError

from srez_daemon.agent_network import ContainedNetwork, contained_network
from srez_daemon.errors import RunSetupError
from srez_daemon.protocol import RunManifest
from srez_daemon.sandbox import Sandbox, build_sandbox
from srez_daemon.settings import DaemonSettings
from srez_daemon.supervisor import AgentUser, agent_environment

if TYPE_CHECKING:
    from srez_env.task import Task

CUSTOM_PREFIXES: Final = ("cmd:", "mcp:")
"""Agent specs of custom agent commands: ``cmd:NAME``, and ``mcp:NAME`` (one that speaks MCP,
started through ``srez_client.integrations.mcp.launch``: the recorded command says so)."""


def load_manifest(path: Path) -> RunManifest:
    """Reads ``run.json``; raises RunSetupError with a one-line reason."""
    try:
        return RunManifest.model_validate_json(path.read_bytes())
    except OSError as e:
        msg = f"{path}: cannot read run.json: {e.strerror}"
        raise RunSetupError(msg) from e
    except ValidationError as e:
        first = e.errors()[0]
        msg = f"{path}: {'.'.join(str(x) for x in first['loc'])}: {first['msg']}"
        raise RunSetupError(msg) from e


def load_task(manifest: RunManifest, settings: DaemonSettings) -> Task:
    """The run's task: the file the host handed over (``SREZ_TASK_FILE``), held to the id
    ``run.json`` names, or else the packaged task of its id.

    Raises:
        RunSetupError: If the task cannot be read, is not valid, or is not the one recorded.
    """
    from srez_env.errors import TaskError
    from srez_env.tasks import load_tasks, parse_task_json

    path = settings.task_file
    try:
        if path is None:
            return load_tasks([manifest.task_id])[0]
        task = parse_task_json(path.read_bytes(), f"SREZ_TASK_FILE {path}")
    except OSError as e:
        msg = f"cannot read SREZ_TASK_FILE {path}: {e.strerror or e}"
        raise RunSetupError(msg) from e
    except TaskError as e:
        raise RunSetupError(str(e)) from e
    if task.id != manifest.task_id:
        msg = f"SREZ_TASK_FILE {path} holds task {task.id}, but run.json names {manifest.task_id}"
        raise RunSetupError(msg)
    return task


def agent_command(manifest: RunManifest, settings: DaemonSettings) -> tuple[tuple[str, ...], bool]:
    """The agent's command line, and whether it is the built-in ``srez-agent``.

    A ``cmd:NAME`` (or ``mcp:NAME``) run runs the ``agent_cmd`` its ``run.json`` records (else
    the daemon's own ``SREZ_AGENT_CMD``), and is never the built-in agent, whatever the command;
    any other spec runs the daemon's agent command. Raises RunSetupError when ``run.json`` disagrees with itself.
    """
    spec = manifest.agent_spec
    if spec.startswith(CUSTOM_PREFIXES):
        argv = manifest.agent_cmd or (None if settings.agent_is_builtin else settings.agent_argv)
        if not argv:
            msg = f"run.json names the custom agent {spec!r} but records no agent_cmd to run"
            raise RunSetupError(msg)
        return tuple(argv), False
    if manifest.agent_cmd is not None:
        msg = f"run.json records an agent_cmd for agent {spec!r}: a custom command runs as cmd:NAME"
        raise RunSetupError(msg)
    return settings.agent_argv, settings.agent_is_builtin


def agent_env(
    settings: DaemonSettings, manifest: RunManifest, environ: Mapping[str, str]
) -> dict[str, str]:
    """The agent process's environment: the socket, its spec, seed and model (and the model's
    variables when it has one; :func:`~srez_daemon.supervisor.agent_environment`)."""
    return agent_environment(
        environ,
        settings.socket_path,
        {
            "SREZ_AGENT_SPEC": manifest.agent_spec,
            "SREZ_RUN_SEED": str(manifest.run_seed),
            "SREZ_MODEL": manifest.model,
        },
    )


def agent_sandbox(
    settings: DaemonSettings,
    manifest: RunManifest,
    command: tuple[str, ...],
    environ: Mapping[str, str],
) -> Sandbox | None:
    """The agent's bubblewrap sandbox when the settings ask for one (``local``), else None."""
    if settings.bwrap is None:
        return None
    from srez_env.agent_registry import BY_NAME

    builtin = BY_NAME.get(manifest.agent_spec)
    return build_sandbox(
        settings.bwrap,
        socket=settings.socket_path,
        command=command,
        agent_spec=manifest.agent_spec,
        model=manifest.model,
        environ=environ,
        hide=(
            settings.paths.root,
            settings.token_file,
            *([settings.task_file] if settings.task_file is not None else []),
            *settings.sandbox_hide,
        ),
        # a built-in model agent reaches its relay alone; a custom command keeps the network
        model_socket=settings.socket_path.parent / "model.sock"
        if builtin is not None and builtin.networked
        else None,
    )


def agent_network(
    settings: DaemonSettings,
    manifest: RunManifest,
    environ: Mapping[str, str],
    user: AgentUser | None,
) -> ContainedNetwork | None:
    """How the agent is cut off the network inside its container (``SREZ_AGENT_NETWORK=none``,
    :mod:`srez_daemon.agent_network`), or None: it keeps the daemon's network, or a bubblewrap
    sandbox gives it a network namespace of its own."""
    if settings.agent_network != "none" or user is None or settings.bwrap is not None:
        return None
    from srez_env.agent_registry import BY_NAME

    builtin = BY_NAME.get(manifest.agent_spec)
    return contained_network(
        uid=user.uid,
        gid=user.gid,
        builtin_networked=None if builtin is None else builtin.networked,
        model=manifest.model,
        socket_folder=settings.socket_path.parent,
        environ=environ,
    )

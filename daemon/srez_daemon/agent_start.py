"""The agent process, started while the run loads.

A run's first model call waits for two starts in a row: the daemon's (the simulator, the wire
models, the services: about 0.2 s of imports) and the agent's (its interpreter and imports, a
sandbox around it). They do not depend on each other, so the host starts the agent first: it
binds the agent socket, starts the agent against it and only then imports the runtime, whose
controller takes both over (:meth:`srez_daemon.run.RunController.adopt`). The agent's first
request (``GET /task``) waits in the socket's backlog until the episode is ready; nothing of the
run is reachable before that, and the phase stays ``starting`` until then.

The agent's clock starts when its process does (the load's fraction of a second counts against
its time limit, as it counts on its wall clock). A run that fails to load kills the agent it
started (:meth:`EarlyAgent.discard`); an agent that cannot start is reported by the controller
exactly as before (``the agent could not start``).
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from srez_core.clock import utc_timestamp
from srez_daemon.run_setup import (
    agent_command,
    agent_env,
    agent_network,
    agent_sandbox,
    load_manifest,
)
from srez_daemon.settings import DaemonSettings
from srez_daemon.supervisor import AgentProcess, AgentUser

logger = logging.getLogger(__name__)

BACKLOG = 16
"""Connections the agent socket holds before it is served (one agent makes one at a time)."""


@dataclass
class EarlyAgent:
    """The agent socket, bound and listening but not yet served, and the agent started on it."""

    listener: socket.socket
    process: AgentProcess
    started_at: float
    """``time.monotonic()`` just before the process was started: the agent's clock starts here."""
    started_utc: str
    """The same moment as a UTC timestamp (``state.json``'s ``agent_started_at``)."""
    start_error: OSError | None = None
    """Why the process could not start (the controller ends the run with it), or None."""

    async def discard(self) -> None:
        """The run could not load: kill the agent and close its socket."""
        await self.process.kill()
        self.listener.close()


def bind_agent_socket(path: Path, user: AgentUser | None) -> socket.socket:
    """The agent socket at ``path``, listening, readable by the agent alone (mode 0600, owned by
    the agent's user when it has one)."""
    path.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(str(path))
        path.chmod(0o600)  # the agent's alone: no other local user may act for it
        if user is not None:
            os.chown(path, user.uid, user.gid)
        listener.listen(BACKLOG)
        listener.setblocking(False)
    except BaseException:
        listener.close()
        raise
    return listener


async def start_agent_early(
    settings: DaemonSettings, environ: Mapping[str, str] | None
) -> EarlyAgent:
    """Binds the agent socket and starts the agent the run's ``run.json`` names.

    Raises:
        RunSetupError: ``run.json`` cannot be read or disagrees with itself, or the agent user
            does not exist (the run fails to load, as it would without the early start).
    """
    environ = dict(environ or {})
    manifest = load_manifest(settings.paths.run_json)
    argv, _ = agent_command(manifest, settings)
    user = AgentUser.lookup(settings.agent_user) if settings.agent_user else None
    for folder in (settings.paths.logs, settings.paths.world):
        folder.mkdir(parents=True, exist_ok=True)
    if user is not None:
        # an agent with a shell must not read the live run (world configs, dialog, state)
        settings.paths.root.chmod(0o700)
    listener = bind_agent_socket(settings.socket_path, user)
    try:
        sandbox = agent_sandbox(settings, manifest, argv, environ)
        process = AgentProcess(
            argv,
            agent_env(settings, manifest, environ),
            settings.paths.log("agent"),
            sandbox=sandbox,
            network=agent_network(settings, manifest, environ, user),
            log_max=settings.agent_log_max_bytes,
        )
        started_at, started_utc = time.monotonic(), utc_timestamp(datetime.now(UTC))
        error = None
        try:
            cwd = Path(user.home) if user else settings.paths.root
            await process.start(cwd, user)
        except OSError as e:
            error = e
    except BaseException:
        listener.close()
        raise
    return EarlyAgent(listener, process, started_at, started_utc, error)

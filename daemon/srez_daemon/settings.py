"""The daemon's settings, built once from the environment.

Environment (docs/design.md §4-§7):

* ``SREZ_RUN_DIR`` (required): the run folder (``/srez`` in a container; on ``local``,
  ``$SREZ_STATE/live/<run-id>/run``). It holds ``run.json`` (what to run) before the daemon starts.
* ``SREZ_TOKEN_FILE`` (required): the file holding the run's token. The daemon refuses to start if
  it is missing, empty or unreadable. The token never appears in the environment, argv or a log.
* ``SREZ_ALLOWED_PEERS``: a comma list of peer addresses served besides loopback (the docker
  backend sets the bridge's gateway, so other containers on the bridge are refused); unset: all.
* ``SREZ_HOST`` / ``SREZ_PORT``: where to listen (default ``127.0.0.1:4263``; port 0 picks a free
  one). A container sets ``0.0.0.0``; the host publishes it on loopback only.
* ``SREZ_ENDPOINT_FILE``: where to write ``{"host", "port", "pid"}`` once listening (for ``local``).
* ``SREZ_AGENT_SOCKET``: the agent's unix socket (default ``<run dir>/agent.sock``).
* ``SREZ_AGENT_CMD``: the agent command as a JSON list (default ``python -m srez_daemon.agent``).
  A run whose ``run.json`` names a ``cmd:NAME`` agent runs the ``agent_cmd`` recorded there
  instead. Any command but the default is a custom agent: never handed the oracle, its exit
  claims and provider waits not attested (:mod:`srez_daemon.attest`).
* ``SREZ_AGENT_TIME_LIMIT_S``: the agent's time limit. Attested provider waits do not count
  (:mod:`srez_daemon.agent_clock`), within ``SREZ_PROVIDER_WAIT_CAP_S`` per note (default 120)
  and ``SREZ_PROVIDER_WAIT_RUN_CAP_S`` per run (default 600).
* ``SREZ_AGENT_WALL_CAP_S``: the hard wall-clock cap of the agent phase, which ends it whatever
  was excluded; default, with a time limit, 3 x the limit + the per-run wait cap (none without a
  time limit, unless set).
* ``SREZ_PTY_IDLE_S`` (default 300) and ``SREZ_MAX_SESSIONS`` (default 8): pty/exec limits.
  ``SREZ_SESSION_WAIT_S`` (default 2): how long an exec over the session cap waits in line for a
  slot before it is refused (429 with ``Retry-After``); 0 refuses at once.
* ``SREZ_NOTES_MAX_BYTES`` (default 64 MiB), ``SREZ_NOTES_MAX_COUNT`` (default 10,000): caps on
  the agent's notes (``POST /dialog``) in one run, in bytes of dialog lines and in notes. The first
  note past either is refused (413 ``payload_too_large`` / 429 ``too_many_notes``), one
  ``notes_dropped`` entry is written, and every later note is refused the same way; tool calls go
  on. ``SREZ_NOTE_MAX_BYTES`` (default 1 MiB, the readers' line limit): the largest note's line; a
  larger note alone is refused with 413. With the step budget this bounds ``dialog.jsonl``.
* ``SREZ_AGENT_LOG_MAX_BYTES`` (default 16 MiB): the agent's stdout and stderr kept in
  ``logs/agent.log``; past it one line says so, the rest is read and dropped, and the summary's
  ``agent_output_dropped`` counts the bytes.
* ``SREZ_EXEC_ALLOW``: a JSON list of the programs exec may run (argv[0], exactly); any other is a
  403, and so is the pty unless its shell is listed. Unset (the default): any program. For a
  daemon whose API is fuzzed or shown to people who must not run commands (the schemathesis
  test allows ``["true", "echo"]``).
* ``SREZ_AGENT_USER``: run the agent as this user (the image sets ``agent``); the daemon must be
  root to switch. The agent socket is then owned by that user, mode 0600.
* ``SREZ_AGENT_NETWORK``: ``none`` takes every route outside the container from the agent's
  user (:mod:`srez_daemon.agent_network`; the docker backend sets it and grants the container
  ``CAP_NET_ADMIN`` for it), ``host`` (the default) leaves the agent the daemon's network.
  ``none`` needs ``SREZ_AGENT_USER``: the rule names the agent's user.
* ``SREZ_SANDBOX``: ``bubblewrap`` runs the agent in a bubblewrap sandbox
  (:mod:`srez_daemon.sandbox`; the ``local`` backend sets it when ``bwrap`` works), ``none`` or
  unset does not. ``SREZ_BWRAP`` names the ``bwrap`` program (default: found on ``PATH``); with
  ``bubblewrap`` and no ``bwrap`` the daemon refuses to start rather than run the agent bare.
* ``SREZ_SANDBOX_HIDE``: more host paths the sandboxed agent must not see (``os.pathsep``
  separated; the ``local`` backend passes ``$SREZ_STATE`` and a held-out set's folder), besides
  the task files, the run folder, the token file and ``SREZ_TASK_FILE``, which are always hidden.
* ``SREZ_TASK_FILE``: the run's task, as its model's JSON, when it is not a packaged task (a
  ``--tasks-dir`` or ``--task-seed`` set's, handed over by the host): loaded instead of the
  packaged task ``run.json`` names, and held to that id. It is kept where the agent cannot read it
  (beside the token), as the packaged task files are.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Self

from srez_daemon.errors import SettingsError
from srez_daemon.record.folder import (
    AGENT_LOG_MAX_BYTES,
    NOTE_MAX_BYTES,
    NOTES_MAX_BYTES,
    NOTES_MAX_COUNT,
    RunPaths,
)

DEFAULT_PORT: Final = 4263
MAX_STREAM_BYTES: Final = 1 << 20  # exec output cap per stream (docs/security.md A9)
MAX_SOCKET_PATH: Final = 107  # sun_path holds 108 bytes with the terminating NUL
DEFAULT_AGENT_ARGV: Final = (sys.executable, "-m", "srez_daemon.agent")
PROVIDER_WAIT_CAP_S: Final = 120.0
"""The most one ``provider_error`` note can exclude from the agent's time (default)."""
PROVIDER_WAIT_RUN_CAP_S: Final = 600.0
"""The most a whole run's provider waits can exclude from the agent's time (default)."""
WALL_CAP_LIMITS: Final = 3.0
"""The default hard wall cap is this many time limits plus the per-run wait cap."""


@dataclass(frozen=True, slots=True)
class DaemonSettings:
    """Everything the daemon is configured with; immutable and passed down explicitly."""

    run_dir: Path
    token_file: Path
    host: str = "127.0.0.1"
    allowed_peers: frozenset[str] = frozenset()
    """Peer addresses served besides loopback (``SREZ_ALLOWED_PEERS``); empty: every peer. In a
    container, the bridge's gateway: the host, and no other container on the bridge."""
    port: int = DEFAULT_PORT
    endpoint_file: Path | None = None
    agent_socket: Path | None = None
    agent_argv: tuple[str, ...] = DEFAULT_AGENT_ARGV
    agent_time_limit_s: float | None = None
    provider_wait_cap_s: float = PROVIDER_WAIT_CAP_S
    provider_wait_run_cap_s: float = PROVIDER_WAIT_RUN_CAP_S
    agent_wall_cap_s: float | None = None
    """The hard wall-clock cap as set; :attr:`wall_cap_s` is the one that applies."""
    pty_idle_s: float = 300.0
    max_sessions: int = 8
    session_wait_s: float = 2.0
    """How long an exec over ``max_sessions`` waits for a slot before its 429."""
    keep: bool = False
    heartbeat_s: float = 15.0
    agent_user: str | None = None
    agent_network: str = "host"
    """``SREZ_AGENT_NETWORK``: ``none`` cuts the agent's user off the network."""
    notes_max_bytes: int = NOTES_MAX_BYTES
    notes_max_count: int = NOTES_MAX_COUNT
    note_max_bytes: int = NOTE_MAX_BYTES
    agent_log_max_bytes: int = AGENT_LOG_MAX_BYTES
    bwrap: Path | None = None
    """The ``bwrap`` program when the agent runs in a sandbox (``SREZ_SANDBOX=bubblewrap``)."""
    sandbox_hide: tuple[Path, ...] = ()
    """More host paths the sandboxed agent must not see (``SREZ_SANDBOX_HIDE``)."""
    exec_allow: tuple[str, ...] | None = None
    """The programs exec and the pty may run (None: any)."""
    task_file: Path | None = None
    """The run's task when it is not packaged (``SREZ_TASK_FILE``); None: the packaged task."""

    def may_run(self, program: str) -> bool:
        """Whether exec (or the pty) may run ``program`` (``SREZ_EXEC_ALLOW``)."""
        return self.exec_allow is None or program in self.exec_allow

    @property
    def paths(self) -> RunPaths:
        return RunPaths(self.run_dir)

    @property
    def socket_path(self) -> Path:
        return self.agent_socket or self.run_dir / "agent.sock"

    @property
    def wall_cap_s(self) -> float | None:
        """The agent phase's hard wall-clock cap: as set, else 3 x the time limit + the per-run
        wait cap, else none (no time limit)."""
        if self.agent_wall_cap_s is not None:
            return self.agent_wall_cap_s
        if self.agent_time_limit_s is None:
            return None
        return WALL_CAP_LIMITS * self.agent_time_limit_s + self.provider_wait_run_cap_s

    @property
    def agent_is_builtin(self) -> bool:
        """Whether the agent is the daemon's own ``srez-agent`` (the default command, not a
        custom ``SREZ_AGENT_CMD``): only its provider and configuration failures are attested
        (:mod:`srez_daemon.attest`)."""
        return self.agent_argv == DEFAULT_AGENT_ARGV

    @classmethod
    def from_env(cls, environ: Mapping[str, str], *, keep: bool = False) -> Self:
        """Reads the settings from an environment mapping; raises SettingsError naming the
        variable that is missing or malformed."""

        def required(name: str) -> Path:
            value = environ.get(name, "").strip()
            if not value:
                msg = f"{name} is not set; it must name the {'run folder' if name == 'SREZ_RUN_DIR' else 'token file'}"
                raise SettingsError(msg)
            return Path(value)

        # imported here: importing the app (before it listens) loads nothing of srez_env
        from srez_env.env_vars import env_number

        number = functools.partial(env_number, environ, error=SettingsError)

        argv: tuple[str, ...] = DEFAULT_AGENT_ARGV
        raw_cmd = environ.get("SREZ_AGENT_CMD", "").strip()
        if raw_cmd:
            try:
                parsed = json.loads(raw_cmd)
            except ValueError:
                parsed = None
            if not (
                isinstance(parsed, list) and parsed and all(isinstance(a, str) for a in parsed)
            ):
                msg = (
                    'SREZ_AGENT_CMD must be a JSON list of strings, e.g. ["python", "my_agent.py"]'
                )
                raise SettingsError(msg)
            argv = tuple(parsed)
        port = number("SREZ_PORT", DEFAULT_PORT)
        if port != int(port) or not 0 <= port <= 65535:
            msg = f"SREZ_PORT={environ.get('SREZ_PORT')!r} must be an integer from 0 to 65535"
            raise SettingsError(msg)
        endpoint = environ.get("SREZ_ENDPOINT_FILE", "").strip()
        socket = environ.get("SREZ_AGENT_SOCKET", "").strip()
        run_dir = required("SREZ_RUN_DIR")
        socket_path = Path(socket) if socket else run_dir / "agent.sock"
        if len(os.fsencode(socket_path)) > MAX_SOCKET_PATH:
            msg = (
                f"the agent socket path {str(socket_path)[:60]}... is {len(os.fsencode(socket_path))} bytes, "
                f"over the {MAX_SOCKET_PATH}-byte limit of unix sockets; set SREZ_AGENT_SOCKET to a shorter path"
            )
            raise SettingsError(msg)
        return cls(
            bwrap=_bwrap(environ),
            sandbox_hide=tuple(
                Path(p) for p in environ.get("SREZ_SANDBOX_HIDE", "").split(os.pathsep) if p.strip()
            ),
            run_dir=run_dir,
            token_file=required("SREZ_TOKEN_FILE"),
            host=environ.get("SREZ_HOST", "").strip() or "127.0.0.1",
            allowed_peers=frozenset(
                p.strip() for p in environ.get("SREZ_ALLOWED_PEERS", "").split(",") if p.strip()
            ),
            port=int(port),
            endpoint_file=Path(endpoint) if endpoint else None,
            agent_socket=Path(socket) if socket else None,
            agent_argv=argv,
            agent_time_limit_s=number("SREZ_AGENT_TIME_LIMIT_S", None, low=1.0),
            provider_wait_cap_s=number("SREZ_PROVIDER_WAIT_CAP_S", PROVIDER_WAIT_CAP_S),
            provider_wait_run_cap_s=number("SREZ_PROVIDER_WAIT_RUN_CAP_S", PROVIDER_WAIT_RUN_CAP_S),
            agent_wall_cap_s=number("SREZ_AGENT_WALL_CAP_S", None, low=1.0),
            pty_idle_s=number("SREZ_PTY_IDLE_S", 300.0, low=1.0),
            max_sessions=int(number("SREZ_MAX_SESSIONS", 8, low=1)),
            session_wait_s=number("SREZ_SESSION_WAIT_S", 2.0, low=0.0),
            keep=keep,
            agent_user=environ.get("SREZ_AGENT_USER", "").strip() or None,
            agent_network=_agent_network(environ),
            notes_max_bytes=int(number("SREZ_NOTES_MAX_BYTES", NOTES_MAX_BYTES)),
            notes_max_count=int(number("SREZ_NOTES_MAX_COUNT", NOTES_MAX_COUNT)),
            agent_log_max_bytes=int(
                number("SREZ_AGENT_LOG_MAX_BYTES", AGENT_LOG_MAX_BYTES, low=1024)
            ),
            note_max_bytes=int(
                min(number("SREZ_NOTE_MAX_BYTES", NOTE_MAX_BYTES, low=256), NOTE_MAX_BYTES)
            ),
            exec_allow=_string_list(environ, "SREZ_EXEC_ALLOW"),
            task_file=_absolute(environ, "SREZ_TASK_FILE"),
        )


def _agent_network(environ: Mapping[str, str]) -> str:
    """``SREZ_AGENT_NETWORK``, checked: ``none`` needs an agent user to name in its rule."""
    mode = environ.get("SREZ_AGENT_NETWORK", "").strip() or "host"
    if mode not in ("host", "none"):
        msg = f"SREZ_AGENT_NETWORK={mode[:40]!r} must be host or none"
        raise SettingsError(msg)
    if mode == "none" and not environ.get("SREZ_AGENT_USER", "").strip():
        msg = "SREZ_AGENT_NETWORK=none needs SREZ_AGENT_USER: the agent is cut off by its user"
        raise SettingsError(msg)
    return mode


def _bwrap(environ: Mapping[str, str]) -> Path | None:
    """The ``bwrap`` program ``SREZ_SANDBOX`` asks for, or None when it asks for no sandbox."""
    mode = environ.get("SREZ_SANDBOX", "").strip() or "none"
    if mode == "none":
        return None
    if mode != "bubblewrap":
        msg = f"SREZ_SANDBOX={mode!r} must be bubblewrap or none"
        raise SettingsError(msg)
    named = environ.get("SREZ_BWRAP", "").strip()
    if named:
        found: Path | None = Path(named)
    else:  # imported only here: the protocol's models would delay the daemon's first answer
        from srez_daemon.protocol.sandbox import find_bwrap

        found = find_bwrap(environ)
    if found is None or not found.is_absolute() or not os.access(found, os.X_OK):
        msg = (
            f"SREZ_SANDBOX=bubblewrap but {named or 'no bwrap on PATH'} is not an executable"
            " absolute path; install bubblewrap (apt-get install bubblewrap) or set"
            " SREZ_SANDBOX=none to run the agent without isolation"
        )
        raise SettingsError(msg)
    return found


def _absolute(environ: Mapping[str, str], name: str) -> Path | None:
    """An absolute path the variable ``name`` gives, None when it is unset."""
    raw = environ.get(name, "").strip()
    if not raw:
        return None
    if not Path(raw).is_absolute():
        msg = f"{name}={raw!r} must be an absolute path"
        raise SettingsError(msg)
    return Path(raw)


def _string_list(environ: Mapping[str, str], name: str) -> tuple[str, ...] | None:
    raw = environ.get(name, "").strip()
    if not raw:
        return None
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = None
    if not (isinstance(parsed, list) and all(isinstance(a, str) and a for a in parsed)):
        msg = f'{name} must be a JSON list of program names, e.g. ["true", "echo"]'
        raise SettingsError(msg)
    return tuple(parsed)

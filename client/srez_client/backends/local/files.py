"""The files of a ``local`` run's state folder, ``$SREZ_STATE/live/<run-id>/``.

``record.json`` (:class:`LocalRecord`), ``token``, ``task.json`` (a task that is not packaged),
``run/run.json``, ``endpoint.json`` (:class:`RunEndpoint`, written by the daemon) and
``daemon.out``. Blocking helpers; the backend
calls them through ``asyncio.to_thread`` where they may take time.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import secrets
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from srez_client.backends.base import LaunchSpec
from srez_client.errors import UsageError
from srez_client.layout import new_run_id, run_path
from srez_client.transfer.plan import DEFAULT_LIMITS
from srez_client.transfer.tree import copy_tree
from srez_core.atomic import atomic_write_json
from srez_core.clock import utc_timestamp
from srez_daemon.protocol import RunManifest, srez_version
from srez_env.agents import custom_agent_name, make_agent
from srez_env.agents.llm import LLM_SPECS

logger = logging.getLogger(__name__)

_LOOPBACK: Final = frozenset({"127.0.0.1", "::1", "localhost"})
MAX_SOCKET_PATH: Final = 100
"""Longest unix socket path used (the kernel's limit is 107 bytes plus NUL)."""


def agent_socket_path(folder: Path) -> Path:
    """Where the run's agent socket goes: ``<live folder>/agent.sock`` if that path is short
    enough for a unix socket, else ``<tmp>/srez-<uid>/<run-id>.sock`` (a private folder).

    Outside ``run/`` either way, so the mirror never meets it.
    """
    near = (folder / "agent.sock").resolve()
    if len(os.fsencode(near)) <= MAX_SOCKET_PATH:
        return near
    short = Path(tempfile.gettempdir()) / f"srez-{os.getuid()}"
    short.mkdir(mode=0o700, exist_ok=True)
    if short.is_symlink() or short.stat().st_uid != os.getuid():
        msg = f"{short} is not a private folder of this user; set TMPDIR to one"
        raise PermissionError(msg)
    return short / f"{folder.name}.sock"


class LocalRecord(BaseModel):
    """``record.json`` of a local run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = 1
    run_id: str
    labels: dict[str, str]
    manifest: RunManifest
    keep: bool = False
    pid: int | None = None
    pid_start: int | None = None
    """Start time of ``pid`` (clock ticks since boot): a reused pid is not our daemon."""
    created_at: str


def plan_manifest(spec: LaunchSpec, now: datetime, *, backend: str, isolation: str) -> RunManifest:
    """The ``run.json`` of a new run: its id (the host's, the relaying backend's, or a new one),
    its agent checked (a custom command is named by its spec), the task's provenance as the host
    gave it.

    Raises:
        srez_env.errors.EnvError: If the task or the agent is unknown (or the task file handed
            over is not a valid task).
        UsageError: If an LLM agent has no model.
        ResultsError: If the task, model or agent cannot name a results folder.
    """
    task = spec.task()
    name = (
        custom_agent_name(spec.agent_spec) or make_agent(spec.agent_spec, task, spec.run_seed).name
    )
    if name in LLM_SPECS and spec.model in ("", "none"):
        msg = (
            f"agent {spec.agent_spec!r} needs a model: give a litellm slug, e.g. openai/gpt-4o-mini"
        )
        raise UsageError(msg)
    relayed = spec.relayed
    run_id = relayed.run_id if relayed is not None else spec.run_id or new_run_id(now)
    run_path(spec.results_root, task.id, spec.model, name, run_id)  # names are safe
    return RunManifest(
        run_id=run_id,
        task_id=task.id,
        agent=name,
        agent_spec=spec.agent_spec,
        agent_cmd=spec.agent_cmd,
        model=spec.model,
        backend=backend if relayed is None else relayed.backend,
        attempt=None if relayed is None else relayed.attempt,
        run_seed=spec.run_seed,
        srez_version=srez_version(),
        started_at=utc_timestamp(now),
        isolation=isolation,
    ).model_copy(update=spec.provenance)


TASK_FILE: Final = "task.json"
"""A run's task when it is not packaged (``LaunchSpec.task_file``), beside the token: outside
``run/``, so no mirror copies it, and under ``$SREZ_STATE``, which the sandbox hides."""


def task_file_path(folder: Path) -> Path:
    """Where the task of the run whose live folder is ``folder`` is kept, if it is not packaged."""
    return folder / TASK_FILE


def _write_private(path: Path, data: str) -> None:
    """A new file of this user alone (0600), flushed to disk."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(path, flags, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def prepare_folder(folder: Path, record: LocalRecord, task_file: str | None = None) -> None:
    """Write the token (0600, new file), the task when it is not packaged (``task_file``, the
    task's JSON: ``task.json``, 0600), ``run/run.json`` and ``record.json`` of a new run."""
    _write_private(folder / "token", secrets.token_urlsafe(32))
    if task_file is not None:
        _write_private(task_file_path(folder), task_file)
    (folder / "run").mkdir(mode=0o700)
    atomic_write_json(folder / "run" / "run.json", record.manifest)
    atomic_write_json(folder / "record.json", record)


def write_record(folder: Path, record: LocalRecord) -> None:
    """Rewrite ``record.json`` (atomically: a reader sees the old record or the new)."""
    atomic_write_json(folder / "record.json", record)


def copy_out_folder(folder: Path, dest: Path, run_id: str) -> None:
    """Copy ``folder/run`` into ``dest`` safely and add ``daemon.out`` as ``logs/container.log``."""
    copy_tree(folder / "run", dest, run_id=run_id)
    logs = dest / "logs"
    logs.mkdir(exist_ok=True)
    data = tail_bytes(folder / "daemon.out", DEFAULT_LIMITS.max_file_bytes)
    fd = os.open(
        logs / "container.log", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644
    )
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def tail_bytes(path: Path, limit: int) -> bytes:
    """The last ``limit`` bytes of a regular file (never through a link), or ``b""``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return b""
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(fd).st_size
        f.seek(max(0, size - limit))
        return f.read(limit)


def read_endpoint(folder: Path, pid: int | None) -> str | None:
    """The base URL in ``endpoint.json`` if the daemon ``pid`` wrote it and it is loopback."""
    try:
        data = RunEndpoint.model_validate_json((folder / "endpoint.json").read_bytes())
    except (OSError, ValidationError):
        return None
    if pid is not None and data.pid != pid:
        return None
    if data.host not in _LOOPBACK:
        with contextlib.suppress(ValueError):
            if ipaddress.ip_address(data.host).is_loopback:
                return _url(data.host, data.port)
        logger.warning("ignored a non-loopback endpoint %r in %s", data.host, folder)
        return None
    return _url(data.host, data.port)


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


class RunEndpoint(BaseModel):
    """``endpoint.json``, written by the daemon once it listens."""

    model_config = ConfigDict(frozen=True, extra="ignore")
    host: str
    port: int
    pid: int

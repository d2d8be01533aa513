"""What the ``docker`` backend keeps about a run, and what a launch writes.

State of a run, in ``$SREZ_STATE/docker/<run-id>/`` (folders 0700): ``token`` (0600, the only copy
the client ever reads; never read back from the container) and ``record.json``
(:class:`DockerRecord`: the container's name and id, its labels, written atomically). With the
ledger entry of :mod:`srez_client.backends.state` they make a container *owned*.

Apart from :func:`write_state` this is pure: what a launch writes (:func:`plan_launch`), the
agent spec and replay file a container gets (:func:`agent_specs`, :func:`read_replay`), and the tar
of the files put into a container before it starts (:func:`inputs_tar`). What the engine says
about a container is read in :mod:`~srez_client.backends.docker.container_attrs`; what an LLM
run's container is told about its model is :mod:`~srez_client.relay.settings`.
"""

from __future__ import annotations

import io
import os
import secrets
import tarfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict

from srez_client.backends.base import LaunchSpec
from srez_client.backends.state import OwnedRun, make_labels, new_nonce, private_dir
from srez_client.errors import BackendError, UsageError
from srez_client.layout import new_run_id, run_path
from srez_core.atomic import atomic_write_json
from srez_core.clock import utc_timestamp
from srez_daemon.protocol import RunManifest
from srez_env.agents import make_agent
from srez_env.agents.python_agent import import_path

RUN_DIR: Final = "/srez"
"""The run folder inside the container (``SREZ_RUN_DIR`` of the image)."""
TOKEN_PATH: Final = "run/srez/token"
"""The token file inside the container (``SREZ_TOKEN_FILE``), relative to ``/``."""
TASK_PATH: Final = "run/srez/task.json"
"""A task that is not packaged (``LaunchSpec.task_file``), relative to ``/``: beside the token,
in root's own folder (0700), root-only itself (0400), so the agent user cannot read it."""
REPLAY_PATH: Final = "run/srez-input/replay.jsonl"
"""Where a ``replay:FILE`` agent's file is put (readable by the agent user; no secret in it)."""
MAX_REPLAY_BYTES: Final = 64 << 20
"""Largest replay file put into a container."""


class DockerRecord(BaseModel):
    """``record.json`` of a docker run: what this state created."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = 1
    run_id: str
    container_name: str
    container_id: str | None = None
    """Set once the engine created it; the container is pinned by it from then on."""
    image: str
    labels: dict[str, str]
    keep: bool = False
    created_at: str


@dataclass(frozen=True, slots=True)
class LaunchPlan:
    """Everything a launch writes, decided before anything is written."""

    run_id: str
    manifest: RunManifest
    labels: dict[str, str]
    record: DockerRecord
    owned: OwnedRun
    token: str
    environment: dict[str, str]


def plan_launch(
    spec: LaunchSpec,
    *,
    task_id: str,
    agent: str,
    agent_spec: str,
    image: str,
    version: str,
    uid: int,
    now: datetime,
) -> LaunchPlan:
    """A new run id, nonce and token, and the manifest, labels, record and ledger entry of a run.

    Raises:
        ResultsError: If the task, model or agent cannot name a results folder.
    """
    relayed = spec.relayed  # another backend (ray) named the run and counts its attempts
    run_id = relayed.run_id if relayed is not None else spec.run_id or new_run_id(now)
    results_root = spec.results_root.resolve()
    run_path(results_root, task_id, spec.model, agent, run_id)  # names are safe
    nonce, created = new_nonce(), utc_timestamp(now)
    manifest = RunManifest(
        run_id=run_id,
        task_id=task_id,
        agent=agent,
        agent_spec=agent_spec,
        model=spec.model,
        backend="docker" if relayed is None else relayed.backend,
        attempt=None if relayed is None else relayed.attempt,
        run_seed=spec.run_seed,
        srez_version=version,
        started_at=created,
        isolation="container",
    ).model_copy(update=spec.provenance)
    labels = make_labels(
        run_id=run_id,
        task_id=task_id,
        model=spec.model,
        agent=agent,
        results_root=results_root,
        nonce=nonce,
        owner=uid,
        version=version,
    )
    record = DockerRecord(
        run_id=run_id,
        container_name=container_name(run_id),
        image=image,
        labels=labels,
        keep=spec.keep,
        created_at=created,
    )
    owned = OwnedRun(run_id=run_id, backend="docker", nonce=nonce, owner=uid, created_at=created)
    environment = {}
    if spec.time_limit_s is not None:
        environment["SREZ_AGENT_TIME_LIMIT_S"] = f"{spec.time_limit_s:g}"
    if spec.task_file is not None:
        environment["SREZ_TASK_FILE"] = f"/{TASK_PATH}"
    return LaunchPlan(run_id, manifest, labels, record, owned, new_token(), environment)


@dataclass(frozen=True, slots=True)
class AgentChoice:
    """The agent of a launch, checked on this host before anything is started."""

    task_id: str
    """The task's id."""
    agent: str
    """The agent's name (as the results layout uses it)."""
    agent_spec: str
    """The spec the container runs (a replay names the file put into it)."""
    replay_file: Path | None
    """The host's replay file to put into the container, if any."""


def choose_agent(spec: LaunchSpec) -> AgentChoice:
    """Check the launch's task and agent on this host (fails fast, before any state is written).

    Raises:
        UsageError: If the agent is a Python agent by import path (the image cannot import a
            module of this machine).
        srez_env.errors.EnvError: If the task or the agent is unknown.
    """
    if import_path(spec.agent_spec) is not None:
        msg = f"--agent {spec.agent_spec}: a Python agent by import path runs on --backend inline or local (the image cannot import a module of this machine)"
        raise UsageError(msg)
    task = spec.task()
    host_spec, agent_spec, replay_file = agent_specs(spec.agent_spec)
    agent = make_agent(host_spec, task, spec.run_seed)
    return AgentChoice(task.id, agent.name, agent_spec, replay_file)


def save_record(folder: Path, record: DockerRecord) -> None:
    """Write the run's record (``record.json``) anew, atomically."""
    atomic_write_json(folder / "record.json", record)


def agent_specs(agent_spec: str) -> tuple[str, str, Path | None]:
    """(spec to check on this host, spec the container runs, replay file to put in, if any).

    A ``replay:FILE`` agent reads its file inside the container, so the host's file is put at
    ``/run/srez-input/replay.jsonl`` and the container's spec names that path.
    """
    if not agent_spec.startswith("replay:"):
        return agent_spec, agent_spec, None
    host_file = Path(agent_spec.removeprefix("replay:")).expanduser().resolve()
    return f"replay:{host_file}", f"replay:/{REPLAY_PATH}", host_file


def read_replay(path: Path) -> bytes:
    """The content of a replay file (at most :data:`MAX_REPLAY_BYTES`).

    Raises:
        BackendError: If it is larger.
    """
    with path.open("rb") as f:
        data = f.read(MAX_REPLAY_BYTES + 1)
    if len(data) > MAX_REPLAY_BYTES:
        msg = f"replay file {path} is over {MAX_REPLAY_BYTES >> 20} MiB"
        raise BackendError(msg)
    return data


def container_name(run_id: str) -> str:
    """The container's name: ``srez-<run-id>`` (unique on an engine)."""
    return f"srez-{run_id}"


def new_token() -> str:
    """A fresh token: 32 random bytes, URL-safe base64 (43 characters)."""
    return secrets.token_urlsafe(32)


def write_state(folder: Path, record: DockerRecord, token: str) -> None:
    """Create the run's state folder with its token (0600, a new file) and ``record.json``."""
    private_dir(folder.parent)
    folder.mkdir(mode=0o700)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(folder / "token", flags, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token)
        f.flush()
        os.fsync(f.fileno())
    atomic_write_json(folder / "record.json", record)


def _add(tar: tarfile.TarFile, name: str, data: bytes | None, mode: int) -> None:
    info = tarfile.TarInfo(name)
    info.mode = mode
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    if data is None:
        info.type = tarfile.DIRTYPE
        tar.addfile(info)
        return
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def inputs_tar(
    manifest: RunManifest, token: str, replay: bytes | None = None, task_file: str | None = None
) -> bytes:
    """The tar put at ``/`` before the container starts.

    ``/srez/run.json`` (0644), ``/run/srez/`` (0700) holding ``token`` (0400) and, for a task
    that is not packaged, ``task.json`` (0400), all owned by root, and, for a replay agent,
    ``/run/srez-input/replay.jsonl`` (0444). The run folder's own mode is left as the image made
    it (no entry for ``srez/`` itself).
    """
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        _add(tar, "srez/run.json", manifest.model_dump_json(indent=2).encode() + b"\n", 0o644)
        _add(tar, "run/srez", None, 0o700)
        _add(tar, TOKEN_PATH, token.encode(), 0o400)
        if task_file is not None:
            _add(tar, TASK_PATH, task_file.encode(), 0o400)
        if replay is not None:
            _add(tar, os.path.dirname(REPLAY_PATH), None, 0o755)  # noqa: PTH120
            _add(tar, REPLAY_PATH, replay, 0o444)
    return buffer.getvalue()

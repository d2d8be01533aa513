"""What the ``docker`` backend keeps and decides, apart from talking to the engine.

State of a run, in ``$SREZ_STATE/docker/<run-id>/`` (folders 0700): ``token`` (0600, the only copy
the client ever reads; never read back from the container) and ``record.json``
(:class:`DockerRecord`: the container's name and id, its labels, written atomically). With the
ledger entry of :mod:`srez_client.backends.state` they make a container *owned*.

The rest is pure: what a launch writes (:func:`plan_launch`), the tar of the files put into a
container before it starts (:func:`inputs_tar`), a container as listed or inspected (:class:`SeenContainer`), the published
port (:func:`published_port`, loopback only), the engine's file-mode bits (:func:`is_folder`,
:func:`is_regular`), which labels may name a results folder (:func:`label_problem`), and what an
LLM run's container is told about its model (:func:`bridge_gateway`, :func:`llm_settings`,
:func:`relay_target`, :func:`model_environment`; see :mod:`srez_client.relay.server`).
"""

from __future__ import annotations

import contextlib
import io
import ipaddress
import os
import re
import secrets
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict

from srez_client.backends.base import AGENT_ENV_KEY, LaunchSpec, RunStatus
from srez_client.backends.state import OwnedRun, make_labels, new_nonce, private_dir
from srez_client.errors import BackendError
from srez_client.relay.wire import is_credential_name
from srez_client.results.layout import RUN_ID_RE, new_run_id, run_path
from srez_daemon.protocol import RunManifest
from srez_daemon.record.storage import atomic_write_json, utc_timestamp

DAEMON_PORT: Final = "4263/tcp"
"""The daemon's port inside the container (DESIGN.md §4)."""
RUN_DIR: Final = "/srez"
"""The run folder inside the container (``SREZ_RUN_DIR`` of the image)."""
TOKEN_PATH: Final = "run/srez/token"
"""The token file inside the container (``SREZ_TOKEN_FILE``), relative to ``/``."""
REPLAY_PATH: Final = "run/srez-input/replay.jsonl"
"""Where a ``replay:FILE`` agent's file is put (readable by the agent user; no secret in it)."""
MAX_REPLAY_BYTES: Final = 64 << 20
"""Largest replay file put into a container."""
NAME_RE: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
"""What a task, agent or model-slug label must look like to name a results folder (SECURITY A5)."""

# Go's os.FileMode type bits, as the engine reports them in an archive's stat header
_GO_DIR: Final = 1 << 31
_GO_TYPE_BITS: Final = (
    (1 << 31) | (1 << 27) | (1 << 26) | (1 << 25) | (1 << 24) | (1 << 21) | (1 << 19)
)
"""Dir, symlink, device, named pipe, socket, char device, irregular."""
_LOOPBACK_HOSTS: Final = frozenset({"127.0.0.1", "::1", "localhost"})
HOST_ONLY_SETTINGS: Final = frozenset(
    {"SREZ_LLM_API_BASE", "SREZ_LLM_API_KEY", "SREZ_LLM_CALL_MODEL"}
)
"""LLM settings that stay on the host: the real endpoint and credential are the relay's to use."""


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
    provenance: Mapping[str, object] | None = None,
) -> LaunchPlan:
    """A new run id, nonce and token, and the manifest, labels, record and ledger entry of a run.

    Raises:
        ResultsError: If the task, model or agent cannot name a results folder.
    """
    run_id = new_run_id(now)
    results_root = spec.results_root.resolve()
    run_path(results_root, task_id, spec.model, agent, run_id)  # names are safe
    nonce, created = new_nonce(), utc_timestamp(now)
    manifest = RunManifest(
        run_id=run_id,
        task_id=task_id,
        agent=agent,
        agent_spec=agent_spec,
        model=spec.model,
        backend="docker",
        run_seed=spec.run_seed,
        srez_version=version,
        started_at=created,
        isolation="container",
    ).model_copy(update=dict(provenance or {}))
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
    return LaunchPlan(run_id, manifest, labels, record, owned, new_token(), environment)


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


def inputs_tar(manifest: RunManifest, token: str, replay: bytes | None = None) -> bytes:
    """The tar put at ``/`` before the container starts.

    ``/srez/run.json`` (0644), ``/run/srez/`` (0700) holding ``token`` (0400), all owned by root,
    and, for a replay agent, ``/run/srez-input/replay.jsonl`` (0444). The run folder's own mode is
    left as the image made it (no entry for ``srez/`` itself).
    """
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        _add(tar, "srez/run.json", manifest.model_dump_json(indent=2).encode() + b"\n", 0o644)
        _add(tar, "run/srez", None, 0o700)
        _add(tar, TOKEN_PATH, token.encode(), 0o400)
        if replay is not None:
            _add(tar, os.path.dirname(REPLAY_PATH), None, 0o755)  # noqa: PTH120
            _add(tar, REPLAY_PATH, replay, 0o444)
    return buffer.getvalue()


def published_port(attrs: Mapping[str, Any]) -> int | None:
    """The host port the daemon's port is published on, if it is published on loopback only.

    None when it is not published (yet), or when any binding is on a non-loopback address
    (SECURITY.md A4: such a container is never talked to).
    """
    ports = (attrs.get("NetworkSettings") or {}).get("Ports") or {}
    bindings = ports.get(DAEMON_PORT) or []
    found: int | None = None
    for binding in bindings:
        host = str(binding.get("HostIp", ""))
        if not _is_loopback(host):
            return None
        try:
            found = int(binding.get("HostPort", ""))
        except ValueError:
            return None
    return found


def _is_loopback(host: str) -> bool:
    if host in _LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_folder(stat: Mapping[str, Any]) -> bool:
    """Whether an archive stat header describes a folder (not a link to one)."""
    mode = int(stat.get("mode", 0))
    return bool(mode & _GO_DIR) and not stat.get("linkTarget")


def is_regular(stat: Mapping[str, Any]) -> bool:
    """Whether an archive stat header describes a regular file."""
    return not int(stat.get("mode", 0)) & _GO_TYPE_BITS and not stat.get("linkTarget")


def label_problem(labels: Mapping[str, str]) -> str | None:
    """Why a container's labels cannot name a results folder, or None if they can.

    The run id must be ``YYYYMMDDTHHMMSSZ-<8 hex>``; task, agent and model slug (``/`` written
    as ``__``) must match :data:`NAME_RE` (never ``.`` or ``..``); the results root must be an
    absolute path without ``..``.
    """
    run_id = labels.get("srez.run", "")
    if not RUN_ID_RE.match(run_id):
        return f"label srez.run={run_id!r} is not a run id"
    for key in ("srez.task", "srez.agent", "srez.model"):
        value = labels.get(key, "")
        slug = value.replace("/", "__") if key == "srez.model" else value
        if not NAME_RE.match(slug) or slug in (".", ".."):
            return f"label {key}={value!r} cannot name a results folder"
    root = labels.get("srez.results", "")
    if not root.startswith("/") or ".." in Path(root).parts or "\0" in root:
        return f"label srez.results={root!r} is not an absolute folder"
    return None


@dataclass(frozen=True, slots=True)
class SeenContainer:
    """What the engine says about one container, from a listing or an inspect."""

    id: str
    name: str
    labels: dict[str, str]
    state: str
    """The engine's state: ``created``, ``running``, ``paused``, ``exited`` ..."""
    created: str
    """Creation time as the engine gave it (sortable within one form)."""

    @property
    def run_id(self) -> str:
        """The ``srez.run`` label."""
        return self.labels.get("srez.run", "")

    @property
    def status(self) -> RunStatus:
        """``running`` while its processes exist (paused and restarting included)."""
        return run_status(self.state)


def seen_from_attrs(attrs: Mapping[str, Any]) -> SeenContainer:
    """A container from a listing (``Names``, ``Labels``, ``State`` as a string) or an inspect
    (``Name``, ``Config.Labels``, ``State.Status``)."""
    state = attrs.get("State")
    if isinstance(state, Mapping):
        labels = (attrs.get("Config") or {}).get("Labels") or {}
        name = str(attrs.get("Name", ""))
        status = str(state.get("Status", ""))
    else:
        labels = attrs.get("Labels") or {}
        names = attrs.get("Names") or [""]
        name = str(names[0])
        status = str(state or "")
    return SeenContainer(
        id=str(attrs.get("Id", "")),
        name=name.removeprefix("/"),
        labels={str(k): str(v) for k, v in labels.items()},
        state=status,
        created=str(attrs.get("Created", "")),
    )


def run_status(state: str) -> RunStatus:
    """``running`` while the container's processes exist (paused and restarting included)."""
    return "running" if state in ("running", "paused", "restarting") else "exited"


# ---------------------------------------------------------------------- LLM runs and the relay


def bridge_gateway(network: Mapping[str, Any]) -> str:
    """The IPv4 address containers on the ``bridge`` network reach the host by.

    ``IPAM.Config[].Gateway`` when the engine reports it; else the first host address of the
    subnet, which is where the engine puts the gateway when none is configured (some engines
    report the subnet alone). Whether this host owns the address is found out by binding it.

    Raises:
        BackendError: If the network has no IPv4 subnet.
    """
    for config in (network.get("IPAM") or {}).get("Config") or []:
        with contextlib.suppress(ValueError, TypeError):
            gateway = ipaddress.ip_address(str(config.get("Gateway") or ""))
            if gateway.version == 4:
                return str(gateway)
        with contextlib.suppress(ValueError, TypeError):
            subnet = ipaddress.ip_network(str(config.get("Subnet") or ""), strict=False)
            if subnet.version == 4:
                return str(next(subnet.hosts()))
    name = network.get("Name", "bridge")
    msg = f"docker: the {name} network has no IPv4 gateway, so containers cannot reach the model relay"
    raise BackendError(msg)


def llm_settings(host_environ: Mapping[str, str], agent_env: Mapping[str, str]) -> dict[str, str]:
    """The LLM agent's ``SREZ_LLM_*`` settings: the launcher's own, overridden by the launch's
    ``agent_env``, as the ``local`` backend passes them."""
    merged = {k: v for k, v in host_environ.items() if AGENT_ENV_KEY.fullmatch(k)}
    merged.update(agent_env)
    return merged


@dataclass(frozen=True, slots=True)
class RelayTarget:
    """Where the relay sends a run's calls: host-side settings that never enter the container."""

    api_base: str | None = None
    """The real endpoint (``SREZ_LLM_API_BASE``; None: the provider's own)."""
    api_key: str | None = field(default=None, repr=False)
    """An explicit key (``SREZ_LLM_API_KEY``; None: the provider's variable, as litellm reads it)."""
    timeout_s: float | None = None
    """The provider call's timeout (``SREZ_LLM_TIMEOUT_S``; None: the relay's default)."""


def relay_target(settings: Mapping[str, str]) -> RelayTarget:
    """The host-side part of a run's LLM settings."""
    try:
        timeout = float(settings.get("SREZ_LLM_TIMEOUT_S", ""))
    except ValueError:
        timeout = 0.0
    return RelayTarget(
        api_base=settings.get("SREZ_LLM_API_BASE", "").strip() or None,
        api_key=settings.get("SREZ_LLM_API_KEY", "").strip() or None,
        timeout_s=timeout if timeout > 0 else None,
    )


def model_environment(
    settings: Mapping[str, str], *, base_url: str, token: str, run_id: str
) -> dict[str, str]:
    """The environment an LLM run's container gets about its model: the agent's settings minus
    anything host-only or credential-shaped, plus the relay.

    * ``SREZ_LLM_API_BASE``: the relay (``http://<bridge gateway>:<port>/v1``);
    * ``SREZ_LLM_API_KEY``: the run's scoped relay token (never a provider key);
    * ``SREZ_LLM_CALL_MODEL``: ``openai/srez-<run-id>``, the litellm route to an OpenAI-compatible
      server; ``SREZ_MODEL`` stays the real slug, for the record and for pricing (the agent
      prices its calls by ``SREZ_MODEL`` whenever a call model is set).

    No host value of any ``*_API_KEY`` ever enters the container.
    """
    env = {
        k: v
        for k, v in settings.items()
        if k not in HOST_ONLY_SETTINGS and not is_credential_name(k)
    }
    env.update(
        SREZ_LLM_API_BASE=base_url,
        SREZ_LLM_API_KEY=token,
        SREZ_LLM_CALL_MODEL=f"openai/srez-{run_id}",
    )
    return env

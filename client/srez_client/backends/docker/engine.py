"""Blocking calls to a Docker engine for the ``docker`` backend; it runs them in worker threads.

The Docker SDK is synchronous (docs/design.md §11): every function here blocks and is called through
``asyncio.to_thread``. Stop and remove are idempotent and safe under concurrency: a container
that is gone, or whose removal another caller has started, is success (docs/security.md A10 test
40). Archives are read over the engine's ``/containers/{id}/archive`` endpoint with our own request,
so a stream can be closed half-way, and a stat can be asked for without a body (``HEAD``).
"""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

from docker.errors import APIError, NotFound  # type: ignore[import-untyped]
from docker.types import Mount  # type: ignore[import-untyped]

import docker  # type: ignore[import-untyped]
from srez_client.backends.docker.container_attrs import (
    DAEMON_PORT,
    SeenContainer,
    is_folder,
    is_regular,
    seen_from_attrs,
)
from srez_client.backends.docker.model_settings import bridge_gateway
from srez_client.backends.docker.state import RUN_DIR
from srez_client.errors import BackendError, MirrorError, RunNotFoundError
from srez_client.transfer.plan import MirrorLimits, MirrorReport
from srez_client.transfer.tar_fs import extract_run_tar, finish_copy_out

logger = logging.getLogger(__name__)

DockerClient = Any
"""A ``docker.DockerClient`` (the SDK has no type information)."""

STAT_HEADER: Final = "X-Docker-Container-Path-Stat"
_CHUNK: Final = 1 << 20
REMOVAL_WAIT_S: Final = 30.0
"""How long a remove waits for another caller's removal of the same container to finish."""


def engine_error(action: str, error: Exception) -> BackendError:
    """A one-line :class:`BackendError` for an engine failure."""
    explanation = getattr(error, "explanation", None) or str(error)
    return BackendError(f"docker: {action} failed: {' '.join(str(explanation).split())}")


def connect(factory: Any) -> DockerClient:
    """A client from ``factory`` (``docker.from_env``), checked with a ping.

    Raises:
        BackendError: If no engine answers.
    """
    try:
        client = factory()
        client.ping()
    except docker.errors.DockerException as e:
        msg = f"no Docker engine answers ({e}); start one or choose another --backend"
        raise BackendError(msg) from e
    return client


def create(
    client: DockerClient,
    image: str,
    *,
    name: str,
    labels: Mapping[str, str],
    keep: bool,
    environment: Mapping[str, str],
    mem_limit: str,
    pids_limit: int,
) -> str:
    """Create (not start) a run's container; returns its id.

    Port 4263 is published on 127.0.0.1 only, on a port the engine picks; ``--init`` reaps;
    ``CAP_NET_ADMIN`` lets the daemon cut its agent off the network (the image sets
    ``SREZ_AGENT_NETWORK=none``; :mod:`srez_daemon.agent_network`); the
    run folder is an anonymous volume, so nothing in it can be a hard link to a file elsewhere
    in the container (links across file systems fail with EXDEV).

    Raises:
        BackendError: If the image is missing or the engine refuses.
    """
    try:
        container = client.containers.create(
            image,
            command=["--keep"] if keep else None,
            name=name,
            labels=dict(labels),
            environment=dict(environment) or None,
            init=True,
            # the daemon takes every route outside the container from the agent's user
            # (srez_daemon.agent_network): over this container's own network namespace only
            cap_add=["NET_ADMIN"],
            pids_limit=pids_limit,
            mem_limit=mem_limit,
            ports={DAEMON_PORT: ("127.0.0.1", None)},
            mounts=[Mount(RUN_DIR, None, type="volume")],
            detach=True,
        )
    except docker.errors.ImageNotFound as e:
        msg = f"docker: the run image {image} is not on this engine; build it (images/) or pass another image"
        raise BackendError(msg) from e
    except APIError as e:
        action = f"creating container {name}"
        raise engine_error(action, e) from e
    return str(container.id)


def bridge_gateway_address(client: DockerClient) -> str:
    """The address containers on the ``bridge`` network reach the host by (its gateway).

    Raises:
        BackendError: If the engine has no such network, or it has no IPv4 gateway.
    """
    return bridge_gateway(bridge_network(client))


def bridge_network(client: DockerClient) -> dict[str, Any]:
    """The attributes of the engine's default ``bridge`` network (where its gateway is).

    Raises:
        BackendError: If the engine has none or refuses.
    """
    try:
        return dict(client.networks.get("bridge").attrs)
    except docker.errors.DockerException as e:
        action = "reading the bridge network"
        raise engine_error(action, e) from e


def start(client: DockerClient, container_id: str, inputs: bytes) -> None:
    """Put the tar ``inputs`` at ``/`` of a created container, then start it.

    Raises:
        BackendError: If the engine refuses.
    """
    try:
        client.api.put_archive(container_id, "/", inputs)
        client.api.start(container_id)
    except APIError as e:
        action = f"starting container {container_id[:12]}"
        raise engine_error(action, e) from e


def inspect(client: DockerClient, container_id: str) -> tuple[SeenContainer, dict[str, Any]] | None:
    """The container and its full attributes, or None if it is gone."""
    try:
        attrs: dict[str, Any] = client.api.inspect_container(container_id)
    except NotFound:
        return None
    return seen_from_attrs(attrs), attrs


def list_labelled(
    client: DockerClient, run_id: str | None, include_exited: bool
) -> list[SeenContainer]:
    """Containers carrying ``srez.run`` (or ``srez.run=<run_id>``), from one listing call."""
    label = "srez.run" if run_id is None else f"srez.run={run_id}"
    rows = client.api.containers(all=include_exited, filters={"label": label})
    return [seen_from_attrs(row) for row in rows]


def _archive_url(client: DockerClient, container_id: str) -> str:
    return f"{client.api.base_url}/v{client.api.api_version}/containers/{container_id}/archive"


def _stat(header: str | None) -> dict[str, Any]:
    if not header:
        return {}
    try:
        value = json.loads(base64.b64decode(header))
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def has_regular_file(client: DockerClient, container_id: str, path: str) -> bool:
    """Whether ``path`` is a regular file in the container (a ``HEAD``: nothing is read)."""
    response = client.api.head(_archive_url(client, container_id), params={"path": path})
    try:
        if response.status_code != 200:
            return False
        return is_regular(_stat(response.headers.get(STAT_HEADER)))
    finally:
        response.close()


def copy_out(
    client: DockerClient, container_id: str, dest: Path, run_id: str, limits: MirrorLimits
) -> MirrorReport:
    """Copy the run folder of a container that does not run into ``dest``, with its output.

    Raises:
        RunNotFoundError: If the container or its run folder is gone.
        MirrorError: If the run folder is not a folder (a link, say).
        FileExistsError: If ``dest`` exists.
    """
    response = client.api.get(
        _archive_url(client, container_id), params={"path": RUN_DIR}, stream=True
    )
    try:
        if response.status_code == 404:
            msg = f"docker run {run_id}: its container or its run folder {RUN_DIR} is gone"
            raise RunNotFoundError(msg)
        if response.status_code != 200:
            msg = f"docker run {run_id}: reading {RUN_DIR} failed (HTTP {response.status_code})"
            raise BackendError(msg)
        if not is_folder(_stat(response.headers.get(STAT_HEADER))):
            msg = f"docker run {run_id}: {RUN_DIR} is not a folder (a link?); nothing copied"
            raise MirrorError(msg)
        root = RUN_DIR.strip("/").encode()
        report = extract_run_tar(response.iter_content(_CHUNK), dest, root, limits)
    finally:
        response.close()  # before anything else is asked about the container (see below)
    # The engine holds the container while it streams its archive: asking for the logs
    # earlier would wait for a stream nobody reads.
    finish_copy_out(dest, report, _log_chunks(client, container_id), run_id=run_id, limits=limits)
    return report


def _log_chunks(client: DockerClient, container_id: str) -> Iterator[bytes]:
    stream = client.api.logs(container_id, stream=True, follow=False)
    try:
        yield from stream
    finally:
        stream.close()


def _gone_or_going(error: APIError) -> bool:
    """A 404, or a 409 saying the container's removal is already in progress."""
    if isinstance(error, NotFound) or error.status_code == 404:
        return True
    text = str(getattr(error, "explanation", "") or error).lower()
    return error.status_code == 409 and ("in progress" in text or "is being removed" in text)


def stop(client: DockerClient, container_id: str, grace_s: float) -> None:
    """SIGTERM the container (the daemon writes ``summary.json``), SIGKILL after ``grace_s``.

    Idempotent: a stopped or missing container is success.
    """
    try:
        client.api.stop(container_id, timeout=max(1, round(grace_s)))
    except APIError as e:
        if _gone_or_going(e):
            return
        action = f"stopping container {container_id[:12]}"
        raise engine_error(action, e) from e


def remove(client: DockerClient, container_id: str, grace_s: float) -> None:
    """Stop, then remove the container and its run-folder volume; idempotent and concurrent-safe.

    When another caller's removal is in progress, waits (up to :data:`REMOVAL_WAIT_S`) until the
    container is gone, so that every caller returns with it removed.
    """
    stop(client, container_id, grace_s)
    try:
        client.api.remove_container(container_id, v=True, force=True)
        return
    except APIError as e:
        if isinstance(e, NotFound) or e.status_code == 404:
            return
        if not _gone_or_going(e):
            action = f"removing container {container_id[:12]}"
            raise engine_error(action, e) from e
    deadline = time.monotonic() + REMOVAL_WAIT_S
    while time.monotonic() < deadline:
        if inspect(client, container_id) is None:
            return
        time.sleep(0.05)
    msg = f"docker: container {container_id[:12]} is still being removed after {REMOVAL_WAIT_S:g} s"
    raise BackendError(msg)


def pause(client: DockerClient, container_id: str) -> None:
    """Freeze every process of the container (for a copy of a container that still runs)."""
    try:
        client.api.pause(container_id)
    except APIError as e:
        action = f"pausing container {container_id[:12]}"
        raise engine_error(action, e) from e


def unpause(client: DockerClient, container_id: str) -> None:
    """Thaw a container this backend paused (a container gone meanwhile is fine)."""
    try:
        client.api.unpause(container_id)
    except APIError as e:
        if not _gone_or_going(e):
            logger.warning("could not unpause container %s: %s", container_id[:12], e)


def log_tail(client: DockerClient, container_id: str, lines: int = 5) -> str:
    """The last lines of a container's output, one line (for error messages)."""
    try:
        data: bytes = client.api.logs(container_id, tail=lines)
    except APIError:
        return ""
    return " | ".join(data.decode("utf-8", "replace").strip().splitlines()[-lines:])

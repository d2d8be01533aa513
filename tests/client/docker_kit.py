"""Helpers for the docker-marked tests: the engine, the run image, fake runs, the CLI.

Every container a test creates carries ``srez.test-session=<uuid>`` (the backend's extra label,
or ``SREZ_DOCKER_LABELS`` for the CLI), and the session's finaliser force-removes them with their
volumes. The run image is ``srez-run:<version>`` built from this tree, or ``$SREZ_DOCKER_IMAGE`` if
its label says it was built from this tree (:func:`open_engine`); without an engine, or an image,
the tests skip, unless ``REQUIRE_DOCKER=1``, where they fail; a ``$SREZ_DOCKER_IMAGE`` of other
sources always fails them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from docker.types import Mount

import docker
from fakes.openai_server import FakeOpenAI
from image_kit import BuildError, chosen_image_problem, image_of_this_tree
from srez_client.backends.base import LaunchSpec, RunHandle
from srez_client.backends.docker.backend import DockerBackend, default_image
from srez_client.backends.docker.state import DockerRecord, container_name, new_token, write_state
from srez_client.backends.state import OwnedRun, make_labels, new_nonce
from srez_client.layout import RUN_ID_RE, new_run_id
from srez_client.lifecycle.launch import RunLauncher
from srez_core.clock import utc_timestamp

SREZ = Path(sys.executable).parent / "srez"
SESSION_LABEL = "srez.test-session"


@dataclass(frozen=True)
class Engine:
    """The engine of this test session."""

    client: Any
    session: str
    image: str

    @property
    def labels(self) -> dict[str, str]:
        return {SESSION_LABEL: self.session}

    def backend(self, state: Path, **kwargs: Any) -> DockerBackend:
        return DockerBackend(state, image=self.image, extra_labels=self.labels, **kwargs)

    def env(self, state: Path) -> dict[str, str]:
        return {
            **os.environ,
            "SREZ_STATE": str(state),
            "SREZ_DOCKER_IMAGE": self.image,
            "SREZ_DOCKER_LABELS": f"{SESSION_LABEL}={self.session}",
        }

    def srez(
        self, state: Path, *args: str, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(SREZ), *args],
            capture_output=True,
            text=True,
            env=self.env(state),
            check=False,
            timeout=timeout,
        )

    def ours(self) -> list[Any]:
        """Every container of this session."""
        filters = {"label": f"{SESSION_LABEL}={self.session}"}
        for _ in range(5):  # a container removed between the listing and its inspect: list again
            try:
                return list(self.client.containers.list(all=True, filters=filters))
            except docker.errors.NotFound:
                time.sleep(0.05)
        return list(self.client.containers.list(all=True, filters=filters))

    def remove_all(self) -> None:
        for container in self.ours():
            with contextlib.suppress(docker.errors.APIError):
                container.remove(force=True, v=True)


def open_engine(session: str) -> Engine:
    """The session's engine with the run image of this tree, or a skip (a failure under
    ``REQUIRE_DOCKER=1``).

    The image is the one ``make image`` makes from the tree as it is now: built here when it is
    missing or its ``srez.image-hash`` label does not match the tree (one build at a time across
    the suite's workers), so a docker test never passes on a stale image. ``SREZ_DOCKER_IMAGE``
    names another image: never built here, and refused (a failure, with or without
    ``REQUIRE_DOCKER``) unless its ``srez.image-hash`` label is this tree's.
    """
    strict = os.environ.get("REQUIRE_DOCKER") == "1"
    chosen = os.environ.get("SREZ_DOCKER_IMAGE", "").strip()
    image = chosen or default_image()
    try:
        probe = docker.from_env(timeout=3)
        try:
            probe.ping()
        finally:
            probe.close()
        client = docker.from_env()
        if not chosen:
            image_of_this_tree(client)
        found = client.images.get(image)
        if chosen and (problem := chosen_image_problem(client, found)) is not None:
            client.close()
            pytest.fail(problem)
    except docker.errors.ImageNotFound:
        why = f"the run image {image} is not built (images/; or set SREZ_DOCKER_IMAGE)"
    except docker.errors.DockerException as e:
        why = f"no Docker engine answers: {e}"
    except BuildError as e:
        why = f"the run image of this tree could not be built: {e}"
    else:
        return Engine(client, session, image)
    if strict:
        pytest.fail(why)
    pytest.skip(why)


@dataclass(frozen=True)
class FakeRun:
    """A container of the run image that sleeps instead of serving: a run frozen in time."""

    run_id: str
    container: Any
    nonce: str


def fake_run(
    engine: Engine,
    backend: DockerBackend,
    results: Path,
    *,
    owned: bool = True,
    ledger_nonce: str | None = None,
    labels: dict[str, str] | None = None,
    seconds: int = 300,
    command: list[str] | None = None,
) -> FakeRun:
    """Create and start a container with the labels of a run (``labels`` override them).

    With ``owned``, this state's ledger and record claim it (with ``ledger_nonce`` if given: a
    wrong one makes a spoof). Its ``/srez`` is an empty volume, as a launched run's. With
    ``command``, it runs that instead of sleeping, with 4263 published on loopback as a run's.
    """
    now = datetime.now(UTC)
    run_id = new_run_id(now)
    nonce = new_nonce()
    run_labels = make_labels(
        run_id=run_id,
        task_id="sre-001",
        model="none",
        agent="scripted",
        results_root=results.resolve(),
        nonce=nonce,
        owner=os.getuid(),
        version="0",
    )
    run_labels.update(labels or {})
    container = engine.client.containers.create(
        engine.image,
        entrypoint=command or ["sleep", str(seconds)],
        ports={"4263/tcp": ("127.0.0.1", None)} if command else None,
        labels={**run_labels, **engine.labels},
        init=True,
        mounts=[Mount("/srez", None, type="volume")],
        name=container_name(run_id) if RUN_ID_RE.match(run_labels["srez.run"]) else None,
        detach=True,
    )
    if owned:
        backend.ledger.add(
            OwnedRun(
                run_id=run_id,
                backend="docker",
                nonce=ledger_nonce or nonce,
                owner=os.getuid(),
                created_at=utc_timestamp(now),
            )
        )
        record = DockerRecord(
            run_id=run_id,
            container_name=container_name(run_id),
            container_id=container.id,
            image=engine.image,
            labels=run_labels,
            created_at=utc_timestamp(now),
        )
        write_state(backend.folder / run_id, record, new_token())
    container.start()
    return FakeRun(run_labels["srez.run"], container, nonce)


def figure(name: str, value: object) -> None:
    """A measured figure, printed as ``FIGURE <name>: <value>`` (see them with ``pytest -s``)."""
    print(f"FIGURE {name}: {value}")


def sh(container: Any, script: str) -> str:
    """Run ``sh -c script`` in a running container as root; its output."""
    code, out = container.exec_run(["sh", "-c", script])
    text = out.decode("utf-8", "replace")
    assert code == 0, text
    return text


def wait_state(container: Any, states: tuple[str, ...], timeout_s: float = 60) -> str:
    """Poll until the container's state is one of ``states``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        container.reload()
        if container.status in states:
            return str(container.status)
        time.sleep(0.1)
    raise AssertionError(f"container {container.name} stayed {container.status}")


def tree_digest(root: Path) -> dict[str, bytes]:
    """Every regular file under ``root``: relative path -> content."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


async def in_agent_phase(
    engine: Engine, launcher: RunLauncher, spec: LaunchSpec, model: FakeOpenAI
) -> tuple[RunHandle, Any]:
    """Launch ``spec`` (an ``llm`` run whose ``model`` answers late) and return once its agent
    has asked the model: the run's handle and its container, the agent phase on."""
    handle = await launcher.launch(spec)
    for _ in range(1000):
        if model.requests:
            break
        await asyncio.sleep(0.02)
    assert model.requests, "the agent never reached its model"
    return handle, engine.client.containers.get(container_name(handle.run_id))

"""The run image against the real engine: it builds through ``images/build.py`` (or is already
built), hides every task secret from the agent user (docs/security.md §4.2 test 10: 0 bytes of
ground truth readable by uid 1001, in the image and at run time), and runs the daemon.

Every container and image made here carries ``srez.test-session=<uuid>`` and is removed when the
session ends. Without an engine these tests skip; with ``REQUIRE_DOCKER=1`` they fail instead.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import secrets
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
import uuid
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import docker

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "env" / "srez_env" / "tasks"
SESSION_LABEL = "srez.test-session"
SITE = "/opt/srez/lib/python3.11/site-packages"  # both bases carry CPython 3.11

pytestmark = pytest.mark.docker


def _load_build() -> ModuleType:
    spec = importlib.util.spec_from_file_location("srez_image_build", ROOT / "images" / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


build = _load_build()


# --- fixtures ---------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def engine() -> Iterator[Any]:
    """A client of the engine; skips (or fails under REQUIRE_DOCKER=1) when none answers."""
    try:
        import docker

        probe = docker.from_env(timeout=3)
        probe.ping()
        probe.close()
    except Exception as e:
        reason = f"no Docker engine answers ({type(e).__name__}: {str(e)[:120]})"
        if os.environ.get("REQUIRE_DOCKER") == "1":
            pytest.fail(f"REQUIRE_DOCKER=1 but {reason}")
        pytest.skip(reason)
    client = docker.from_env(timeout=600)  # builds and waits outlast a ping's 3 s
    yield client
    client.close()


@pytest.fixture(scope="session")
def session_labels(engine: Any) -> Iterator[dict[str, str]]:
    """Labels for everything this session creates; all of it is removed at the end."""
    labels = {SESSION_LABEL: uuid.uuid4().hex}
    yield labels
    selector = {"label": f"{SESSION_LABEL}={labels[SESSION_LABEL]}"}
    for container in engine.containers.list(all=True, filters=selector):
        container.remove(force=True, v=True)
    for image in engine.images.list(filters=selector):
        engine.images.remove(image.id, force=True)


def run_build(*args: str, timeout_s: float = 300) -> subprocess.CompletedProcess[str]:
    """``images/build.py ARGS``, as ``make image`` runs it."""
    return subprocess.run(
        [sys.executable, str(ROOT / "images" / "build.py"), *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


@pytest.fixture(scope="session")
def run_image(engine: Any) -> str:
    """``srez-run:<version>``, built by ``images/build.py`` exactly as ``make image`` runs it."""
    proc = run_build(timeout_s=1800)
    if proc.returncode != 0:
        pytest.fail(f"images/build.py failed: {proc.stderr.strip()[-1500:]}")
    version, _ = build.project_metadata()
    tag = proc.stdout.strip().splitlines()[-1]
    assert tag == f"srez-run:{version}"
    return tag


def _tar(entries: list[tuple[str, bytes | None, int]]) -> bytes:
    """A tar of (path, content or None for a folder, mode), owned by root."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data, mode in entries:
            info = tarfile.TarInfo(name)
            info.mode, info.uid, info.gid, info.mtime = mode, 0, 0, 1_700_000_000
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _run_json(task_id: str, agent: str) -> bytes:
    from srez_core.clock import utc_timestamp
    from srez_daemon.protocol.files import RunManifest

    now = datetime.now(UTC)
    manifest = RunManifest(
        run_id=f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(4)}",
        task_id=task_id,
        agent=agent,
        agent_spec=agent,
        model="none",
        backend="docker",
        run_seed=0,
        srez_version=build.project_metadata()[0],
        started_at=utc_timestamp(now),
    )
    return manifest.model_dump_json().encode()


def _get(port: int, path: str, token: str | None = None) -> tuple[int, bytes]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=3) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        with e:
            return e.code, e.read()


# --- the build --------------------------------------------------------------------------------


def test_a_second_build_is_skipped(run_image: str) -> None:
    proc = run_build()
    assert proc.returncode == 0, proc.stderr
    assert "up to date, not rebuilt" in proc.stdout
    assert proc.stdout.strip().splitlines()[-1] == run_image


def test_help_works(engine: Any, run_image: str, session_labels: dict[str, str]) -> None:
    container = engine.containers.create(run_image, command=["--help"], labels=session_labels)
    try:
        container.start()
        assert container.wait(timeout=60)["StatusCode"] == 0
        assert b"usage: srez-daemon" in container.logs()
    finally:
        container.remove(force=True)


# --- docs/security.md §4.2 test 10 ---------------------------------------------------------------


def test_the_agent_user_reads_no_task_secret(
    engine: Any, run_image: str, session_labels: dict[str, str]
) -> None:
    report = build.leak_check(engine, run_image, labels=session_labels)
    assert report.ok, report.summary()
    assert report.hits == {}
    assert report.task_files_expected == len(list(TASKS.glob("*.yaml"))) == 40
    assert report.task_files_locked == 40  # each probed by name: present, and unreadable
    assert report.files > 1000 and report.markers > 40  # it did walk the image


@pytest.mark.slow  # builds a second image (about a minute); the check itself runs on every build
def test_a_planted_leak_fails_the_check(
    engine: Any, run_image: str, session_labels: dict[str, str], tmp_path: Path
) -> None:
    # Three ways a task could leak: a world-readable copy under another name, a copy inside a
    # compressed archive, and a task file whose mode was loosened in place.
    (tmp_path / "notes.txt").write_bytes((TASKS / "sre-001.yaml").read_bytes())
    with zipfile.ZipFile(tmp_path / "cache.zip", "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.write(TASKS / "sre-002.yaml", "srez_env/tasks/sre-002.yaml")
    (tmp_path / "Dockerfile").write_text(
        f"FROM {run_image}\n"
        "COPY notes.txt /usr/share/doc/leak/notes.txt\n"
        "COPY cache.zip /var/cache/leak/cache.zip\n"
        "RUN chmod 0644 /usr/share/doc/leak/notes.txt /var/cache/leak/cache.zip"
        f" {SITE}/srez_env/tasks/sre-003.yaml\n"
    )
    leaky = f"srez-leak-test:{session_labels[SESSION_LABEL][:12]}"
    engine.images.build(path=str(tmp_path), tag=leaky, labels=session_labels, rm=True, pull=False)

    report = build.leak_check(engine, leaky, labels=session_labels)

    assert not report.ok
    leaked = {hit.split("!", 1)[0] for hit in report.hits}
    assert leaked == {
        "/usr/share/doc/leak/notes.txt",
        "/var/cache/leak/cache.zip",
        f"{SITE}/srez_env/tasks/sre-003.yaml",
    }
    assert "/var/cache/leak/cache.zip!srez_env/tasks/sre-002.yaml" in report.hits
    assert report.task_files_locked == 39
    # the command line says it in one line and exits 1
    proc = run_build("--check", leaky)
    assert proc.returncode == 1
    message = proc.stderr.strip()
    assert len(message.splitlines()) == 1
    assert message.startswith("leak check FAILED")
    assert "/usr/share/doc/leak/notes.txt" in message and "sre-003.yaml" in message


# --- the daemon in the image ------------------------------------------------------------------


def test_the_daemon_serves_a_run_with_the_agent_as_uid_1001(
    engine: Any, run_image: str, session_labels: dict[str, str]
) -> None:
    token = secrets.token_urlsafe(32)
    tasks = f"{SITE}/srez_env/tasks"
    # The agent command records who it runs as and what it can read, then runs the real agent.
    probe = (
        "{ id -u; cat /run/srez/token || echo token-denied;"
        f" cat {tasks}/sre-001.yaml || echo task-denied;"
        f" ls {tasks} || echo list-denied; }} > /tmp/agent-probe 2>&1;"
        " exec python -m srez_daemon.agent"
    )
    container = engine.containers.create(
        run_image,
        command=["--keep"],
        init=True,
        cap_add=["NET_ADMIN"],  # the agent's routes are taken (as the docker backend runs it)
        ports={"4263/tcp": ("127.0.0.1", None)},
        environment={"SREZ_AGENT_CMD": json.dumps(["sh", "-c", probe])},
        labels=session_labels,
    )
    try:
        container.put_archive(
            "/",
            _tar(
                [
                    # heuristic: a custom command never receives the oracle, so the probe
                    # wraps an agent that plays from observations alone
                    ("srez/run.json", _run_json("sre-001", "heuristic"), 0o644),
                    ("run/srez", None, 0o700),
                    ("run/srez/token", token.encode(), 0o400),
                ]
            ),
        )
        started = time.monotonic()
        container.start()
        container.reload()
        (binding,) = container.attrs["NetworkSettings"]["Ports"]["4263/tcp"]
        assert binding["HostIp"] == "127.0.0.1"  # published on loopback only
        port = int(binding["HostPort"])

        health: dict[str, Any] = {}
        while time.monotonic() - started < 30:
            try:
                status, body = _get(port, "/api/health")
            except OSError:  # not listening yet
                status, body = 0, b""
            if status == 200:
                health = json.loads(body)
                break
            time.sleep(0.05)
        assert health.get("status") == "ok", container.logs()[-2000:]
        assert health["version"] == build.project_metadata()[0]

        assert _get(port, "/api/run")[0] == 401
        assert _get(port, "/api/run", "x" * 43)[0] == 401
        run: dict[str, Any] = {}
        while time.monotonic() - started < 60:
            status, body = _get(port, "/api/run", token)
            run = json.loads(body) if status == 200 else {}
            if run.get("phase") in ("done", "error"):
                break
            time.sleep(0.1)
        assert run.get("phase") == "done", container.logs()[-2000:]
        status, body = _get(port, "/api/grade", token)
        assert status == 200
        assert json.loads(body)["steps"] > 0  # the agent reached the simulator over its socket

        found = container.exec_run(["cat", "/tmp/agent-probe"]).output.decode()
        lines = found.splitlines()
        assert lines[0] == "1001", found
        assert "token-denied" in lines and "task-denied" in lines and "list-denied" in lines
        assert token not in found
        assert "ground_truth" not in found and "reference_fix" not in found
    finally:
        container.remove(force=True, v=True)


@pytest.mark.docker
def test_headless_docker_run_leaves_the_graded_run_in_out(
    engine: Any, run_image: str, session_labels: dict[str, str], tmp_path: Path
) -> None:
    """``docker run --rm --cap-add NET_ADMIN -v out:/out srez-run --task sre-007 --agent scripted
    --out /out``; without ``NET_ADMIN`` the daemon cannot take the agent's routes, and the agent
    does not start: the run ends as a harness error that says what to add (never an agent with
    more network than its settings say)."""
    out, bare = tmp_path / "out", tmp_path / "bare"
    for folder, caps in ((out, ["NET_ADMIN"]), (bare, None)):
        folder.mkdir()
        with contextlib.suppress(docker.errors.ContainerError):  # the bare run exits 1
            engine.containers.run(
                run_image,
                ["--task", "sre-007", "--agent", "scripted", "--out", "/out"],
                volumes={str(folder): {"bind": "/out", "mode": "rw"}},
                labels=session_labels,
                init=True,
                cap_add=caps,
                remove=True,
            )
    result = json.loads((out / "result.json").read_text())
    assert result["reward"]["total"] == 1.0 and result["passed"] is True
    assert json.loads((out / "summary.json").read_text())["status"] == "ok"
    refused = json.loads((bare / "summary.json").read_text())
    assert (refused["status"], refused["error_kind"], refused["steps"]) == ("error", "harness", 0)
    assert "--cap-add NET_ADMIN" in refused["error"], refused["error"]
    with pytest.raises(docker.errors.ContainerError) as failed:
        engine.containers.run(
            run_image,
            ["--task", "sre-999", "--agent", "scripted"],
            labels=session_labels,
            remove=True,
        )
    assert failed.value.exit_status == 2

"""Starts real ``srez-daemon`` processes for tests: a run folder, a token file, a free port."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from srez_daemon.protocol import RunManifest

RUN_ID = "20261130T000000Z-0123abcd"
SLEEPER = (sys.executable, "-c", "import time; time.sleep(60)")  # an agent that never acts


@dataclass
class Daemon:
    """A live daemon process and what it was started with."""

    base_url: str
    token: str
    run_dir: Path
    state_dir: Path
    proc: subprocess.Popen[bytes]
    pid: int
    log: Path
    headers: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:
        # the admin claim too: these tests exercise exec and the pty (view-only is tested apart)
        self.headers = {"Authorization": f"Bearer {self.token}", "X-Srez-Admin": "1"}

    def get(
        self, path: str, headers: Mapping[str, str] | None = None
    ) -> tuple[int, bytes, dict[str, str]]:
        """A GET with the token (unless ``headers`` replaces them): (status, body, headers)."""
        return request(self.base_url + path, headers=self.headers if headers is None else headers)

    def json(self, path: str) -> dict[str, object]:
        status, body, _ = self.get(path)
        assert status == 200, (path, status, body[:300])
        data = json.loads(body)
        assert isinstance(data, dict)
        return data

    def wait_phase(self, *phases: str, timeout_s: float = 30) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            _, body, _ = self.get("/api/health", headers={})
            phase = json.loads(body)["phase"]
            if phase in phases:
                return str(phase)
            time.sleep(0.05)
        msg = f"daemon never reached {phases}"
        raise TimeoutError(msg)


def request(
    url: str,
    *,
    method: str = "GET",
    headers: Mapping[str, str] | None = None,
    data: bytes | None = None,
) -> tuple[int, bytes, dict[str, str]]:
    req = urllib.request.Request(url, method=method, headers=dict(headers or {}), data=data)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read(), dict(resp.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read(), dict(e.headers)


def prepare(
    root: Path,
    *,
    task_id: str = "sre-007",
    agent_spec: str = "scripted",
    token: str | None = None,
    recorded_cmd: Sequence[str] | None = None,
) -> tuple[Path, Path]:
    """Writes a run folder with run.json and a token file; returns (run_dir, token_file).
    ``recorded_cmd`` is run.json's ``agent_cmd`` (a ``cmd:NAME`` agent's command)."""
    run_dir = root / "run"
    run_dir.mkdir(parents=True)
    manifest = RunManifest(
        run_id=RUN_ID,
        task_id=task_id,
        agent=agent_spec.removeprefix("cmd:").split(":")[0],
        agent_spec=agent_spec,
        agent_cmd=None if recorded_cmd is None else tuple(recorded_cmd),
        model="none",
        backend="local",
        run_seed=0,
        srez_version="0",
        started_at="2026-11-30T00:00:00.000Z",
    )
    (run_dir / "run.json").write_text(manifest.model_dump_json())
    token_file = root / "token"
    token_file.write_text(secrets.token_urlsafe(32) if token is None else token)
    token_file.chmod(0o600)
    return run_dir, token_file


def daemon_env(
    run_dir: Path, token_file: Path, endpoint: Path, extra: Mapping[str, str]
) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k in ("PATH", "HOME", "LANG", "PYTHONPATH", "VIRTUAL_ENV")
    }
    env.update(
        SREZ_RUN_DIR=str(run_dir),
        SREZ_TOKEN_FILE=str(token_file),
        SREZ_HOST="127.0.0.1",
        SREZ_PORT="0",
        SREZ_ENDPOINT_FILE=str(endpoint),
    )
    env.update(extra)
    return env


@contextlib.contextmanager
def live_daemon(
    root: Path,
    *,
    task_id: str = "sre-007",
    agent_spec: str = "scripted",
    agent_cmd: Sequence[str] | None = None,
    keep: bool = True,
    env: Mapping[str, str] | None = None,
    recorded_cmd: Sequence[str] | None = None,
) -> Iterator[Daemon]:
    """Starts ``srez-daemon`` in its own session and stops it (SIGTERM, then SIGKILL) after.
    ``agent_cmd`` is the daemon's ``SREZ_AGENT_CMD``; ``recorded_cmd`` run.json's ``agent_cmd``."""
    run_dir, token_file = prepare(
        root, task_id=task_id, agent_spec=agent_spec, recorded_cmd=recorded_cmd
    )
    endpoint = root / "endpoint.json"
    extra = dict(env or {})
    if agent_cmd is not None:
        extra["SREZ_AGENT_CMD"] = json.dumps(list(agent_cmd))
    log = root / "daemon.out"
    argv = [sys.executable, "-m", "srez_daemon", *(["--keep"] if keep else [])]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv,
            env=daemon_env(run_dir, token_file, endpoint, extra),
            stdout=out,
            stderr=out,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 15
        while not endpoint.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                msg = f"daemon did not start: {log.read_text()[-2000:]}"
                raise RuntimeError(msg)
            time.sleep(0.02)
        info = json.loads(endpoint.read_text())
        base = f"http://127.0.0.1:{info['port']}"
        daemon = Daemon(base, token_file.read_text(), run_dir, root, proc, int(info["pid"]), log)
        # health answers at once (phase "starting"); the other routes once the run has loaded
        daemon.wait_phase("agent", "sealed", "grading", "done", "error")
        yield daemon
    finally:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)


def run_headless(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``srez-daemon ARGS`` with no client (``--task ID --agent NAME --out DIR``), run to its end
    in a bare environment plus ``env``; its run folder and temporary files go under ``tmp_path``."""
    bare = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}
    bare.update(SREZ_PORT="0", SREZ_RUN_DIR=str(tmp_path / "run"), TMPDIR=str(tmp_path))
    return subprocess.run(
        [sys.executable, "-m", "srez_daemon", *args],
        capture_output=True,
        text=True,
        env={**bare, **env},
        timeout=120,
    )


def reference_line(task_id: str = "sre-007") -> str:
    """The config line the task's reference fix writes (``pool_max = N`` for sre-007): each task
    has its own world, so the value is read from the task, never assumed."""
    from srez_env.tasks import load_tasks

    (task,) = load_tasks([task_id])
    fix = next(a for a in task.reference_fix if a.tool == "set_config")
    return f"{str(fix.args['key']).rsplit('.', 1)[-1]} = {fix.args['value']}"


IDLE_PROBE = """
import asyncio, json, os, signal, sys
import srez_daemon.__main__ as daemon_main
from srez_daemon.app import HOST
from srez_daemon.settings import DaemonSettings

apps = []
create_app = daemon_main.create_app
daemon_main.create_app = lambda *a, **k: apps.append(create_app(*a, **k)) or apps[-1]

async def probe():
    serving = asyncio.ensure_future(daemon_main.serve(DaemonSettings.from_env(os.environ, keep=True)))
    async with asyncio.timeout(60):
        while not apps or apps[0][HOST].phase != "agent":
            await asyncio.sleep(0.02)
    await asyncio.sleep(0.5)  # the agent phase at rest: no request, no step
    loaded = [m for m in json.loads(sys.argv[1]) if m in sys.modules]
    os.kill(os.getpid(), signal.SIGTERM)
    await serving
    print(json.dumps(loaded))

asyncio.run(probe())
"""


def idle_modules(root: Path, watched: Sequence[str]) -> list[str]:
    """Which of the ``watched`` modules a daemon has loaded once its run is in the agent phase
    and nothing has asked it anything (the daemon's own ``serve``, in a fresh interpreter,
    with an agent that never acts)."""
    run_dir, token_file = prepare(root, task_id="sre-025", agent_spec="heuristic")
    extra = {"SREZ_AGENT_CMD": json.dumps(list(SLEEPER))}
    env = daemon_env(run_dir, token_file, root / "endpoint.json", extra)
    done = subprocess.run(
        [sys.executable, "-c", IDLE_PROBE, json.dumps(list(watched))],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found: list[str] = json.loads(done.stdout.splitlines()[-1])
    return found

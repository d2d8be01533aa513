"""The ``docker`` backend on a real engine (its conformance suite runs in ``test_backends.py``):
parity with ``inline``, the keep-container flow, its mirror hooks, and docs/security.md §4 tests 1,
18, 19, 21 (scaled), 22, 36, 40 and 41.

Figures are printed as ``FIGURE <name>: <value>`` lines (see them with ``pytest -s``).
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import aiohttp
import psutil
import pytest
from backend_contract import spec_for
from client_helpers import after_a_killed_mirror, expert_actions
from docker_kit import SREZ, Engine, fake_run, figure, sh, tree_digest, wait_state

from srez_client.backends.base import LaunchSpec
from srez_client.backends.docker.backend import DockerBackend
from srez_client.errors import BackendError, NotOwnedError
from srez_client.lifecycle.recovery import (
    MirrorOutcome,
    WatchOptions,
    mirror_stopped,
    watch_stopped,
)
from srez_client.lifecycle.run import run_to_results
from srez_client.transfer.plan import MirrorLimits
from srez_env.tasks import load_tasks

pytestmark = pytest.mark.docker

PARITY_TASKS = ("sre-003", "sre-007", "sre-014", "sre-025", "sre-031")


# ---------------------------------------------------------------------- launch
# (the conformance suite runs on docker with the others: tests/client/test_backends.py)


async def test_launch_is_healthy_and_leaks_no_token(
    engine: Engine, backend: DockerBackend, tmp_path: Path
) -> None:
    started = time.monotonic()
    handle = await backend.launch(spec_for(tmp_path / "results"))
    healthy_s = time.monotonic() - started
    figure("container create to healthy (s)", f"{healthy_s:.2f}")  # its target: make bench
    token = await backend.token(handle)
    container = engine.client.containers.get(f"srez-{handle.run_id}")
    attrs = json.dumps(container.attrs)
    assert token not in attrs  # not in Env, Labels, Cmd, Args, Config
    assert container.attrs["HostConfig"]["Init"] is True
    assert container.attrs["HostConfig"]["PidsLimit"] == 512
    assert container.attrs["HostConfig"]["Memory"] == 2 << 30
    assert [m["Destination"] for m in container.attrs["Mounts"]] == ["/srez"]
    assert container.attrs["Config"]["Cmd"] == ["--keep"]
    assert not [e for e in container.attrs["Config"]["Env"] if e.startswith("SREZ_TOKEN=")]
    mode = sh(container, "stat -c '%a %U' /run/srez/token").strip()
    assert mode == "400 root"
    done = await backend.wait(handle, 60)
    dest = tmp_path / "copy"
    started = time.monotonic()
    await backend.copy_out(done, dest)
    figure("copy-out of a finished kept run, paused (s)", f"{time.monotonic() - started:.2f}")
    assert wait_state(container, ("running",)) == "running"  # thawed after the copy
    assert token.encode() not in b"".join(tree_digest(dest).values())
    await backend.remove(done)


async def test_a_replay_agent_reads_its_file_inside_the_container(
    backend: DockerBackend, tmp_path: Path
) -> None:
    (task,) = load_tasks(["sre-007"])
    moves = tmp_path / "moves.jsonl"
    moves.write_text("".join(json.dumps(a) + "\n" for a in expert_actions(task)))
    spec = LaunchSpec(
        task_id="sre-007", agent_spec=f"replay:{moves}", results_root=tmp_path / "results"
    )
    outcome = await run_to_results(backend, spec, tmp_path / "scratch")
    assert outcome.summary is not None and outcome.summary.reward == 1.0
    manifest = json.loads((outcome.results_dir / "run.json").read_bytes())
    assert manifest["agent_spec"] == "replay:/run/srez-input/replay.jsonl"
    await backend.remove(outcome.handle)


# ---------------------------------------------------------------------- parity with inline


def test_scripted_on_5_tasks_in_parallel_containers_grades_byte_identical_to_inline(
    engine: Engine, tmp_path: Path
) -> None:
    common = ["--agent", "scripted", "--tasks", ",".join(PARITY_TASKS)]
    started = time.monotonic()
    on_docker = engine.srez(
        tmp_path / "state",
        "eval",
        "--backend",
        "docker",
        "--parallel",
        "5",
        "--results",
        str(tmp_path / "docker"),
        *common,
    )
    figure("5 scripted runs in 5 parallel containers (s)", f"{time.monotonic() - started:.1f}")
    inline = engine.srez(tmp_path / "state", "eval", "--results", str(tmp_path / "inline"), *common)
    assert on_docker.returncode == 0, on_docker.stderr
    assert inline.returncode == 0, inline.stderr

    def grades(root: Path) -> dict[str, bytes]:
        return {p.parts[-5]: p.read_bytes() for p in root.glob("sre-*/none/scripted/*/result.json")}

    docker_grades = grades(tmp_path / "docker")
    assert sorted(docker_grades) == sorted(PARITY_TASKS)
    assert docker_grades == grades(tmp_path / "inline")
    for folder in (tmp_path / "docker").glob("sre-*/none/scripted/*"):
        assert (folder / "logs" / "container.log").stat().st_size > 0
        assert json.loads((folder / "run.json").read_bytes())["backend"] == "docker"
    # Every run of this state was mirrored and removed: none is left as ours. (The engine may
    # hold other states' containers, listed as not ours, when suites share it.)
    listed = engine.srez(tmp_path / "state", "runs", "list", "--all", "--backend", "docker")
    rows = listed.stdout.strip().splitlines()
    # rows[0] is the header, rows[1] its rule
    assert rows == ["no runs"] or all(row.split()[-2] == "NO" for row in rows[2:]), listed.stdout


# ---------------------------------------------------------------------- keep-container


def _container_of(engine: Engine, results: Path, timeout_s: float = 60) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for container in engine.ours():
            if container.labels.get("srez.results") == str(results.resolve()):
                return container
        time.sleep(0.1)
    raise AssertionError("the run's container never appeared")


@pytest.mark.parametrize("how", ["runs stop", "SIGTERM to the CLI"])
def test_keep_container_serves_until_stopped_then_mirrors(
    engine: Engine, tmp_path: Path, how: str
) -> None:
    state, results = tmp_path / "state", tmp_path / "results"
    args = ["run", "--backend", "docker", "--task", "sre-001", "--agent", "scripted"]
    cli = subprocess.Popen(
        [str(SREZ), *args, "--keep-container", "--results", str(results)],
        env=engine.env(state),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        container = _container_of(engine, results)
        run_id = container.labels["srez.run"]
        row: list[str] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and row[4:6] != ["running", "yes"]:  # finished, serving
            listing = engine.srez(state, "runs", "list", "--backend", "docker").stdout
            row = next((line.split() for line in listing.splitlines() if run_id in line), [])
            time.sleep(0.3)
        assert row[4:7] == ["running", "yes", "yes"], row  # running, finished, ours
        assert cli.poll() is None  # the CLI waits while the container serves
        started = time.monotonic()
        if how == "runs stop":
            assert engine.srez(state, "runs", "stop", "--backend", "docker", run_id).returncode == 0
        else:
            cli.send_signal(signal.SIGTERM)
        out, err = cli.communicate(timeout=60)
        figure(f"keep-container stop ({how}) to mirrored (s)", f"{time.monotonic() - started:.2f}")
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
    assert cli.returncode == (0 if how == "runs stop" else 130), (out, err)
    (folder,) = (results / "sre-001" / "none" / "scripted").iterdir()
    assert folder.name == run_id
    for name in ("result.json", "summary.json", "mirror.json", "logs/container.log"):
        assert (folder / name).is_file(), name
    assert f"results:  {folder}" in out
    assert engine.ours() == [] or all(c.labels.get("srez.run") != run_id for c in engine.ours())


# ---------------------------------------------------------------------- docs/security.md §4


async def test_sec1_published_ports_bind_loopback_only(
    engine: Engine, backend: DockerBackend, tmp_path: Path
) -> None:
    handles = await asyncio.gather(*(backend.launch(spec_for(tmp_path / "r")) for _ in range(3)))
    try:
        ports = []
        for handle in handles:
            container = engine.client.containers.get(f"srez-{handle.run_id}")
            bindings = container.attrs["NetworkSettings"]["Ports"]["4263/tcp"]
            assert {b["HostIp"] for b in bindings} == {"127.0.0.1"}
            ports.append(int(bindings[0]["HostPort"]))
        listeners = [
            c
            for c in psutil.net_connections(kind="inet")
            if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port in ports
        ]
        assert {c.laddr.port for c in listeners} == set(ports)
        exposed = [c for c in listeners if c.laddr.ip not in ("127.0.0.1", "::1")]
        figure("listeners on non-loopback addresses for our ports", len(exposed))
        assert exposed == []
        outside = [
            a.address
            for addrs in psutil.net_if_addrs().values()
            for a in addrs
            if a.family == socket.AF_INET and not a.address.startswith("127.")
        ]
        # the engine's bridge gateway is an address of this host, so there is one to try; and
        # the probe is shown to see a port that does listen on every address
        assert outside, "no non-loopback address here to try the ports on"
        with socket.socket() as control:
            control.bind(("0.0.0.0", 0))  # noqa: S104 - the positive control, closed below
            control.listen()
            for address in outside:
                with socket.socket() as s:
                    s.settimeout(1)
                    assert s.connect_ex((address, control.getsockname()[1])) == 0, address
        reached = 0
        for address in outside:
            for port in ports:
                with socket.socket() as s:
                    s.settimeout(1)
                    reached += s.connect_ex((address, port)) == 0
        figure(
            f"runs reachable on {len(outside)} non-loopback addresses", f"{reached}/{len(ports)}"
        )
        assert reached == 0
    finally:
        await asyncio.gather(*(backend.remove(h) for h in handles))


async def test_sec1_another_container_on_the_bridge_reaches_no_runs_daemon(
    engine: Engine, backend: DockerBackend, tmp_path: Path
) -> None:
    """A run's daemon listens on every address of its container; on the shared bridge another
    container (a neighbour's run, a hostile agent's) reached it: health answered 200. Now the
    daemon serves the host (the bridge's gateway) alone. The probe from a second container is
    shown to reach a port that serves everyone (the control), and the host still reaches the
    run through its published port."""
    handle = await backend.launch(spec_for(tmp_path / "r"))
    try:
        run = engine.client.containers.get(f"srez-{handle.run_id}")
        address = run.attrs["NetworkSettings"]["IPAddress"]
        probe = (
            "import sys, urllib.request, urllib.error\n"
            "try:\n"
            "    r = urllib.request.urlopen(sys.argv[1], timeout=5); print(r.status)\n"
            "except urllib.error.HTTPError as e: print(e.code)\n"
            "except OSError as e: print('unreachable', e)\n"
        )
        control = engine.client.containers.run(
            backend.image, entrypoint=["python3", "-m", "http.server", "8000"], detach=True,
            remove=True,
        )  # fmt: skip
        try:
            control.reload()
            target = control.attrs["NetworkSettings"]["IPAddress"]
            seen = []
            for url in (f"http://{target}:8000/", f"http://{address}:4263/api/health"):
                out = engine.client.containers.run(
                    backend.image, entrypoint=["python3", "-c", probe, url], remove=True,
                )  # fmt: skip
                seen.append(out.decode().strip())
        finally:
            control.kill()
        assert seen[0] == "200", seen  # a neighbour reaches what serves everyone
        assert seen[1] == "403", seen  # and not a run's daemon
        base = await backend.endpoint(handle)
        async with aiohttp.ClientSession() as http, http.get(f"{base}/api/health") as r:
            assert r.status == 200  # the host still reaches it
    finally:
        await backend.stop(handle)
        await backend.remove(handle)


async def test_sec18_copy_out_refuses_a_running_run_and_a_swap_loop_leaks_nothing(
    engine: Engine, backend: DockerBackend, tmp_path: Path
) -> None:
    fake = fake_run(engine, backend, tmp_path / "results")
    handle = await backend.get(fake.run_id)
    assert handle.owned and handle.status == "running" and not handle.finished
    with pytest.raises(BackendError, match="still running"):
        await backend.copy_out(handle, tmp_path / "refused")
    assert not (tmp_path / "refused").exists()
    sh(fake.container, "mkdir -p /srez/real && echo fine > /srez/real/ok")
    loop = (
        "cd /srez; i=0; while [ $i -lt 10000 ]; do ln -sfn /etc x; ln -sfn real x; i=$((i+1)); done"
    )
    fake.container.exec_run(["sh", "-c", loop], detach=True)
    await asyncio.sleep(1.0)  # the swap loop runs while the container is stopped
    await backend.stop(handle)
    dest = tmp_path / "copy"
    await backend.copy_out(await backend.get(fake.run_id), dest)
    copied = tree_digest(dest)
    leaked = [p for p, data in copied.items() if b"root:x:0:0" in data or p.startswith("x/")]
    figure("bytes from outside after a symlink swap loop", sum(len(copied[p]) for p in leaked))
    assert leaked == []
    assert copied["real/ok"] == b"fine\n"
    record = json.loads((dest / "mirror.json").read_bytes())
    assert {(s["path"], s["type"]) for s in record["skipped"]} >= {("x", "symlink")}


async def test_sec19_special_files_and_hardlinks_are_never_copied(
    engine: Engine, backend: DockerBackend, tmp_path: Path
) -> None:
    fake = fake_run(engine, backend, tmp_path / "results")
    script = (
        "cd /srez && mkfifo fifo && mknod chr c 1 3 && mknod blk b 7 0 && "
        "ln -s /etc/shadow shadow && ln -s / root && "
        "python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind(\"sock\")' ; "
        "echo ok > real && ln real twin; ln /etc/passwd passwd 2>&1 || true"
    )
    out = sh(fake.container, script)
    assert "cross-device" in out.lower() or "invalid" in out.lower()  # /srez is its own volume
    await backend.stop(await backend.get(fake.run_id))
    started = time.monotonic()
    dest = tmp_path / "copy"
    await backend.copy_out(await backend.get(fake.run_id), dest)
    figure("mirror of a folder of special files (s)", f"{time.monotonic() - started:.2f}")
    copied = tree_digest(dest)
    assert b"root:" not in b"".join(copied.values())
    skipped = {s["path"]: s for s in json.loads((dest / "mirror.json").read_bytes())["skipped"]}
    assert skipped["fifo"]["reason"] == "special"
    assert skipped["chr"]["type"] == "char_device" and skipped["blk"]["type"] == "block_device"
    assert skipped["shadow"]["link_target"] == "/etc/shadow"
    assert skipped["twin"]["reason"] == "hardlink"
    assert "passwd" not in copied and copied["real"] == b"ok\n"


async def test_sec21_scaled_caps_hold_on_a_sparse_file_and_many_small_files(
    engine: Engine, tmp_path: Path
) -> None:
    limits = MirrorLimits(max_files=5_000)
    backend = engine.backend(tmp_path / "state", limits=limits)
    try:
        fake = fake_run(engine, backend, tmp_path / "results")
        sh(
            fake.container,
            "cd /srez && echo '{}' > result.json && "
            "dd if=/dev/zero of=big.img bs=1 count=0 seek=2G 2>/dev/null && mkdir many && "
            'python3 -c \'for i in range(20000): open("many/%05d" % i, "w").write("x")\'',
        )
        await backend.stop(await backend.get(fake.run_id))
        dest = tmp_path / "copy"
        started = time.monotonic()
        await backend.copy_out(await backend.get(fake.run_id), dest)
        took = time.monotonic() - started
    finally:
        backend.close()
    record = json.loads((dest / "mirror.json").read_bytes())
    on_disk = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
    figure("2 GiB sparse + 20k files: mirror time (s)", f"{took:.1f}")
    figure(
        "2 GiB sparse + 20k files: files kept / bytes on disk",
        f"{record['files_copied']} / {on_disk}",
    )
    assert record["artifacts_truncated"] is True
    assert record["files_copied"] <= limits.max_files
    assert on_disk <= limits.max_total_bytes
    reasons = {s["path"]: s["reason"] for s in record["skipped"]}
    assert reasons["big.img"] == "too_large"
    assert record["files_copied"] == limits.max_files  # then file_cap, then the member budget
    assert 0 < sum(r == "file_cap" for r in reasons.values()) <= 2 * limits.max_files + 1000
    assert len(record["skipped"]) == 2 * limits.max_files + 1000  # the rest counted, not listed


def test_sec22_hostile_labels_are_refused_and_nothing_is_written_outside(
    engine: Engine, backend: DockerBackend, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    results.mkdir()
    spoofs = [
        {"srez.run": "../../x"},
        {"srez.task": "/etc"},
        {"srez.agent": ".."},
        {"srez.results": str(tmp_path / "elsewhere")},
    ]
    ids = []
    for labels in spoofs:
        fake = fake_run(engine, backend, results, owned=False, labels=labels, seconds=1)
        wait_state(fake.container, ("exited",))
        ids.append(fake.run_id)
    before = sorted(p.name for p in tmp_path.iterdir())
    proc = engine.srez(tmp_path / "state", "mirror", "--watch", "--once", "--results", str(results))
    assert proc.returncode == 0, proc.stderr
    mine = [line for line in proc.stdout.splitlines() if line.split(":", 1)[0] in ids]
    refused = [line for line in mine if ": refused: " in line]
    figure("hostile label sets refused", f"{len(refused)}/{len(spoofs) - 1} listed")
    assert len(refused) == len(mine) == len(spoofs) - 1  # the run id '../../x' is not listed
    assert "cannot name a results folder" in proc.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert list(results.iterdir()) == []
    assert not (tmp_path / "x").exists() and not (tmp_path.parent / "x").exists()


async def test_sec36_a_killed_cli_loses_nothing_the_watch_mirrors_its_run(
    engine: Engine, backend: DockerBackend, tmp_path: Path
) -> None:
    state, results = tmp_path / "state", tmp_path / "results"
    outcomes: list[MirrorOutcome] = []
    seen = asyncio.Event()

    def report(outcome: MirrorOutcome) -> None:
        outcomes.append(outcome)
        if outcome.outcome == "mirrored":
            seen.set()

    watcher = asyncio.ensure_future(
        watch_stopped(backend, state / "tmp", WatchOptions(results, timeout_s=90, report=report))
    )
    args = ["run", "--backend", "docker", "--task", "sre-002", "--agent", "heuristic"]
    cli = await asyncio.create_subprocess_exec(
        str(SREZ),
        *args,
        "--results",
        str(results),
        env=engine.env(state),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    container = await asyncio.to_thread(_container_of, engine, results)
    await asyncio.to_thread(wait_state, container, ("running", "exited"))
    cli.send_signal(signal.SIGKILL)
    await cli.wait()
    run_id = container.labels["srez.run"]
    started = time.monotonic()
    try:
        async with asyncio.timeout(60):
            await seen.wait()
    finally:
        watcher.cancel()
        with pytest.raises(asyncio.CancelledError):
            await watcher
    figure(
        "kill -9 CLI: container stop to mirrored by the watch (s)",
        f"{time.monotonic() - started:.2f}",
    )
    mirrored = [o for o in outcomes if o.outcome == "mirrored"]
    assert [o.run_id for o in mirrored] == [run_id]
    folder = Path(mirrored[0].detail)
    for name in ("run.json", "result.json", "summary.json", "archive/dialog.jsonl"):
        assert (folder / name).is_file(), name
    digest = tree_digest(folder)
    one = engine.srez(state, "mirror", run_id[:-2])
    assert one.returncode == 0 and f"{run_id}: skipped (already mirrored" in one.stdout
    again = engine.srez(state, "mirror", "--watch", "--once", "--rm", "--results", str(results))
    assert again.returncode == 0 and f"{run_id}: skipped (already mirrored" in again.stdout
    assert tree_digest(folder) == digest
    assert all(c.labels.get("srez.run") != run_id for c in engine.ours())  # --rm: cleaned up


def test_sec36_the_next_srez_runs_call_mirrors_a_killed_clis_run(
    engine: Engine, tmp_path: Path
) -> None:
    state, results = tmp_path / "state", tmp_path / "results"
    args = ["run", "--backend", "docker", "--task", "sre-002", "--agent", "heuristic"]
    cli = subprocess.Popen(
        [str(SREZ), *args, "--results", str(results)],
        env=engine.env(state),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    container = _container_of(engine, results)
    wait_state(container, ("running", "exited"))
    cli.kill()
    cli.wait()
    run_id = container.labels["srez.run"]
    wait_state(container, ("exited",))  # the run finishes on its own, with no client
    listing = engine.srez(state, "runs", "list", "--backend", "docker", "--all")
    assert listing.returncode == 0, listing.stderr
    assert f"{run_id}: mirrored" in listing.stderr
    folder = results / "sre-002" / "none" / "heuristic" / run_id
    for name in ("run.json", "result.json", "summary.json", "archive/dialog.jsonl"):
        assert (folder / name).is_file(), name
    digest = tree_digest(folder)
    again = engine.srez(state, "runs", "list", "--backend", "docker", "--all")
    assert again.returncode == 0 and "mirrored" not in again.stderr  # once only
    assert tree_digest(folder) == digest


async def test_sec40_50_concurrent_stops_and_removes(
    engine: Engine, backend: DockerBackend, tmp_path: Path
) -> None:
    handle = await backend.launch(spec_for(tmp_path / "results"))
    foreign = fake_run(engine, backend, tmp_path / "results", owned=False)
    volume = engine.client.containers.get(f"srez-{handle.run_id}").attrs["Mounts"][0]["Name"]
    started = time.monotonic()
    calls = [backend.stop(handle) if i % 2 else backend.remove(handle) for i in range(50)]
    results = await asyncio.gather(*calls, return_exceptions=True)
    figure("50 concurrent stop+remove (s)", f"{time.monotonic() - started:.2f}")
    errors = [r for r in results if isinstance(r, BaseException)]
    figure("exceptions in 50 concurrent stop+remove", len(errors))
    assert errors == []
    assert all(c.labels.get("srez.run") != handle.run_id for c in engine.ours())
    assert volume not in {v.name for v in engine.client.volumes.list()}
    listed = {h.run_id for h in await backend.list(include_exited=True)}
    assert handle.run_id not in listed and foreign.run_id in listed
    assert not (tmp_path / "state" / "docker" / handle.run_id).exists()
    again = await asyncio.gather(
        *(backend.stop(handle) if i % 2 else backend.remove(handle) for i in range(50)),
        return_exceptions=True,
    )
    assert [r for r in again if isinstance(r, BaseException)] == []
    foreign.container.reload()
    assert foreign.container.status == "running"  # not ours: untouched


async def test_sec41_a_wrong_nonce_is_never_stopped_removed_or_mirrored_as_owned(
    engine: Engine, backend: DockerBackend, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    spoof = fake_run(engine, backend, results, ledger_nonce="0" * 32)
    handle = await backend.get(spoof.run_id)
    assert not handle.owned
    for action in (backend.stop, backend.remove, backend.endpoint, backend.token):
        with pytest.raises(NotOwnedError):
            await action(handle)
    with pytest.raises(NotOwnedError):
        await backend.copy_out(handle, tmp_path / "copy")
    cli = engine.srez(tmp_path / "state", "runs", "rm", "--backend", "docker", spoof.run_id)
    assert cli.returncode == 2 and "not launched from this state" in cli.stderr
    outcome = await mirror_stopped(backend, handle, tmp_path / "scratch", results_root=results)
    assert outcome.outcome == "skipped"  # running: a read-only mirror never pauses or stops it
    spoof.container.reload()
    assert spoof.container.status == "running"
    spoof.container.stop(timeout=1)
    stopped = await backend.get(spoof.run_id)
    elsewhere = await mirror_stopped(
        backend, stopped, tmp_path / "scratch", results_root=tmp_path / "other"
    )
    assert elsewhere.outcome == "refused" and "not launched from this state" in elsewhere.detail
    here = await mirror_stopped(
        backend, stopped, tmp_path / "scratch", results_root=results, remove=True
    )
    assert here.outcome == "mirrored"  # read-only, into the accepted root; never removed
    spoof.container.reload()
    assert spoof.container.status == "exited"
    digest = tree_digest(results)
    replay = await mirror_stopped(backend, stopped, tmp_path / "scratch", results_root=results)
    assert replay.outcome == "skipped" and tree_digest(results) == digest
    figure("foreign containers stopped/removed/mirrored-as-owned", 0)


# An impostor in the run's container: what an agent that got root would serve on 4263 after
# killing the daemon. It accepts anything and hands out a forged grade.
IMPOSTOR = """
import http.server, json
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"reward": {"total": 0.987654321}, "run_id": "x", "phase": "done"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)
http.server.HTTPServer(("0.0.0.0", 4263), H).serve_forever()
"""


def test_sec7_an_impostor_on_a_runs_published_port_is_never_adopted(
    engine: Engine, backend: DockerBackend, tmp_path: Path
) -> None:
    """The container is ours (labels and nonce match our state), but what answers on its port is
    not the daemon we gave the token to: ``srez attach``, ``runs logs`` and ``runs exec`` refuse."""
    impostors = [
        fake_run(
            engine,
            backend,
            tmp_path / "results",
            command=["/opt/srez/bin/python", "-c", IMPOSTOR],
        )
        for _ in range(3)
    ]
    adopted = 0
    for fake in impostors:
        wait_state(fake.container, ("running",))
        for verb in (["attach", "--plain"], ["runs", "logs", "--name", "agent"], ["runs", "exec"]):
            extra = ["--", "true"] if verb[-1] == "exec" else []
            deadline = time.monotonic() + 20
            while True:  # until the impostor listens (before that, the refusal is "unreachable")
                done = engine.srez(
                    tmp_path / "state", *verb, fake.run_id, "--backend", "docker", *extra
                )
                if "not a daemon to trust" in done.stderr or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            adopted += done.returncode == 0 or "0.987654321" in done.stdout
            assert "not a daemon to trust" in done.stderr, (verb, done.stderr)
    figure("SECURITY 7: impostors adopted (of 9 attempts)", adopted)
    assert adopted == 0


@pytest.mark.parametrize("kills", [10, pytest.param(50, marks=pytest.mark.slow)])
def test_sec39_a_killed_docker_mirror_leaves_nothing_partial_and_remirrors_identically(
    engine: Engine, tmp_path: Path, kills: int
) -> None:
    """docs/security.md test 39 on docker copy-out: ``srez mirror`` killed -9 at random moments, 10
    times in ``make test`` and the plan's 50 in ``make test-all``."""
    state, results = tmp_path / "state", tmp_path / "results"
    backend = engine.backend(state)
    try:
        spec = LaunchSpec(task_id="sre-001", agent_spec="scripted", keep=True, results_root=results)

        async def launch() -> str:
            handle = await backend.launch(spec)
            await backend.wait(handle, timeout_s=60)
            return handle.run_id

        run_id = asyncio.run(launch())
    finally:
        backend.close()
    container = next(c for c in engine.ours() if c.labels.get("srez.run") == run_id)
    # bulk, so that a kill lands mid-copy: 120 files of 96 KiB of random bytes
    sh(
        container,
        "mkdir -p /srez/bulk && for i in $(seq 100 219); do head -c 98304 /dev/urandom > /srez/bulk/blob-$i; done",
    )
    assert engine.srez(state, "runs", "stop", "--backend", "docker", run_id).returncode == 0
    wait_state(container, ("exited",))
    final = results / "sre-001" / "none" / "scripted" / run_id
    first = engine.srez(state, "mirror", run_id)
    assert first.returncode == 0, first.stderr
    reference = tree_digest(final)
    assert sum(1 for name in reference if name.startswith("bulk/")) == 120
    shutil.move(final, tmp_path / "reference")
    rng = random.Random(39)
    outcomes = {"absent": 0, "complete": 0}
    for _ in range(kills):
        child = subprocess.Popen(
            [str(SREZ), "mirror", run_id],
            env=engine.env(state),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(0.2, 1.2))  # start-up, the engine's archive, the extraction
        child.kill()
        child.wait()
        outcomes[after_a_killed_mirror(final, tree_digest, reference)] += 1
    again = engine.srez(state, "mirror", run_id)
    assert again.returncode == 0, again.stderr
    figure("SECURITY 39 (docker): kills absent/complete", outcomes)
    assert tree_digest(final) == reference  # byte-identical re-mirror
    assert sorted(p.name for p in final.parent.iterdir()) == [run_id]  # partial folders cleared
    assert outcomes["absent"] >= 1

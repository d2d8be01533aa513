"""The ``local`` backend's warm run template: forked runs behave as fresh ones, share nothing,
and a template that dies loses no run (client/srez_client/backends/local/template.py)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from backend_contract import run_contract, spec_for

from srez_client.backends.base import LaunchSpec, RunHandle
from srez_client.backends.local.backend import LocalBackend
from srez_client.backends.local.environment import passed_environment
from srez_client.backends.local.template import RunTemplate
from srez_client.backends.registry import make_backend, parse_config
from srez_daemon.protocol.template import receive, send
from srez_env.tasks import load_tasks

FEW_TASKS = ("sre-001", "sre-014", "sre-025")


def _ppid(pid: int) -> int | None:
    """The parent of a running ``pid``; None once it has ended."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()
    return None if fields[0] in (b"Z", b"X") else int(fields[1])


def _daemon_pid(backend: LocalBackend, handle: RunHandle) -> int:
    record = backend._record(handle.run_id)
    assert record is not None and record.pid is not None
    return record.pid


@pytest.fixture
def forking(tmp_path: Path) -> Iterator[LocalBackend]:
    backend = LocalBackend(tmp_path / "state", run_template=True)
    try:
        yield backend
    finally:
        backend.close()


async def test_local_without_the_template_passes_the_conformance_suite(tmp_path: Path) -> None:
    # the registry's local case runs the default (the template); this is the fresh start
    backend = make_backend(
        parse_config({"kind": "local", "state_dir": tmp_path / "state", "run_template": False})
    )
    assert isinstance(backend, LocalBackend) and backend._template is None
    report = await run_contract(backend, spec_for(tmp_path / "results"), tmp_path / "scratch")
    assert all(v == "ok" for v in report.values()), report


def test_the_template_is_switched_by_its_variable(tmp_path: Path) -> None:
    from srez_client.backends.config import BackendSettings
    from srez_client.backends.local.config import LocalConfig

    settings = BackendSettings(tmp_path, variables={"SREZ_RUN_TEMPLATE": "0"})
    assert LocalConfig.from_settings(settings).run_template is False
    assert LocalConfig.from_settings(BackendSettings(tmp_path)).run_template is True


async def _grades(backend: LocalBackend, tasks: list[str], results: Path) -> dict[str, bytes]:
    gate = asyncio.Semaphore(4)

    async def one(task_id: str, agent: str) -> tuple[str, bytes]:
        async with gate:
            spec = LaunchSpec(task_id=task_id, agent_spec=agent, results_root=results)
            handle = await backend.launch(spec)
            parent = _ppid(_daemon_pid(backend, handle))  # None: it finished already
            if backend._template is not None:  # a fork: its parent is the template
                assert parent in (backend._template.pid, None)
            else:
                assert parent in (os.getpid(), None)
            await backend.wait(handle, timeout_s=120)
        grade = backend.live / handle.run_id / "run" / "result.json"
        return f"{task_id}/{agent}", grade.read_bytes()

    pairs = [(t, a) for t in tasks for a in ("scripted", "heuristic")]
    return dict(await asyncio.gather(*(one(t, a) for t, a in pairs)))


@pytest.mark.parametrize(
    "tasks",
    [
        pytest.param(FEW_TASKS, id="three-tasks"),
        pytest.param(None, id="all-tasks", marks=pytest.mark.slow),
    ],
)
async def test_a_forked_run_grades_byte_identically_to_a_fresh_one(
    tmp_path: Path, tasks: tuple[str, ...] | None
) -> None:
    ids = list(tasks) if tasks is not None else [t.id for t in load_tasks()]
    forking = LocalBackend(tmp_path / "forked", run_template=True)
    try:
        forked = await _grades(forking, ids, tmp_path / "results-forked")
        assert forking._template is not None and not forking._template.off
    finally:
        forking.close()
    fresh = await _grades(
        LocalBackend(tmp_path / "fresh", run_template=False), ids, tmp_path / "results-fresh"
    )
    assert len(forked) == 2 * len(ids)
    assert forked == fresh


async def test_two_runs_forked_together_share_no_state(
    forking: LocalBackend, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    first, second = await asyncio.gather(
        forking.launch(spec_for(results, task_id="sre-001")),
        forking.launch(spec_for(results, task_id="sre-002")),
    )
    try:
        assert forking._template is not None
        pids = [_daemon_pid(forking, h) for h in (first, second)]
        assert [_ppid(p) for p in pids] == [forking._template.pid] * 2
        assert [os.getpgid(p) for p in pids] == pids  # each leads its own group, as a fresh one
        tokens = [await forking.token(h) for h in (first, second)]
        bases = [await forking.endpoint(h) for h in (first, second)]
        assert len(set(tokens)) == 2 and len(set(bases)) == 2 and len(set(pids)) == 2
        for handle in (first, second):
            await forking.wait(handle, timeout_s=60)
        async with aiohttp.ClientSession() as http:
            for base, own, other in ((bases[0], *tokens), (bases[1], *reversed(tokens))):
                headers = {"Authorization": f"Bearer {own}"}
                async with http.get(f"{base}/api/run", headers=headers) as resp:
                    assert resp.status == 200
                    info = await resp.json()
                async with http.get(
                    f"{base}/api/run", headers={"Authorization": f"Bearer {other}"}
                ) as resp:
                    assert resp.status == 401  # one run's token opens nothing of the other
                assert info["run_id"] == (first if base == bases[0] else second).run_id
        # each wrote its own folder, and only its own: its task, its dialog, its grade
        for handle, task_id in ((first, "sre-001"), (second, "sre-002")):
            run = forking.live / handle.run_id / "run"
            assert f'"task_id":"{task_id}"' in (run / "result.json").read_text().replace(" ", "")
            dialog = (run / "archive" / "dialog.jsonl").read_text()
            assert handle.run_id in dialog
            other = second if handle is first else first
            assert other.run_id not in dialog
        # the template holds no file of either run
        held = _open_files(forking._template.pid)
        assert not [p for p in held if str(forking.live) in p], held
    finally:
        await asyncio.gather(forking.remove(first), forking.remove(second))


async def test_a_template_killed_mid_launch_loses_no_run(
    forking: LocalBackend, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    warm = await forking.launch(spec_for(results))
    template = forking._template
    assert template is not None and template.pid is not None
    os.kill(template.pid, signal.SIGSTOP)  # the launches below wait on its answer
    launches = [
        asyncio.ensure_future(forking.launch(spec_for(results, task_id=f"sre-00{i}")))
        for i in (2, 3, 4)
    ]
    await asyncio.sleep(0.5)
    os.kill(template.pid, signal.SIGKILL)
    handles = await asyncio.gather(*launches)
    try:
        assert template.off
        for handle in handles:  # started afresh: the launcher is their parent, and each is whole
            assert _ppid(_daemon_pid(forking, handle)) == os.getpid()
            done = await forking.wait(handle, timeout_s=60)
            assert done.finished
        # each run has one daemon: no second process ever wrote its endpoint or its output
        for handle in handles:
            out = (forking.live / handle.run_id / "daemon.out").read_text()
            assert out.count("listening on") == 1, out
        assert capfd.readouterr().err.count("run template failed") == 1  # said once
    finally:
        await asyncio.gather(*(forking.remove(h) for h in (warm, *handles)))


def test_a_fork_whose_launcher_never_says_go_exits_untouched(tmp_path: Path) -> None:
    # the window the test above cannot aim at: the template forked, then its answer was lost
    template = RunTemplate(tmp_path / "template.out")
    channel = template._start()
    run = tmp_path / "live" / "run"
    run.mkdir(parents=True)
    out = tmp_path / "daemon.out"
    env = {
        **passed_environment(os.environ),
        "SREZ_RUN_DIR": str(run),
        "SREZ_ENDPOINT_FILE": str(tmp_path / "endpoint.json"),
    }
    go_read, go_write = os.pipe()
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    send(channel, {"args": [], "env": env, "cwd": str(tmp_path)}, [go_read, fd])
    os.close(go_read)
    os.close(fd)
    message, _ = receive(channel)
    pid = message["pid"]
    os.close(go_write)  # the launcher "died" before the byte
    deadline = asyncio.run(_gone(pid))
    assert deadline, "the fork did not exit"
    assert not (tmp_path / "endpoint.json").exists()
    assert out.read_bytes() == b""
    assert list(run.iterdir()) == []
    template.close()
    assert template.pid is not None
    with pytest.raises(ProcessLookupError):
        os.kill(template.pid, 0)


def _open_files(pid: int | None) -> set[str]:
    """What ``pid`` holds open besides its standard streams."""
    fds = Path(f"/proc/{pid}/fd")
    return {str(fd.readlink()) for fd in fds.iterdir() if fd.name not in ("0", "1", "2")}


async def _gone(pid: int) -> bool:
    for _ in range(200):
        if _ppid(pid) is None:
            return True
        await asyncio.sleep(0.025)
    return False


def test_the_template_exits_with_its_launcher(tmp_path: Path) -> None:
    code = (
        "import sys, pathlib\n"
        "from srez_client.backends.local.template import RunTemplate\n"
        f"t = RunTemplate(pathlib.Path({str(tmp_path / 't.out')!r}))\n"
        "t._start()\n"
        "print(t.pid, flush=True)\n"
        "import os; os._exit(0)\n"  # no close(), no finaliser: as a kill -9 would leave it
    )
    import subprocess

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    pid = int(done.stdout.split()[0])
    assert asyncio.run(_gone(pid)), "the template outlived its launcher"


def test_the_template_refuses_a_malformed_request_and_keeps_serving(tmp_path: Path) -> None:
    template = RunTemplate(tmp_path / "template.out")
    channel = template._start()
    try:
        read, write = os.pipe()
        send(channel, {"args": "--keep", "env": {}, "cwd": "/"}, [read, write])
        os.close(read)
        os.close(write)
        message, _ = receive(channel)
        assert "needs args" in message["error"]
        send(channel, {"args": [], "env": {}, "cwd": "/"})  # no descriptors
        message, _ = receive(channel)
        assert "2 descriptors" in message["error"]
        assert _open_files(template.pid) == {f"socket:[{_inode(template.pid)}]"}
        # it rehearsed (srez_daemon.rehearsal) without a complaint, and kept nothing of it open
        assert "srez-template" not in (tmp_path / "template.out").read_text()
    finally:
        template.close()


def _inode(pid: int | None) -> str:
    """The inode of the one socket ``pid`` holds (its end of the pair)."""
    (link,) = [str(fd.readlink()) for fd in Path(f"/proc/{pid}/fd").iterdir() if fd.name == "3"]
    return link.removeprefix("socket:[").removesuffix("]")

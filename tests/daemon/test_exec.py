"""POST /api/exec with real processes through a real socket (docs/security.md tests 32, 33, 35).

Each test asserts a figure. Processes a test starts carry a marker argument (``sleep 4242.1``)
so survivors can be counted across the whole machine without counting anyone else's.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import psutil
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from daemonkit import SLEEPER, live_daemon
from processkit import marked, wait_for
from pytest_aiohttp import AiohttpClient

from srez_daemon.services import procs
from srez_daemon.services.exec import ExecService
from srez_daemon.services.limits import SessionLimiter
from srez_daemon.settings import MAX_STREAM_BYTES, DaemonSettings

MiB = 1 << 20
Client = TestClient[web.Request, web.Application]


class Harness:
    def __init__(self, client: Client, service: ExecService, limiter: SessionLimiter) -> None:
        self.client = client
        self.service = service
        self.limiter = limiter

    async def exec(
        self, argv: list[str], timeout_s: float = 10, headers: dict[str, str] | None = None
    ) -> dict[str, Any]:
        resp = await self.client.post(
            "/api/exec", json={"argv": argv, "timeout_s": timeout_s}, headers=headers
        )
        assert resp.status == 200, await resp.text()
        body: dict[str, Any] = await resp.json()
        return body


MakeHarness = Callable[..., Awaitable[Harness]]


@pytest.fixture
def make_harness(aiohttp_client: AiohttpClient, tmp_path: Path) -> MakeHarness:
    async def make(max_sessions: int = 8, session_wait_s: float = 2.0) -> Harness:
        settings = DaemonSettings(
            run_dir=tmp_path,
            token_file=tmp_path / "token",
            max_sessions=max_sessions,
            session_wait_s=session_wait_s,
        )
        limiter = SessionLimiter(settings.max_sessions)
        service = ExecService(settings, limiter)

        async def health(_: web.Request) -> web.Response:
            return web.json_response({"status": "ok"})

        async def shutdown(_: web.Application) -> None:
            await service.close()

        app = web.Application()
        app.router.add_post("/api/exec", service.handle)
        app.router.add_get("/api/health", health)
        app.on_shutdown.append(shutdown)
        return Harness(await aiohttp_client(app), service, limiter)

    return make


async def test_exec_echo(make_harness: MakeHarness) -> None:
    h = await make_harness()
    start = time.perf_counter()
    result = await h.exec(["echo", "hi"])
    took = time.perf_counter() - start
    assert result == {
        "exit_code": 0,
        "stdout": "hi\n",
        "stderr": "",
        "truncated": False,
        "timed_out": False,
        "duration_s": result["duration_s"],
    }
    assert 0 < result["duration_s"] <= took  # the command's own time, in seconds, within the call


async def test_exec_exit_codes_and_both_streams(make_harness: MakeHarness) -> None:
    h = await make_harness()
    result = await h.exec(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (result["exit_code"], result["stdout"], result["stderr"]) == (3, "out\n", "err\n")
    assert (await h.exec(["sh", "-c", "kill -TERM $$"]))["exit_code"] == -15


async def test_exec_unrunnable_program_is_a_result(
    make_harness: MakeHarness, tmp_path: Path
) -> None:
    h = await make_harness()
    missing = await h.exec(["no-such-program-srez"])
    assert missing["exit_code"] == 127
    assert missing["stderr"] == "no-such-program-srez: No such file or directory\n"
    (tmp_path / "script").write_text("#!/bin/sh\necho hi\n")  # not executable
    denied = await h.exec([str(tmp_path / "script")])
    assert denied["exit_code"] == 126
    assert "Permission denied" in denied["stderr"]


async def test_exec_runs_in_the_run_folder(make_harness: MakeHarness, tmp_path: Path) -> None:
    h = await make_harness()
    (tmp_path / "sub").mkdir()
    assert (await h.exec(["pwd"]))["stdout"] == f"{tmp_path}\n"
    resp = await h.client.post("/api/exec", json={"argv": ["pwd"], "timeout_s": 5, "cwd": "sub"})
    assert (await resp.json())["stdout"] == f"{tmp_path / 'sub'}\n"


async def test_exec_cwd_must_resolve_inside_the_run_folder(
    make_harness: MakeHarness, tmp_path: Path
) -> None:
    """Issue 11 item 9: ``cwd`` escaped the run folder, though the docs say it is inside."""
    h = await make_harness()
    (tmp_path / "sub").mkdir()
    (tmp_path / "out").symlink_to("/tmp")
    (tmp_path / "sub" / "up").symlink_to(tmp_path.parent)
    (tmp_path / "in").symlink_to(tmp_path / "sub")
    for cwd in ("..", "sub/../..", "/tmp", "/", "out", "sub/up", "sub/..", "a\x00b"):
        resp = await h.client.post("/api/exec", json={"argv": ["pwd"], "timeout_s": 5, "cwd": cwd})
        body = await resp.json()
        assert resp.status == 400 and body["error"]["code"] == "bad_request", (cwd, body)
    for cwd, where in (("in", tmp_path / "sub"), (str(tmp_path / "sub"), tmp_path / "sub")):
        resp = await h.client.post("/api/exec", json={"argv": ["pwd"], "timeout_s": 5, "cwd": cwd})
        assert (await resp.json())["stdout"] == f"{where.resolve()}\n", cwd


async def test_exec_output_flood_is_capped(make_harness: MakeHarness) -> None:
    """docs/security.md test 32, scaled: 20 MB of output -> 1 MiB kept, RSS +<10 MiB, no
    survivor."""
    h = await make_harness()
    me = psutil.Process()
    flood = "head -c 20000000 /dev/zero | tr '\\0' x"
    await h.exec(["sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' x"])  # warm the buffers
    baseline = peak = me.memory_info().rss

    async def sample() -> None:
        nonlocal peak
        while True:
            peak = max(peak, me.memory_info().rss)
            await asyncio.sleep(0.005)

    sampler = asyncio.get_running_loop().create_task(sample())
    try:
        result = await h.exec(["sh", "-c", flood], timeout_s=30)
    finally:
        sampler.cancel()
    assert result["exit_code"] == 0
    assert result["truncated"] is True
    assert len(result["stdout"]) == MAX_STREAM_BYTES == MiB
    assert set(result["stdout"]) == {"x"}
    growth = peak - baseline
    print(f"exec flood 20 MB: RSS growth {growth / MiB:.2f} MiB, {result['duration_s']:.3f} s")
    assert growth < 10 * MiB
    await wait_for(lambda: procs.count_tree(os.getpid()) == procs.TreeCount(0, 0), 6)


async def test_exec_endless_flood_is_killed(make_harness: MakeHarness) -> None:
    """``yes`` never stops: it is killed once it passes the flood limit, long before its
    timeout, and nothing of it survives."""
    h = await make_harness()
    start = time.perf_counter()
    result = await h.exec(["sh", "-c", "yes 4242.33 & yes 4242.33"], timeout_s=60)
    took = time.perf_counter() - start
    print(f"exec endless flood: killed after {took:.3f} s")
    assert result["truncated"] is True
    assert result["exit_code"] == -9
    assert len(result["stdout"]) == MAX_STREAM_BYTES
    assert result["timed_out"] is False and took < 60  # killed for its flood, not its timeout
    await wait_for(lambda: not marked("4242.33"), 6)


async def test_exec_timeout_kills_the_whole_tree(make_harness: MakeHarness) -> None:
    """docs/security.md test 33, scaled to 1 s: a background job, a setsid grandchild, and a setsid
    escapee already re-parented to PID 1 (double fork) all die."""
    h = await make_harness()
    script = (
        "sleep 4242.4 & setsid sh -c 'sleep 4242.4' & "
        "(setsid nohup sleep 4242.4 >/dev/null 2>&1 &); sleep 4242.4"
    )
    start = time.perf_counter()
    result = await h.exec(["sh", "-c", script], timeout_s=1)
    took = time.perf_counter() - start
    assert result["timed_out"] is True
    assert result["exit_code"] is None
    assert 0.9 <= took < 5  # the 1 s limit held; slack above it for a loaded machine
    gone = await wait_for(lambda: not marked("4242.4"), 6)
    print(f"exec timeout 1 s: answered in {took:.3f} s, descendants gone {gone:.3f} s later")
    assert procs.count_tree(os.getpid()).zombies == 0


async def test_exec_leaves_nothing_running(make_harness: MakeHarness) -> None:
    """A command that exits while its background job holds the pipes answers after the drain
    grace with its own exit code, and the job is killed."""
    h = await make_harness()
    result = await h.exec(["sh", "-c", "sleep 4242.5 & echo started"], timeout_s=10)
    assert (result["exit_code"], result["stdout"], result["timed_out"]) == (0, "started\n", False)
    assert result["duration_s"] < 5  # the drain grace, not the 4242 s job
    await wait_for(lambda: not marked("4242.5"), 6)


@pytest.fixture
def sweeps(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The cookies of every ``/proc`` sweep the exec service starts (``procs.kill_session``)."""
    calls: list[str] = []
    sweep = procs.kill_session

    def counted(pgid: int, cookie: str, *args: Any, **kwargs: Any) -> int:
        calls.append(cookie)
        return sweep(pgid, cookie, *args, **kwargs)

    monkeypatch.setattr(procs, "kill_session", counted)
    return calls


async def test_exec_common_path_sweeps_no_process_table(
    make_harness: MakeHarness, sweeps: list[str]
) -> None:
    """Commands that exit in time, one with a background job in its group, and a burst of them:
    the group's kill is enough and not one ``/proc`` sweep runs (the token was let go)."""
    h = await make_harness()
    assert (await h.exec(["true"]))["exit_code"] == 0
    assert (await h.exec(["sh", "-c", "echo hi; sleep 0 & wait"]))["stdout"] == "hi\n"
    result = await h.exec(["sh", "-c", "sleep 4242.81 & echo started"])
    assert result["stdout"] == "started\n"
    burst = await asyncio.gather(*(h.exec(["sh", "-c", "echo $$"]) for _ in range(16)))
    assert all(r["exit_code"] == 0 for r in burst)
    await h.service.settled()
    await wait_for(lambda: not marked("4242.81"), 6)
    assert sweeps == []


async def test_exec_kills_what_left_its_group_after_it_exited(
    make_harness: MakeHarness, sweeps: list[str]
) -> None:
    """A command that exits in time after starting processes outside its group (``setsid``, a
    double-forked ``setsid nohup``, one that also dropped the cookie with ``env -i``): its token
    is still held, so its session is swept and none of them survives."""
    h = await make_harness()
    sh, touch, sleep = (shutil.which(p) for p in ("sh", "touch", "sleep"))
    escapee = f"{sh} -c '{touch} ready.$0; exec {sleep} 4242.82' >/dev/null 2>&1 </dev/null"
    script = (
        f"setsid {escapee.replace('$0', 'a')} & "
        f"(setsid nohup {escapee.replace('$0', 'b')} &); "
        f"setsid env -i {escapee.replace('$0', 'c')} & "
        "until [ -e ready.a ] && [ -e ready.b ] && [ -e ready.c ]; do sleep 0.01; done; echo up"
    )
    result = await h.exec(["sh", "-c", script])
    assert (result["exit_code"], result["stdout"], result["timed_out"]) == (0, "up\n", False)
    await h.service.settled()
    await wait_for(lambda: not marked("4242.82"), 6)
    assert len(sweeps) == 1


async def test_exec_request_id_replays_the_first_answer(
    make_harness: MakeHarness, tmp_path: Path
) -> None:
    h = await make_harness()
    log = tmp_path / "ran.log"
    body = {"argv": ["sh", "-c", f"sleep 0.3; echo ran >> {log}; date +%s%N"], "timeout_s": 5}
    headers = {"X-Request-ID": "retry-1"}
    # A retry sent while the first still runs, then one after it answered.
    first, concurrent = await asyncio.gather(
        h.client.post("/api/exec", json=body, headers=headers),
        h.client.post("/api/exec", json=body, headers=headers),
    )
    later = await h.client.post("/api/exec", json=body, headers=headers)
    bodies = {await r.read() for r in (first, concurrent, later)}
    assert len(bodies) == 1
    assert log.read_text() == "ran\n"
    other = await h.client.post(
        "/api/exec", json={**body, "timeout_s": 6}, headers={"X-Request-ID": "retry-1"}
    )
    assert other.status == 409
    assert (await other.json())["error"]["code"] == "conflict"


async def test_exec_ninth_concurrent_is_429_once_its_wait_is_over(
    make_harness: MakeHarness,
) -> None:
    """docs/security.md test 31: with 8 sessions held for longer than the wait in line, the 9th is
    refused with a ``Retry-After``."""
    h = await make_harness(max_sessions=8, session_wait_s=0.3)
    running = [
        asyncio.get_running_loop().create_task(h.exec(["sleep", "2"], timeout_s=10))
        for _ in range(8)
    ]
    await wait_for(lambda: h.limiter.in_use == 8, 6)
    resp = await h.client.post("/api/exec", json={"argv": ["true"], "timeout_s": 5})
    assert resp.status == 429
    assert resp.headers["Retry-After"] == "1"
    assert (await resp.json())["error"]["code"] == "too_many_sessions"
    assert h.limiter.waiting == 0
    async with asyncio.timeout(10):
        results = await asyncio.gather(*running)
    assert [r["exit_code"] for r in results] == [0] * 8
    assert h.limiter.in_use == 0
    assert (await h.exec(["true"]))["exit_code"] == 0


async def test_exec_over_the_cap_waits_in_line_for_a_slot(
    make_harness: MakeHarness, tmp_path: Path
) -> None:
    """With the cap at 1, a second exec waits for the first to end, then runs: a burst is
    queued, not refused; the ones in line are served oldest first."""
    h = await make_harness(max_sessions=1, session_wait_s=30)
    loop = asyncio.get_running_loop()
    hold = "while [ ! -e go ]; do sleep 0.02; done; echo first"  # holds the slot until go
    first = loop.create_task(h.exec(["sh", "-c", hold]))
    await wait_for(lambda: h.limiter.in_use == 1, 6)
    queued = []
    for n, name in enumerate(("second", "third"), start=1):
        queued.append(loop.create_task(h.exec(["sh", "-c", f"echo {name} | tee -a order"])))
        await wait_for(lambda n=n: h.limiter.waiting == n, 6)
    (tmp_path / "go").touch()
    async with asyncio.timeout(10):
        results = await asyncio.gather(first, *queued)
    assert [r["stdout"] for r in results] == ["first\n", "second\n", "third\n"]
    assert (tmp_path / "order").read_text() == "second\nthird\n"
    assert (h.limiter.in_use, h.limiter.waiting) == (0, 0)


@pytest.mark.parametrize(
    ("payload", "content_type", "needle"),
    [
        (b"{not json", "application/json", "not valid JSON"),
        (b'{"argv": ["true"]}', "application/json", "'timeout_s' is required"),
        (b'{"argv": [], "timeout_s": 1}', "application/json", "'argv'"),
        (b'{"argv": ["true"], "timeout_s": 0}', "application/json", "'timeout_s'"),
        (b'{"argv": ["true"], "timeout_s": 1, "shell": true}', "application/json", "'shell'"),
        (b'["true"]', "application/json", "JSON object"),
        (b'{"argv": ["true"], "timeout_s": 1}', "text/plain", "Content-Type: application/json"),
        (b'{"argv": ["true"], "timeout_s": 1, "cwd": "nope"}', "application/json", "'nope'"),
    ],
)
async def test_exec_rejects_bad_requests(
    make_harness: MakeHarness, payload: bytes, content_type: str, needle: str
) -> None:
    h = await make_harness()
    resp = await h.client.post("/api/exec", data=payload, headers={"Content-Type": content_type})
    assert resp.status == 400
    body = await resp.json()
    assert list(body) == ["error"]
    assert body["error"]["code"] == "bad_request"
    assert needle in body["error"]["message"]
    assert "\n" not in body["error"]["message"]


async def test_exec_does_not_block_the_loop(make_harness: MakeHarness) -> None:
    """A health request sent while a 2 s command runs waits < 50 ms (SWE-ReX: 1.8 s)."""
    h = await make_harness()
    running = asyncio.get_running_loop().create_task(h.exec(["sleep", "2"], timeout_s=10))
    await wait_for(lambda: h.limiter.in_use == 1, 6)
    waits = []
    for _ in range(20):
        start = time.perf_counter()
        resp = await h.client.get("/api/health")
        assert resp.status == 200
        waits.append(time.perf_counter() - start)
        await asyncio.sleep(0.02)
    assert not running.done()
    print(f"health during a 2 s exec: max {max(waits) * 1000:.2f} ms over {len(waits)}")
    assert max(waits) < 0.05
    async with asyncio.timeout(5):
        assert (await running)["exit_code"] == 0


async def test_exec_reaps_double_forked_jobs(make_harness: MakeHarness) -> None:
    """docs/security.md test 35, at the plan's size: 1000 double-forked background jobs -> 0 zombies
    after 5 s.

    asyncio's child watcher reaps the daemon's own child. The double-forked grandchildren are
    re-parented at once to PID 1 (tini in the container) or the nearest subreaper, and it is
    their parent's job to reap them; this test process is not a subreaper, so the figure it
    can own is: 0 zombies whose parent is the daemon (this process), and none below it.
    """
    h = await make_harness()
    script = "for i in $(seq 1000); do (sleep 0.1 4242.6 &); done"
    result = await h.exec(["sh", "-c", script], timeout_s=30)
    assert result["exit_code"] == 0

    def clean() -> bool:
        ours = [p for p in psutil.process_iter(["ppid", "status"]) if p.info["ppid"] == os.getpid()]
        zombies = [p for p in ours if p.info["status"] == psutil.STATUS_ZOMBIE]
        return not zombies and procs.count_tree(os.getpid()).zombies == 0 and not marked("4242.6")

    took = await wait_for(clean, 5)
    print(f"1000 double-forked jobs: 0 zombies of the daemon {took:.3f} s after the answer")


async def test_exec_close_kills_running_commands(make_harness: MakeHarness) -> None:
    h = await make_harness()
    running = asyncio.get_running_loop().create_task(
        h.exec(["sh", "-c", "sleep 4242.7 & sleep 4242.7"], timeout_s=60)
    )
    await wait_for(lambda: len(marked("4242.7")) == 2, 30)
    await h.service.close()
    # Hang guards only (the sleeps would last 4242 s): how soon a loaded machine reaps them is
    # not this test's claim.
    async with asyncio.timeout(30):
        result = await running
    assert result["exit_code"] == -9
    await wait_for(lambda: not marked("4242.7"), 30)


async def test_exec_burst_of_16_clients_gets_no_429(tmp_path: Path) -> None:
    """A real daemon with the default cap (8 sessions): 16 clients sending execs at once, 10
    each, all answer 200 with the command's output (the burst waits in line, never refused)."""
    with live_daemon(tmp_path, agent_cmd=SLEEPER) as d:
        url = d.base_url + "/api/exec"

        async def client(n: int) -> list[tuple[int, str]]:
            answers = []
            async with aiohttp.ClientSession(headers=d.headers) as http:
                for i in range(10):
                    body = {"argv": ["echo", f"{n}.{i}"], "timeout_s": 10}
                    async with http.post(url, json=body) as resp:
                        answers.append((resp.status, (await resp.json()).get("stdout", "")))
            return answers

        async with asyncio.timeout(60):
            got = await asyncio.gather(*(client(n) for n in range(16)))
    expected = [[(200, f"{n}.{i}\n") for i in range(10)] for n in range(16)]
    assert got == expected

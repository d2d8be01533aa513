"""GET /api/pty with real shells through a real WebSocket (docs/security.md tests 30, 31).

Each test asserts a figure. Processes a test starts carry a marker argument (``sleep 5151.1``)
so survivors can be counted across the whole machine without counting anyone else's.
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
import psutil
import pytest
from aiohttp import WSMsgType, web
from aiohttp.test_utils import TestClient
from processkit import marked, wait_for
from pytest_aiohttp import AiohttpClient

from srez_daemon.services import procs
from srez_daemon.services.exec import ExecService
from srez_daemon.services.limits import SessionLimiter
from srez_daemon.services.pty import PtyService
from srez_daemon.settings import DaemonSettings

pytestmark = pytest.mark.pty  # skipped without a pseudo-terminal, failed with REQUIRE_PTY=1

Client = TestClient[web.Request, web.Application]
ANSI = re.compile(
    rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[=>()][0-9A-Za-z]?"
)


class Harness:
    def __init__(self, client: Client, service: PtyService, limiter: SessionLimiter) -> None:
        self.client = client
        self.service = service
        self.limiter = limiter


MakeHarness = Callable[..., Awaitable[Harness]]


@pytest.fixture
def make_harness(
    aiohttp_client: AiohttpClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> MakeHarness:
    # A known shell with no personal start-up files, so the screen holds only what we type.
    monkeypatch.setenv("SHELL", "/bin/bash")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("PS1", "$ ")

    async def make(pty_idle_s: float = 300, max_sessions: int = 8) -> Harness:
        settings = DaemonSettings(
            run_dir=tmp_path,
            token_file=tmp_path / "token",
            pty_idle_s=pty_idle_s,
            max_sessions=max_sessions,
        )
        limiter = SessionLimiter(settings.max_sessions)
        service = PtyService(settings, limiter)

        async def shutdown(_: web.Application) -> None:
            await service.close()

        app = web.Application()
        app.router.add_get("/api/pty", service.handle)
        app.on_shutdown.append(shutdown)
        return Harness(await aiohttp_client(app), service, limiter)

    return make


def screen(data: bytes) -> str:
    return ANSI.sub(b"", data).replace(b"\r", b"").decode("utf-8", errors="replace")


async def read_until(
    ws: aiohttp.ClientWebSocketResponse, pattern: str, within_s: float = 30
) -> str:
    """Reads binary frames until ``pattern`` (a regex) appears in the ANSI-stripped text (a
    shell that starts on a busy machine may take seconds: the bound only ends a hung test)."""
    seen = b""
    async with asyncio.timeout(within_s):
        while True:
            msg = await ws.receive()
            assert msg.type is WSMsgType.BINARY, msg
            seen += msg.data
            if match := re.search(pattern, screen(seen)):
                return match.group(0)


def zombies() -> int:
    return procs.count_tree(os.getpid()).zombies


async def test_pty_echo_and_resize(make_harness: MakeHarness) -> None:
    h = await make_harness()
    async with h.client.ws_connect("/api/pty?cols=100&rows=30") as ws:
        await ws.send_bytes(b"stty size\n")
        assert await read_until(ws, r"\n30 100\n") == "\n30 100\n"
        # printf, so the expected line differs from the typed one the terminal echoes.
        await ws.send_bytes(b"printf 'hi-%s\\n' from-pty\n")
        await read_until(ws, r"\nhi-from-pty\n")
        await ws.send_str('{"resize": [120, 40]}')
        await ws.send_str("not a resize")  # ignored, with a log line
        await ws.send_bytes(b"stty size\n")
        await read_until(ws, r"\n40 120\n")


async def test_pty_close_kills_the_shell_and_its_children(make_harness: MakeHarness) -> None:
    h = await make_harness()
    async with h.client.ws_connect("/api/pty") as ws:
        await ws.send_bytes(b"sleep 5151.1 & nohup sleep 5151.1 >/dev/null 2>&1 & echo pid=$$\n")
        shell = int((await read_until(ws, r"pid=\d+"))[4:])
        await wait_for(lambda: len(marked("5151.1")) == 2, 6)
        start = time.perf_counter()
    closed = time.perf_counter() - start
    # The close is answered after the processes are gone, so nothing is left to wait for.
    assert not marked("5151.1")
    assert not psutil.pid_exists(shell)
    assert zombies() == 0
    assert h.limiter.in_use == 0
    print(f"pty close: shell and 2 jobs (one nohup) gone when close() returned, {closed:.3f} s")


async def test_pty_shell_exit_closes_the_socket(make_harness: MakeHarness) -> None:
    h = await make_harness()
    async with h.client.ws_connect("/api/pty") as ws:
        await ws.send_bytes(b"exit\n")
        async with asyncio.timeout(5):
            while (msg := await ws.receive()).type is WSMsgType.BINARY:
                pass
        assert msg.type is WSMsgType.CLOSE
        assert msg.extra == "shell exited"
    assert zombies() == 0


async def test_pty_idle_timeout_closes_and_kills(make_harness: MakeHarness) -> None:
    h = await make_harness(pty_idle_s=1)
    async with h.client.ws_connect("/api/pty") as ws:
        await ws.send_bytes(b"sleep 5151.2 &\n")
        await wait_for(lambda: len(marked("5151.2")) == 1, 6)
        start = time.perf_counter()
        async with asyncio.timeout(4):
            while (msg := await ws.receive()).type is WSMsgType.BINARY:
                pass
        idle = time.perf_counter() - start
        assert msg.type is WSMsgType.CLOSE
        assert msg.extra == "idle timeout"
    gone = await wait_for(lambda: not marked("5151.2"), 6)
    print(f"pty idle 1 s: closed {idle:.3f} s after the last output, job gone {gone:.3f} s later")
    assert zombies() == 0


@pytest.mark.parametrize("query", ["cols=abc", "rows=0", "cols=5000", "cols=-1&rows=10"])
async def test_pty_bad_size_is_400_before_the_upgrade(
    make_harness: MakeHarness, query: str
) -> None:
    h = await make_harness()
    with pytest.raises(aiohttp.WSServerHandshakeError) as raised:
        await h.client.ws_connect(f"/api/pty?{query}")
    assert raised.value.status == 400
    resp = await h.client.get(f"/api/pty?{query}")
    assert (await resp.json())["error"]["code"] == "bad_request"
    plain = await h.client.get("/api/pty")
    assert plain.status == 400  # not a WebSocket upgrade


async def test_pty_cycles_leak_no_fds_and_the_ninth_is_429(make_harness: MakeHarness) -> None:
    """docs/security.md test 31, scaled: 200 open/close cycles -> fd count back to baseline +-2, and
    a 9th concurrent session with the cap at 8 gets 429."""
    h = await make_harness(max_sessions=8)
    me = psutil.Process()

    async def cycle() -> None:
        async with h.client.ws_connect("/api/pty?cols=80&rows=24") as ws:
            await ws.send_bytes(b"echo up\n")
            await read_until(ws, r"\nup\n")

    await cycle()  # the client's connector and the loop's worker threads exist from here on
    baseline = me.num_fds()
    start = time.perf_counter()
    for _ in range(200):
        await cycle()
    took = time.perf_counter() - start
    await wait_for(lambda: abs(me.num_fds() - baseline) <= 2, 5)
    print(f"pty 200 cycles in {took:.2f} s: fds {baseline} -> {me.num_fds()}")

    sockets = [await h.client.ws_connect("/api/pty") for _ in range(8)]
    with pytest.raises(aiohttp.WSServerHandshakeError) as raised:
        await h.client.ws_connect("/api/pty")
    assert raised.value.status == 429
    for ws in sockets:
        await ws.close()
    assert h.limiter.in_use == 0
    await wait_for(lambda: abs(me.num_fds() - baseline) <= 2, 5)
    assert zombies() == 0


DROPPING_CLIENT = """
import asyncio, sys
import aiohttp

async def type_into(ws):
    await ws.send_bytes(b"sleep 5151.3 & bash\\n")
    while True:  # a person typing: the session stays busy until this process is killed
        await asyncio.sleep(0.2)
        await ws.send_bytes(b"")

async def main(url, count):
    session = aiohttp.ClientSession()
    typing = []
    for _ in range(count):
        ws = await session.ws_connect(url)
        typing.append(asyncio.ensure_future(type_into(ws)))
    print("sent", flush=True)
    await asyncio.gather(*typing)

asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""


async def test_pty_dropped_clients_leave_nothing(make_harness: MakeHarness) -> None:
    """docs/security.md test 30, scaled: 50 sessions running ``sleep & bash``, then the client is
    SIGKILLed (no close frame) -> after idle timeout + 2 s, 0 extra processes, 0 zombies."""
    h = await make_harness(pty_idle_s=1, max_sessions=64)
    before = procs.count_tree(os.getpid())
    client = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        DROPPING_CLIENT,
        str(h.client.make_url("/api/pty")),
        "50",
        stdout=asyncio.subprocess.PIPE,
    )
    assert client.stdout is not None
    try:
        async with asyncio.timeout(20):
            assert await client.stdout.readline() == b"sent\n"
        await wait_for(lambda: len(marked("5151.3")) == 50, 10)
        assert h.limiter.in_use == 50
    finally:
        client.kill()  # the drop itself, and the clean-up if the set-up failed
        async with asyncio.timeout(5):
            await client.wait()
    gone = await wait_for(lambda: not marked("5151.3") and h.limiter.in_use == 0, 1 + 2)
    after = procs.count_tree(os.getpid())
    print(f"pty 50 dropped clients: all sessions ended {gone:.3f} s after the kill, tree {after}")
    assert after == before == procs.TreeCount(live=0, zombies=0)


async def test_pty_service_close_ends_every_session(make_harness: MakeHarness) -> None:
    h = await make_harness()
    async with h.client.ws_connect("/api/pty") as ws:
        await ws.send_bytes(b"sleep 5151.4 &\n")
        await wait_for(lambda: len(marked("5151.4")) == 1, 6)
        await h.service.close()
        assert not marked("5151.4")
        async with asyncio.timeout(3):
            while (msg := await ws.receive()).type is WSMsgType.BINARY:
                pass
        assert msg.type is WSMsgType.CLOSE
        assert msg.extra == "daemon shutting down"


async def test_pty_and_exec_share_one_cap(aiohttp_client: AiohttpClient, tmp_path: Path) -> None:
    """One limiter for both services: with the cap at 1, an open terminal makes exec a 429."""
    settings = DaemonSettings(run_dir=tmp_path, token_file=tmp_path / "token", max_sessions=1)
    limiter = SessionLimiter(settings.max_sessions)
    app = web.Application()
    app.router.add_get("/api/pty", PtyService(settings, limiter).handle)
    app.router.add_post("/api/exec", ExecService(settings, limiter).handle)
    client = await aiohttp_client(app)
    exec_body = {"argv": ["true"], "timeout_s": 5}
    async with client.ws_connect("/api/pty"):
        assert (await client.post("/api/exec", json=exec_body)).status == 429
    assert (await client.post("/api/exec", json=exec_body)).status == 200


SETSID_CLIENT = """
import asyncio, sys
import aiohttp

async def main(url):
    session = aiohttp.ClientSession()
    ws = await session.ws_connect(url)
    # a child in a session of its own; one that also forks away from the shell; and one that
    # forks away and drops its environment (the session cookie with it)
    await ws.send_bytes(
        b"setsid sleep MARK & setsid -f sleep MARK; (setsid env -i /bin/sleep MARK &);"
        b" echo started\\n"
    )
    seen = b""
    while b"started" not in seen.replace(b"echo started", b""):
        seen += (await ws.receive()).data
    print("sent", flush=True)
    await asyncio.sleep(3600)  # until killed: no close frame, the connection just drops

asyncio.run(main(sys.argv[1]))
"""


def sleeping(mark: str) -> int:
    """How many processes are marked, if every one is already ``sleep`` (no setsid on its
    way); 0 while one is not."""
    procs_ = marked(mark)
    try:
        return len(procs_) if all(proc.name() == "sleep" for proc in procs_) else 0
    except psutil.NoSuchProcess:
        return 0


async def test_pty_setsid_children_are_gone_after_the_connection_drops(
    make_harness: MakeHarness,
) -> None:
    """Issue 11 item 9: a pty's setsid child survived a dropped connection. The client is
    SIGKILLed (no close frame) and the idle timeout is far away: the drop alone ends it all."""
    h = await make_harness(pty_idle_s=300)
    mark = f"5151.{os.getpid()}{secrets.randbelow(10**6)}"  # this test's own sleepers only
    client = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        SETSID_CLIENT.replace("MARK", mark),
        str(h.client.make_url("/api/pty")),
        stdout=asyncio.subprocess.PIPE,
    )
    assert client.stdout is not None
    try:
        async with asyncio.timeout(20):
            assert await client.stdout.readline() == b"sent\n"
        # setsid is itself marked until it execs sleep, and still in the shell's session
        # before it calls setsid(): wait for the three sleeps themselves
        await wait_for(lambda: sleeping(mark) == 3, 6)
        sessions = {p.pid: os.getsid(p.pid) for p in marked(mark)}
        assert len(set(sessions.values())) == 3  # each in a session of its own
    finally:
        client.kill()
        async with asyncio.timeout(5):
            await client.wait()
    gone = await wait_for(lambda: not marked(mark) and h.limiter.in_use == 0, 5)
    print(f"pty dropped: the 3 setsid children gone {gone:.3f} s after the client was killed")

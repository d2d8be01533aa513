"""The typed daemon client against a real ``srez-daemon`` (launched by the local backend).

Every route once, the error families, the token kept out of URLs and logs, and the live stream
across forced reconnects: a TCP proxy between client and daemon cuts the WebSocket mid-backlog,
and every dialog entry must still arrive exactly once, in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from backend_contract import spec_for

from srez_client.backends.local.backend import LocalBackend
from srez_client.daemon_client.api import DaemonClient, ReconnectPolicy, pty_resize
from srez_client.daemon_client.follow import attach_plain, render_frame
from srez_client.errors import (
    DaemonAuthError,
    DaemonConflictError,
    DaemonNotFoundError,
    DaemonUnreachableError,
)
from srez_daemon.protocol import SessionStarted
from srez_daemon.protocol.api import DialogFrame, PhaseFrame


@dataclass(frozen=True)
class Daemon:
    url: str
    token: str
    run_id: str
    state: Path


def _launch(tmp: Path, *, keep: bool = True) -> Daemon:
    async def go() -> Daemon:
        backend = LocalBackend(tmp / "state")
        handle = await backend.launch(spec_for(tmp / "results"))
        await backend.wait(handle, 60)
        return Daemon(
            await backend.endpoint(handle),
            await backend.token(handle),
            handle.run_id,
            tmp / "state",
        )

    return asyncio.run(go())


def _remove(daemon: Daemon) -> None:
    async def go() -> None:
        backend = LocalBackend(daemon.state)
        await backend.remove(await backend.get(daemon.run_id))

    asyncio.run(go())


@pytest.fixture(scope="module")
def done_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """A finished run whose daemon keeps serving (shared by the read-only tests)."""
    daemon = _launch(tmp_path_factory.mktemp("api"))
    yield daemon
    _remove(daemon)


@pytest.fixture
def agent_phase_run(tmp_path: Path) -> Iterator[Daemon]:
    """A run stuck in its agent phase: its agent never talks to the daemon."""
    sleeper = spec_for(tmp_path / "results", agent="cmd:sleeper").model_copy(
        update={"agent_cmd": ("/bin/sleep", "60")}
    )

    async def go() -> Daemon:
        backend = LocalBackend(tmp_path / "state")
        handle = await backend.launch(sleeper)
        return Daemon(
            await backend.endpoint(handle),
            await backend.token(handle),
            handle.run_id,
            tmp_path / "state",
        )

    daemon = asyncio.run(go())
    yield daemon
    _remove(daemon)


async def test_every_read_route_answers_with_its_model(done_run: Daemon) -> None:
    async with DaemonClient(done_run.url, done_run.token) as client:
        health = await client.health()
        assert health.phase == "done" and health.status == "ok"
        info = await client.verify()
        assert info.run_id == done_run.run_id and info.phase == "done"
        page = await client.dialog(0)
        assert isinstance(page.entries[0], SessionStarted)
        assert (await client.dialog(page.next_offset)).entries == []
        two = await client.dialog(0, limit=2)
        assert len(two.entries) == 2 and two.next_offset < page.next_offset
        diff = await client.diff()
        files = await client.files()
        assert all(f.path in diff for f in files.files)
        assert (await client.reference()).startswith(("---", "diff", ""))
        similarity = await client.similarity()
        assert 0 <= similarity.similarity <= 1
        grade = await client.grade()
        assert grade["task_id"] == "sre-001"
        logs = "".join([chunk async for chunk in client.logs("daemon")])
        assert "listening" in logs
        document = await client.openapi()
        assert str(document["openapi"]).startswith("3.1")
        assert "/api/ws" in document["paths"]  # type: ignore[operator]


async def test_exec_runs_a_command_once_per_request_id(done_run: Daemon, tmp_path: Path) -> None:
    marker = tmp_path / "count"
    argv = ["/bin/sh", "-c", f"echo x >> {marker}; echo out; echo err >&2; exit 3"]
    async with DaemonClient(done_run.url, done_run.token, admin=True) as client:
        first = await client.exec(argv, 10, request_id="req-1")
        again = await client.exec(argv, 10, request_id="req-1")
        fresh = await client.exec(argv, 10)
        timed = await client.exec(["/bin/sleep", "5"], 0.3)
    assert (first.exit_code, first.stdout, first.stderr) == (3, "out\n", "err\n")
    assert again == first
    assert fresh.exit_code == 3
    assert marker.read_text() == "x\nx\n"  # the retry with req-1 did not run it again
    assert timed.exit_code is None or timed.timed_out
    assert timed.duration_s < 5  # the 0.3 s timeout cut the 5 s sleep short


async def test_pty_runs_a_shell(done_run: Daemon) -> None:
    async with DaemonClient(done_run.url, done_run.token, admin=True) as client:
        ws = await client.pty(100, 30)
        try:
            await ws.send_str(pty_resize(120, 40))
            await ws.send_bytes(b"stty size; echo mark$((6*7))\n")
            seen = b""
            async with asyncio.timeout(10):
                while b"mark42" not in seen or b"40 120" not in seen:
                    msg = await ws.receive()
                    assert msg.type == aiohttp.WSMsgType.BINARY, msg
                    seen += msg.data
        finally:
            await ws.close()


async def test_errors_map_to_their_families(done_run: Daemon, agent_phase_run: Daemon) -> None:
    async with DaemonClient(done_run.url, "wrong-token") as bad:
        with pytest.raises(DaemonAuthError) as caught:
            await bad.run()
        assert caught.value.status == 401 and caught.value.code == "unauthorized"
        with pytest.raises(DaemonAuthError):
            async for _ in bad.stream():
                pass
        assert (await bad.health()).phase == "done"  # health needs no token
    async with DaemonClient(agent_phase_run.url, agent_phase_run.token) as client:
        assert (await client.run()).phase == "agent"
        with pytest.raises(DaemonConflictError) as conflict:
            await client.reference()
        assert conflict.value.code == "agent_phase" and conflict.value.status == 409
        with pytest.raises(DaemonConflictError):
            await client.similarity()
        with pytest.raises(DaemonNotFoundError) as missing:
            await client.grade()
        assert missing.value.code == "no_grade"
        with pytest.raises(ValueError, match="unknown log"):
            async for _ in client.logs("secrets"):
                pass
    with pytest.raises(ValueError, match="whitespace"):
        DaemonClient(done_run.url, "two words")


async def test_stopping_in_the_agent_phase_still_writes_the_summary(
    agent_phase_run: Daemon,
) -> None:
    backend = LocalBackend(agent_phase_run.state)
    handle = await backend.get(agent_phase_run.run_id)
    assert not handle.finished
    await backend.stop(handle)
    after = await backend.get(agent_phase_run.run_id)
    assert after.status == "exited" and after.finished


async def test_the_token_never_reaches_a_url_or_a_log(
    done_run: Daemon, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    seen_urls: list[str] = []

    async def on_request_start(
        _s: object, _c: object, params: aiohttp.TraceRequestStartParams
    ) -> None:
        seen_urls.append(str(params.url))

    trace = aiohttp.TraceConfig()
    trace.on_request_start.append(on_request_start)
    async with aiohttp.ClientSession(trace_configs=[trace]) as session:
        client = DaemonClient(done_run.url, done_run.token, session=session)
        await client.run()
        await client.dialog(0)
        async for _ in client.stream():
            pass
        assert done_run.token not in repr(client)
    assert seen_urls and not [u for u in seen_urls if done_run.token in u]
    assert done_run.token not in caplog.text
    run_dir = done_run.state / "live" / done_run.run_id
    for path in (run_dir / "run").rglob("*"):
        if path.is_file():
            assert done_run.token.encode() not in path.read_bytes(), path
    assert done_run.token.encode() not in (run_dir / "daemon.out").read_bytes()


# ------------------------------------------------------------------ the stream


class CuttingProxy:
    """A TCP proxy on 127.0.0.1 that aborts its first connections after some bytes from the daemon."""

    def __init__(self, target_port: int, cuts: list[int]) -> None:
        self.target_port = target_port
        self.cuts = list(cuts)
        self.connections = 0
        self.server: asyncio.Server | None = None
        self.writers: list[asyncio.StreamWriter] = []

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        # the pumps of a connection still open end with the test's loop: close their sockets now,
        # or a writer collected after the loop is gone warns (a ResourceWarning in a later test)
        for writer in self.writers:
            writer.transport.abort()
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        self.connections += 1
        limit = self.cuts.pop(0) if self.cuts else None
        up_r, up_w = await asyncio.open_connection("127.0.0.1", self.target_port)
        self.writers += [client_w, up_w]

        async def pump(
            src: asyncio.StreamReader, dst: asyncio.StreamWriter, budget: int | None
        ) -> None:
            sent = 0
            with contextlib.suppress(ConnectionError):
                while data := await src.read(512):
                    if budget is not None and sent + len(data) > budget:
                        dst.write(data[: budget - sent])
                        await dst.drain()
                        client_w.transport.abort()  # a dropped connection, no close frame
                        up_w.transport.abort()
                        return
                    sent += len(data)
                    dst.write(data)
                    await dst.drain()
            with contextlib.suppress(ConnectionError, RuntimeError):
                dst.close()

        await asyncio.gather(pump(client_r, up_w, None), pump(up_r, client_w, limit))


async def test_stream_survives_forced_reconnects_exactly_once(done_run: Daemon) -> None:
    port = int(done_run.url.rsplit(":", 1)[1])
    async with DaemonClient(done_run.url, done_run.token) as direct:
        expected = [e.seq for e in (await direct.dialog(0)).entries]
        size = (await direct.dialog(0)).next_offset
    proxy = CuttingProxy(port, [size * 3 // 10] * 3)
    proxy_port = await proxy.start()
    try:
        policy = ReconnectPolicy(initial_s=0.01, max_s=0.05, attempts=5)
        async with DaemonClient(
            f"http://127.0.0.1:{proxy_port}", done_run.token, reconnect=policy
        ) as client:
            frames = [f async for f in client.stream(0)]
    finally:
        await proxy.close()
    seqs = [f.entry.seq for f in frames if isinstance(f, DialogFrame)]
    assert seqs == expected
    assert proxy.connections >= 3
    assert any(isinstance(f, PhaseFrame) and f.phase == "done" for f in frames)


async def test_stream_resumes_from_an_offset_and_attach_renders_plain_text(
    done_run: Daemon,
) -> None:
    async with DaemonClient(done_run.url, done_run.token) as client:
        page = await client.dialog(0, limit=3)
        rest = [f async for f in client.stream(page.next_offset)]
        total = (await client.dialog(0)).entries
        dialog_frames = [f for f in rest if isinstance(f, DialogFrame)]
        assert [f.entry.seq for f in dialog_frames] == [e.seq for e in total[3:]]
        assert all(render_frame(f) for f in dialog_frames)

        class Out:
            text = ""

            def write(self, s: str) -> int:
                self.text += s
                return len(s)

            def flush(self) -> None:
                pass

        out = Out()
        shown = await attach_plain(client, out, offset=0)  # type: ignore[arg-type]
        assert shown == len(total)
        assert "session started" in out.text and "== phase: done" in out.text
        assert "\x1b" not in out.text and "\r" not in out.text


# ------------------------------------------------------------------ the stream's own logic


def done_frame(end_offset: int) -> str:
    """The final phase frame, stating where the dialog ends."""
    return f'{{"t": "phase", "phase": "done", "end_offset": {end_offset}}}'


def fake_daemon(connections: list[list[str]], end_offset: int) -> tuple[web.Application, list[str]]:
    """A daemon stand-in: connection i sends the frames ``connections[i]`` then drops."""
    served: list[str] = []

    async def ws_handler(request: web.Request) -> web.WebSocketResponse:
        served.append(request.query["offset"])
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        if not connections:  # like a daemon with keep: restate the phase, then stay up
            await ws.send_str(done_frame(end_offset))
            await asyncio.sleep(30)
            return ws
        for frame in connections.pop(0):
            await ws.send_str(frame)
        assert request.transport is not None
        request.transport.abort()  # dropped, no close frame
        return ws

    app = web.Application()
    app.router.add_get("/api/ws", ws_handler)
    app.router.add_get("/api/run", run_info)
    return app, served


async def run_info(request: web.Request) -> web.Response:
    """``/api/run`` as a real daemon answers it: 401 unless the token is ``t``."""
    if request.headers.get("Authorization") != "Bearer t":
        return web.json_response({"error": {"code": "unauthorized", "message": "no"}}, status=401)
    return web.json_response(
        {
            "run_id": "20260101T000000Z-0123abcd",
            "task": {"id": "sre-001", "title": "t", "difficulty": "easy", "brief": "b"},
            "model": "none",
            "agent": "random",
            "backend": "local",
            "phase": "agent",
            "steps_used": 1,
            "step_budget": 30,
            "started_at": "2026-01-01T00:00:00Z",
        }
    )


def frame(offset: int, seq: int) -> str:
    entry = f'{{"seq": {seq}, "ts": "2025-03-14T10:00:00Z", "type": "thinking", "text": "t{seq}"}}'
    return f'{{"t": "dialog", "offset": {offset}, "next_offset": {offset + 10}, "entry": {entry}}}'


async def test_stream_drops_frames_a_daemon_repeats(aiohttp_server: object) -> None:
    done = done_frame(30)
    app, served = fake_daemon([[frame(0, 0), frame(10, 1)], [frame(10, 1), frame(20, 2), done]], 30)
    server = await aiohttp_server(app)  # type: ignore[operator]
    policy = ReconnectPolicy(initial_s=0.01, attempts=3)
    async with DaemonClient(str(server.make_url("")), "t", reconnect=policy) as client:
        seqs = [f.entry.seq async for f in client.stream() if isinstance(f, DialogFrame)]
    assert seqs == [0, 1, 2]
    assert served[:2] == ["0", "20"]


async def test_stream_ends_at_the_offset_the_final_phase_states(aiohttp_server: object) -> None:
    """A daemon kept up after the run (keep) holds the connection open: the stream ends once it
    delivered every entry up to the ``end_offset`` of the ``done`` frame, asking nothing more."""

    async def kept(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        for data in (frame(0, 0), done_frame(20), frame(10, 1)):
            await ws.send_str(data)
        async for _msg in ws:  # up until the viewer closes, as a daemon serves it
            pass
        return ws

    app = web.Application()
    app.router.add_get("/api/ws", kept)
    server = await aiohttp_server(app)  # type: ignore[operator]
    async with DaemonClient(str(server.make_url("")), "t") as client:
        async with asyncio.timeout(5):
            frames = [f async for f in client.stream()]
    assert [f.entry.seq for f in frames if isinstance(f, DialogFrame)] == [0, 1]
    assert isinstance(frames[-1], DialogFrame)


async def test_stream_never_reconnects_to_an_impostor(aiohttp_server: object) -> None:
    """The daemon drops the stream and its port now answers anyone (an impostor's sign): the
    reconnect proves the daemon again, refuses it, and no frame of the impostor's arrives."""
    connections = [[frame(0, 0)]]
    app, served = fake_daemon(connections, 10)
    impostor = [False]

    @web.middleware
    async def takeover(request: web.Request, handler: Any) -> web.StreamResponse:
        if impostor[0] and request.path == "/api/run":
            return await run_info(request.clone(headers={"Authorization": "Bearer t"}))
        if request.path == "/api/ws":
            impostor[0] = True  # after this connection drops, the port has changed hands
            connections.append([frame(10, 666)])
        return await handler(request)  # type: ignore[no-any-return]

    app.middlewares.append(takeover)
    server = await aiohttp_server(app)  # type: ignore[operator]
    policy = ReconnectPolicy(initial_s=0.01, attempts=3)
    seqs: list[int] = []

    async def read(client: DaemonClient) -> None:
        async for f in client.stream():
            if isinstance(f, DialogFrame):
                seqs.append(f.entry.seq)

    async with DaemonClient(str(server.make_url("")), "t", reconnect=policy) as client:
        with pytest.raises(DaemonAuthError, match="without a token"):
            await read(client)
    assert seqs == [0]
    assert served == ["0"]


async def test_the_identity_check_after_the_end_is_bounded_like_the_connection(
    aiohttp_server: object,
) -> None:
    """The run is over (phase done) when the stream drops, and the port now accepts requests
    and never answers (a daemon shutting down): the stream ends after the short after-the-end
    bound, not the client's 30 s timeout."""
    app, served = fake_daemon([[frame(0, 0), done_frame(30)]], 30)
    hung = asyncio.Event()

    @web.middleware
    async def hang_after_drop(request: web.Request, handler: Any) -> web.StreamResponse:
        if served and request.path == "/api/run":
            hung.set()
            await asyncio.sleep(3600)
        return await handler(request)  # type: ignore[no-any-return]

    app.middlewares.append(hang_after_drop)
    server = await aiohttp_server(app)  # type: ignore[operator]
    seqs: list[int] = []
    async with DaemonClient(str(server.make_url("")), "t") as client:
        async with asyncio.timeout(10):
            async for f in client.stream():
                if isinstance(f, DialogFrame):
                    seqs.append(f.entry.seq)
    assert seqs == [0] and hung.is_set()


async def test_stream_gives_up_after_its_reconnect_budget() -> None:
    policy = ReconnectPolicy(initial_s=0.01, max_s=0.02, attempts=3)
    async with DaemonClient("http://127.0.0.1:9", "t", reconnect=policy) as client:
        loop = asyncio.get_running_loop()
        began = loop.time()
        with pytest.raises(DaemonUnreachableError, match="after 3 reconnects"):
            async for _ in client.stream():
                pass
        assert loop.time() - began < 2


async def test_stream_stops_when_told(aiohttp_server: object) -> None:
    async def hang(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_str(frame(0, 0))
        await asyncio.sleep(30)
        return ws

    app = web.Application()
    app.router.add_get("/api/ws", hang)
    server = await aiohttp_server(app)  # type: ignore[operator]
    stop = asyncio.Event()
    async with DaemonClient(str(server.make_url("")), "t") as client:
        got = []
        async with asyncio.timeout(5):
            async for f in client.stream(stop=stop):
                got.append(f)
                stop.set()
    assert len(got) == 1


def test_daemon_client_never_shows_its_token() -> None:
    client = DaemonClient("http://127.0.0.1:1/", "s3cret-token")
    assert "s3cret" not in repr(client) and client.base_url == "http://127.0.0.1:1"
    assert os.environ.get("SREZ_TOKEN") is None


async def test_a_viewer_never_holds_a_finished_daemon_up(tmp_path: Path) -> None:
    """A stream attached from launch to a run without keep ends, and lets its daemon exit, within
    5 s of the ``done`` phase (measured: about 60 ms and 220 ms; the bound is a loaded machine's)."""
    backend = LocalBackend(tmp_path / "state")
    spec = spec_for(tmp_path / "results").model_copy(update={"keep": False})
    handle = await backend.launch(spec)
    loop = asyncio.get_running_loop()
    done_at = None
    frames = []
    async with DaemonClient(await backend.endpoint(handle), await backend.token(handle)) as client:
        async with asyncio.timeout(30):
            async for f in client.stream():
                frames.append(f)
                if isinstance(f, PhaseFrame) and f.phase == "done":
                    done_at = loop.time()
    assert done_at is not None
    assert loop.time() - done_at < 5
    while (await backend.get(handle.run_id)).status == "running":
        assert loop.time() - done_at < 5, "the daemon is still up 5 s after done"
        await asyncio.sleep(0.02)
    kinds = [f.entry.type for f in frames if isinstance(f, DialogFrame)]
    assert kinds[0] == "session_started" and kinds[-1] == "session_completed"
    await backend.remove(handle)

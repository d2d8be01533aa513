"""StreamHub over real sockets: backlog and live frames, resume by offset, a malformed flood
(docs/security.md §4.4 test 23), slow viewers, events, heartbeats and shutdown."""

from __future__ import annotations

import asyncio
import random
import socket
import statistics
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import ClientWebSocketResponse, WSMsgType, web
from aiohttp.test_utils import TestClient
from dialogkit import TS, append, line
from pytest_aiohttp import AiohttpClient

from srez_core.aio import spawn
from srez_daemon.protocol import Thinking
from srez_daemon.protocol.api import PhaseFrame
from srez_daemon.record.storage import DialogWriter
from srez_daemon.stream import CLOSE_GOING_AWAY, CLOSE_RESUME, StreamHub
from srez_daemon.tail import DialogTail

Frame = dict[str, Any]


def think(text: str) -> Callable[[int, str], Thinking]:
    return lambda seq, ts: Thinking(seq=seq, ts=ts, text=text)


@dataclass
class Served:
    path: Path
    tail: DialogTail
    hub: StreamHub
    client: TestClient[web.Request, web.Application]

    async def ws(self, offset: int = 0) -> ClientWebSocketResponse:
        return await self.client.ws_connect(f"/api/ws?offset={offset}")


Serve = Callable[..., Awaitable[Served]]


@pytest.fixture
async def serve(tmp_path: Path, aiohttp_client: AiohttpClient) -> AsyncIterator[Serve]:
    """Builds a tiny app routing /api/ws and /api/dialog to a hub over a tail in tmp_path."""
    tails: list[DialogTail] = []

    async def make(**hub_options: Any) -> Served:
        path = tmp_path / "dialog.jsonl"
        tail = DialogTail(path, safety_poll_s=0.2)
        await tail.start()
        tails.append(tail)
        hub = StreamHub(tail, **hub_options)
        app = web.Application()
        app.router.add_get("/api/ws", hub.handle_ws)
        app.router.add_get("/api/dialog", hub.handle_dialog_page)

        async def close_hub(_app: web.Application) -> None:
            await hub.close()

        app.on_shutdown.append(close_hub)
        return Served(path, tail, hub, await aiohttp_client(app))

    yield make
    for tail in tails:
        await tail.stop()


async def receive(
    ws: ClientWebSocketResponse,
    count: int,
    *,
    kinds: tuple[str, ...] = ("dialog",),
    seconds: float = 10,
) -> list[Frame]:
    """The next ``count`` frames of the given kinds (others are skipped)."""
    out: list[Frame] = []
    async with asyncio.timeout(seconds):
        while len(out) < count:
            msg = await ws.receive()
            assert msg.type is WSMsgType.TEXT, f"the stream ended: {msg}"
            frame = orjson.loads(msg.data)
            if frame["t"] in kinds:
                out.append(frame)
    return out


def assert_contiguous(frames: list[Frame], start: int = 0) -> None:
    offsets = [start] + [f["next_offset"] for f in frames[:-1]]
    assert [f["offset"] for f in frames] == offsets


async def never_reading_viewer(served: Served) -> socket.socket:
    """A viewer that completes the upgrade and then never reads a byte (tiny receive buffer)."""
    port = served.client.server.port
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    await loop.sock_connect(sock, ("127.0.0.1", port))
    request = (
        f"GET /api/ws?offset=0 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
        "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        "Sec-WebSocket-Version: 13\r\n\r\n"
    )
    await loop.sock_sendall(sock, request.encode())
    head = b""
    async with asyncio.timeout(5):
        while not head.endswith(b"\r\n\r\n"):
            head += await loop.sock_recv(sock, 1)
    assert head.startswith(b"HTTP/1.1 101")
    return sock


async def test_stream_backlog_then_live_to_two_viewers(serve: Serve) -> None:
    """Figure: 50 entries before connecting and 50 after: each of 2 viewers gets 100 frames in
    order with contiguous offsets, and both get identical sequences."""
    served = await serve()
    with DialogWriter(served.path) as writer:
        for i in range(50):
            writer.append(think(f"before {i}"))
        viewers = [await served.ws(0), await served.ws(0)]
        got = [await receive(ws, 50) for ws in viewers]
        for i in range(50):
            writer.append(think(f"after {i}"))
            await asyncio.sleep(0.001)
        for ws, frames in zip(viewers, got, strict=True):
            frames += await receive(ws, 50)
            await ws.close()
    print(f"\nbacklog+live: {len(got[0])} and {len(got[1])} frames, identical={got[0] == got[1]}")
    assert [f["entry"]["seq"] for f in got[0]] == list(range(100))
    assert_contiguous(got[0])
    assert got[0][-1]["next_offset"] == served.path.stat().st_size
    assert got[0] == got[1]


async def test_stream_viewers_joining_mid_flood_miss_nothing(serve: Serve) -> None:
    """Figure: 6 viewers joining at different moments while 2,000 entries stream in each get
    2,000/2,000 frames, contiguous, 0 duplicates (the backlog-to-live hand-over)."""
    served = await serve()
    viewers: list[ClientWebSocketResponse] = []
    readers: list[asyncio.Task[list[Frame]]] = []
    for batch in range(20):
        append(served.path, b"".join(line(i) for i in range(100 * batch, 100 * batch + 100)))
        if batch % 4 == 0 or batch == 19:
            # Each viewer reads from the moment it joins, as a real one does: one left unread
            # through the whole flood could lag past max_queue and be told to resume instead.
            viewers.append(await served.ws(0))
            readers.append(spawn(receive(viewers[-1], 2000, seconds=30), name=f"viewer-{batch}"))
        await asyncio.sleep(0.002)
    got = await asyncio.gather(*readers)
    for ws in viewers:
        await ws.close()
    print(f"\njoin mid-flood: {[len(g) for g in got]} frames for {len(viewers)} viewers")
    for frames in got:
        assert [f["entry"]["seq"] for f in frames] == list(range(2000))
        assert_contiguous(frames)


async def test_stream_resume_after_the_viewer_disconnects(serve: Serve) -> None:
    """Figure: disconnect after 30 frames, reconnect with the last next_offset: frames 31-100
    with 0 gaps and 0 duplicates."""
    served = await serve()
    append(served.path, b"".join(line(i) for i in range(60)))
    ws = await served.ws(0)
    first = await receive(ws, 30)
    await ws.close()
    append(served.path, b"".join(line(i) for i in range(60, 100)))
    ws = await served.ws(first[-1]["next_offset"])
    rest = await receive(ws, 70)
    await ws.close()
    seqs = [f["entry"]["seq"] for f in first + rest]
    print(
        f"\nresume: {len(first)} + {len(rest)} frames, gaps/duplicates: {seqs != list(range(100))}"
    )
    assert seqs == list(range(100))
    assert_contiguous(first + rest)


async def test_stream_resume_after_the_server_closes_a_lagging_viewer(serve: Serve) -> None:
    """Figure: a viewer that stops reading after 30 frames is closed by the server with
    CLOSE_RESUME; it reads what it had, reconnects from its last next_offset and ends with all
    450 entries, 0 gaps, 0 duplicates."""
    served = await serve(max_queue=8, close_timeout_s=10)
    append(served.path, b"".join(line(i) for i in range(50)))
    ws = await served.ws(0)
    frames = await receive(ws, 30)  # then it stops reading
    big = "z" * 32_000
    for i in range(50, 450):
        append(served.path, line(i, big))
        await asyncio.sleep(0)
    for _ in range(500):
        if served.hub.viewers == 0:
            break
        await asyncio.sleep(0.01)
    assert served.hub.viewers == 0, "the lagging viewer was not dropped"
    close_code = None
    async with asyncio.timeout(10):
        async for msg in ws:
            if msg.type is WSMsgType.TEXT:
                frames.append(orjson.loads(msg.data))
        close_code = ws.close_code
    assert close_code == CLOSE_RESUME
    got_before = len(frames)
    ws = await served.ws(frames[-1]["next_offset"])
    frames += await receive(ws, 450 - len(frames))
    await ws.close()
    seqs = [f["entry"]["seq"] for f in frames]
    print(f"\nforced close: code {close_code} after {got_before} frames; {len(frames)} in all")
    assert seqs == list(range(450))
    assert_contiguous(frames)


# Each makes parse_line answer with an error entry; duplicate keys are an error only when the
# duplicate makes the entry invalid (orjson keeps the last value, as most JSON readers do).
MALFORMED = [
    b"{not json",
    b'{"seq": 1, "text": "\xff\xfe"}',
    b'{"seq": 1, "text": "a\x00b"}',
    b"[" * 100_000 + b"]" * 100_000,
    b'{"seq": 1, "ts": "' + TS.encode() + b'", "type": "usage", "tokens": {}, "cost_usd": NaN}',
    b'{"seq": 1, "x": Infinity}',
    b'{"seq": 1e999999}',
    b'{"seq": 1, "ts": "' + TS.encode() + b'", "type": "thinking", "type": "x", "text": "dup"}',
]


async def test_stream_survives_a_malformed_flood(serve: Serve) -> None:
    """docs/security.md test 23, at the plan's size: 10,000 malformed lines interleaved with 10,000
    valid ones give 10,000 error entries with their line number and byte offset, 10,000/10,000 valid
    entries in order, and a /api/dialog probe every 100 ms never fails (about 2 s)."""
    n = 10_000
    served = await serve()
    lines: list[bytes] = []
    for i in range(n):
        lines += [line(i), MALFORMED[i % len(MALFORMED)] + b"\n"]
    starts = [0]
    for raw in lines:
        starts.append(starts[-1] + len(raw))
    ws = await served.ws(0)
    probes: list[float] = []
    failures = 0
    done = asyncio.Event()

    async def probe() -> None:
        nonlocal failures
        while not done.is_set():
            started = time.perf_counter()
            try:
                async with asyncio.timeout(2):
                    r = await served.client.get("/api/dialog?offset=0&limit=1")
                    ok = r.status == 200 and "entries" in await r.json()
            except (TimeoutError, aiohttp.ClientError):
                ok = False
            failures += not ok
            probes.append(time.perf_counter() - started)
            await asyncio.sleep(0.1)

    prober = spawn(probe(), name="health-probe")
    for batch in range(0, len(lines), 200):
        append(served.path, b"".join(lines[batch : batch + 200]))
        await asyncio.sleep(0.005)
    frames = await receive(ws, 2 * n, seconds=120)
    await asyncio.sleep(0.25)  # at least two more probes after the last frame
    done.set()
    await prober
    await ws.close()
    errors = [f for f in frames if f["entry"]["type"] == "error"]
    valid = [f for f in frames if f["entry"]["type"] != "error"]
    print(
        f"\nmalformed flood: {len(errors)} error entries, {len(valid)}/{n} valid in order,"
        f" {len(probes)} probes, {failures} failed, slowest {1000 * max(probes):.1f} ms"
    )
    assert failures == 0 and len(probes) >= 3
    assert len(errors) == n
    for k, frame in enumerate(errors):
        entry = frame["entry"]
        assert (entry["line"], entry["offset"]) == (2 * k + 2, starts[2 * k + 1])
        assert frame["offset"] == entry["offset"]
    assert [f["entry"]["seq"] for f in valid] == list(range(n))
    paged: list[Frame] = []
    offset = 0
    while offset < served.tail.end_offset:
        page = await (await served.client.get(f"/api/dialog?offset={offset}&limit=1000")).json()
        paged += page["entries"]
        offset = page["next_offset"]
    assert paged == [f["entry"] for f in frames]


async def test_stream_append_to_viewer_latency(serve: Serve) -> None:
    """Figure (printed, not asserted): append-to-viewer latency p50/p99 over 200 appends."""
    served = await serve()
    rng = random.Random(7)
    latencies: list[float] = []
    with DialogWriter(served.path) as writer:
        ws = await served.ws(0)
        for i in range(200):
            started = time.perf_counter()
            writer.append(think(f"entry {i}"))
            (frame,) = await receive(ws, 1)
            latencies.append(1000 * (time.perf_counter() - started))
            assert frame["entry"]["seq"] == i
            await asyncio.sleep(rng.uniform(0, 0.005))
        await ws.close()
    latencies.sort()
    p50, p99 = statistics.median(latencies), latencies[int(0.99 * (len(latencies) - 1))]
    print(f"\nappend-to-viewer latency over 200 appends: p50 {p50:.2f} ms, p99 {p99:.2f} ms")


async def test_stream_slow_viewer_does_not_delay_a_fast_one(serve: Serve) -> None:
    """Figure: with a viewer that never reads, a fast viewer still gets 300/300 frames (latency
    printed); the slow one is dropped, and the hub keeps 1 viewer."""
    served = await serve(max_queue=16, close_timeout_s=1)
    slow = await never_reading_viewer(served)
    fast = await served.ws(0)
    text = "w" * 16_000
    latencies: list[float] = []
    try:
        for i in range(300):
            started = time.perf_counter()
            append(served.path, line(i, text))
            (frame,) = await receive(fast, 1)
            latencies.append(1000 * (time.perf_counter() - started))
            assert frame["entry"]["seq"] == i
        remaining = served.hub.viewers
    finally:
        slow.close()
        await fast.close()
    latencies.sort()
    print(
        f"\nslow viewer: fast viewer p50 {statistics.median(latencies):.2f} ms,"
        f" p99 {latencies[int(0.99 * (len(latencies) - 1))]:.2f} ms,"
        f" max {latencies[-1]:.2f} ms; viewers left {remaining}"
    )
    assert remaining == 1


async def test_stream_sends_events_and_heartbeats(serve: Serve) -> None:
    """The latest phase reaches a new viewer right after its backlog; later events and
    heartbeats (with the dialog's end offset) arrive live."""
    served = await serve(heartbeat_s=0.2)
    append(served.path, line(0) + line(1))
    served.hub.publish(PhaseFrame(phase="starting"))
    served.hub.publish(PhaseFrame(phase="agent"))
    ws = await served.ws(0)
    first = await receive(ws, 3, kinds=("dialog", "phase"))
    assert [f["t"] for f in first] == ["dialog", "dialog", "phase"]
    assert first[2]["phase"] == "agent"
    served.hub.publish(PhaseFrame(phase="sealed"))
    (phase,) = await receive(ws, 1, kinds=("phase",))
    assert phase["phase"] == "sealed"
    (beat,) = await receive(ws, 1, kinds=("heartbeat",))
    assert beat["offset"] == served.path.stat().st_size
    await ws.close()


async def test_stream_rejects_bad_requests_before_the_upgrade(serve: Serve) -> None:
    """Figure: 7/7 malformed requests answered 400 bad_request."""
    served = await serve()
    paths = [
        "/api/ws?offset=-1",
        "/api/ws?offset=abc",
        "/api/ws?offset=1e3",
        "/api/ws?offset=0",  # not an upgrade
        "/api/dialog?offset=-5",
        "/api/dialog?limit=0",
        "/api/dialog?limit=10001",
    ]
    for path in paths:
        r = await served.client.get(path)
        body = await r.json()
        assert (r.status, body["error"]["code"]) == (400, "bad_request"), path
    with pytest.raises(aiohttp.WSServerHandshakeError) as e:
        await served.client.ws_connect("/api/ws?offset=x")
    assert e.value.status == 400


async def test_stream_close_sends_going_away(serve: Serve) -> None:
    """hub.close() closes every viewer with 1001; later upgrades get 503."""
    served = await serve()
    append(served.path, line(0))
    viewers = [await served.ws(0) for _ in range(3)]
    for ws in viewers:
        await receive(ws, 1)
    await served.hub.close()
    for ws in viewers:
        async with asyncio.timeout(5):
            msg = await ws.receive()
        assert (msg.type, msg.data) == (WSMsgType.CLOSE, CLOSE_GOING_AWAY)
    with pytest.raises(aiohttp.WSServerHandshakeError) as e:
        await served.ws(0)
    assert e.value.status == 503

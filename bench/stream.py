"""Live-stream figures for ``make bench`` (docs/design.md §11), measured in this process.

A :class:`DialogTail` and a :class:`StreamHub` are served by a real aiohttp server on 127.0.0.1;
the viewers connect over loopback. Entries are appended as the daemon's ``DialogWriter`` does
(one ``O_APPEND`` write, then fsync) from a worker thread, so the fsync does not hold the event
loop: a latency runs from just before the write to the moment a viewer holds the frame.

* ``latency``: p50/p99 over 200 appends at random 2-25 ms intervals, for a WebSocket viewer and
  for a 1-second polling reader of the same file (what viewers did before), with their ratio.
* ``idle``: the process's CPU time over wall time while one viewer is connected and nothing is
  written, in % of a core (target 0.5); and the same with the watchfiles change source at
  ``step=1`` for comparison.
* ``fanout``: 500 viewers while 50 entries/s are appended for 4 s: delivery p50/p99/max, the
  frames lost, duplicated or out of order (all must be 0), and the daemon's CPU per delivery. The
  viewers are minimal WebSocket clients in a child process (see :func:`_run_viewers`), so the
  figure is the daemon's and not the cost of 500 clients sharing its loop.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import random
import selectors
import socket
import statistics
import struct
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Final

import aiohttp
import orjson
from aiohttp import web

from srez_core.aio import spawn
from srez_core.clock import system_clock, utc_timestamp
from srez_daemon.file_watch import Watcher
from srez_daemon.protocol import Thinking, encode_entry
from srez_daemon.stream import StreamHub
from srez_daemon.tail import DialogTail

LATENCY_APPENDS: Final = 200
IDLE_S: Final = 5.0
IDLE_WATCHFILES_S: Final = 2.0
FANOUT_VIEWERS: Final = 500
FANOUT_RATE: Final = 50
FANOUT_S: Final = 4.0
TARGET_P99_MS: Final = 10.0
TARGET_IDLE_PCT: Final = 0.5
TARGET_FANOUT_P99_MS: Final = 25.0


async def stream_figures() -> dict[str, object]:
    """Runs the three measurements (about 20 s) and returns their figures."""
    with tempfile.TemporaryDirectory(prefix="srez-bench-stream-") as tmp:
        root = Path(tmp)
        return {
            "latency": await _latency(root / "latency.jsonl"),
            "idle": await _idle(root / "idle.jsonl"),
            "fanout": await _fanout(root / "fanout.jsonl"),
        }


@contextlib.asynccontextmanager
async def _served(path: Path, watcher: Watcher = "auto") -> AsyncIterator[tuple[StreamHub, int]]:
    """A tail and hub behind a real server on 127.0.0.1; yields the hub and the port."""
    tail = DialogTail(path, watcher=watcher)
    await tail.start()
    hub = StreamHub(tail)
    app = web.Application()
    app.router.add_get("/api/ws", hub.handle_ws)
    app.router.add_get("/api/dialog", hub.handle_dialog_page)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield hub, int(runner.addresses[0][1])
    finally:
        await hub.close()
        await runner.cleanup()
        await tail.stop()


class _Appender:
    """Appends numbered entries as :class:`DialogWriter` does (one ``O_APPEND`` write, then
    fsync), from a worker thread, and notes when each write began."""

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.started: dict[int, float] = {}
        self.call_ms: list[float] = []

    def _write(self, seq: int, data: bytes) -> None:
        began = self.started[seq] = time.perf_counter()
        os.write(self._fd, data)
        os.fsync(self._fd)
        self.call_ms.append(1000 * (time.perf_counter() - began))

    async def append(self) -> None:
        seq = len(self.started)
        ts = utc_timestamp(system_clock())
        data = encode_entry(Thinking(seq=seq, ts=ts, text=f"bench entry {seq} " + "x" * 200))
        await asyncio.get_running_loop().run_in_executor(None, self._write, seq, data)

    def close(self) -> None:
        os.close(self._fd)


async def _latency(path: Path) -> dict[str, object]:
    rng = random.Random(4263)
    appender = _Appender(path)
    ws_seen: dict[int, float] = {}
    poll_seen: dict[int, float] = {}
    complete = asyncio.Event()  # both readers have every entry
    async with _served(path) as (_hub, port), aiohttp.ClientSession() as session:
        ws = await session.ws_connect(f"http://127.0.0.1:{port}/api/ws?offset=0")

        async def view() -> None:
            async for msg in ws:
                frame = orjson.loads(msg.data)
                if frame["t"] == "dialog":
                    ws_seen[frame["entry"]["seq"]] = time.perf_counter()
                    if len(ws_seen) == len(poll_seen) == LATENCY_APPENDS:
                        complete.set()

        async def poll() -> None:  # what a 1 s polling viewer sees
            offset = 0
            while True:
                await asyncio.sleep(1.0)
                data = _read_from(path, offset)
                now = time.perf_counter()
                end = data.rfind(b"\n") + 1
                for raw in data[:end].splitlines():
                    poll_seen[orjson.loads(raw)["seq"]] = now
                offset += end
                if len(ws_seen) == len(poll_seen) == LATENCY_APPENDS:
                    complete.set()

        tasks = [spawn(view(), name="bench-viewer"), spawn(poll(), name="bench-poller")]
        for _ in range(LATENCY_APPENDS):
            await appender.append()
            await asyncio.sleep(rng.uniform(0.002, 0.025))
        async with asyncio.timeout(5):
            await complete.wait()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await ws.close()
    appender.close()
    ws_ms = _spread([1000 * (ws_seen[s] - t) for s, t in appender.started.items()])
    poll_ms = _spread([1000 * (poll_seen[s] - t) for s, t in appender.started.items()])
    return {
        "appends": LATENCY_APPENDS,
        "websocket": ws_ms,
        "polling_1s": poll_ms,
        "ratio_p50": round(poll_ms["p50_ms"] / ws_ms["p50_ms"], 1),
        "ratio_p99": round(poll_ms["p99_ms"] / ws_ms["p99_ms"], 1),
        "append_call": _spread(appender.call_ms),
        "target_p99_ms": TARGET_P99_MS,
    }


def _touch(path: Path) -> None:
    path.write_bytes(b"")


def _read_from(path: Path, offset: int) -> bytes:
    with path.open("rb") as f:
        f.seek(offset)
        return f.read()


async def _idle_pct(path: Path, seconds: float, watcher: Watcher) -> float:
    async with _served(path, watcher) as (_hub, port), aiohttp.ClientSession() as session:
        ws = await session.ws_connect(f"http://127.0.0.1:{port}/api/ws?offset=0")
        await asyncio.sleep(0.5)  # let start-up work settle
        cpu, wall = time.process_time(), time.perf_counter()
        await asyncio.sleep(seconds)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        await ws.close()
    return round(100 * cpu / wall, 3)


async def _idle(path: Path) -> dict[str, object]:
    _touch(path)
    default = await _idle_pct(path, IDLE_S, "auto")
    polled = await _idle_pct(path, IDLE_WATCHFILES_S, "watchfiles")
    return {
        "seconds": IDLE_S,
        "cpu_pct_of_core": default,
        "watchfiles_step1_cpu_pct_of_core": polled,
        "target_pct": TARGET_IDLE_PCT,
    }


def _frames(buf: bytearray) -> list[bytes]:
    """Take the complete (unmasked) WebSocket frames' text payloads off the front of ``buf``."""
    out: list[bytes] = []
    while len(buf) >= 2:
        size, start = buf[1] & 0x7F, 2
        if size == 126:
            size, start = (struct.unpack_from("!H", buf, 2)[0], 4) if len(buf) >= 4 else (-1, 0)
        elif size == 127:
            size, start = (struct.unpack_from("!Q", buf, 2)[0], 10) if len(buf) >= 10 else (-1, 0)
        if size < 0 or len(buf) < start + size:
            break
        if buf[0] & 0x0F == 0x1:
            out.append(bytes(buf[start : start + size]))
        del buf[: start + size]
    return out


def _run_viewers(port: int, viewers: int, count: int) -> None:
    """The fan-out's child process: ``viewers`` minimal WebSocket clients on one epoll loop.

    Each frame is stamped twice: when the kernel queued it on the viewer's socket
    (``SO_TIMESTAMPNS``, Linux; the moment it was delivered) and when this process read it (later
    by the time spent reading the other viewers' copies first, which 500 real viewers, each its
    own process, would not spend). Prints ``ready N``, then per viewer the (seq, delivered, read)
    triples as JSON, in ``perf_counter`` time.
    """
    # SO_TIMESTAMPNS (= SCM_TIMESTAMPNS) is 35 on Linux; Python's socket module does not name it.
    stamp = getattr(socket, "SO_TIMESTAMPNS", 35) if sys.platform.startswith("linux") else None
    offset = (
        time.clock_gettime(time.CLOCK_REALTIME) - time.perf_counter()
    )  # kernel stamps: realtime
    selector = selectors.DefaultSelector()
    buffers: dict[socket.socket, bytearray] = {}
    seen: dict[socket.socket, list[tuple[int, float, float]]] = {}
    for _ in range(viewers):
        sock = socket.create_connection(("127.0.0.1", port))
        key = base64.b64encode(os.urandom(16)).decode()
        sock.sendall(
            f"GET /api/ws?offset=0 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            head += sock.recv(4096)
        if not head.startswith(b"HTTP/1.1 101"):
            break
        if stamp is not None:
            sock.setsockopt(socket.SOL_SOCKET, stamp, 1)
        sock.setblocking(False)
        buffers[sock] = bytearray(head[head.index(b"\r\n\r\n") + 4 :])
        seen[sock] = []
        selector.register(sock, selectors.EVENT_READ, sock)
    sys.stdout.write(f"ready {len(seen)}\n")
    sys.stdout.flush()
    deadline = time.perf_counter() + FANOUT_S + 15
    waiting = len(seen)
    while waiting and time.perf_counter() < deadline:
        for ready, _mask in selector.select(timeout=0.5):
            conn: socket.socket = ready.data
            data, ancillary, _flags, _addr = conn.recvmsg(1 << 16, 64)
            read = time.perf_counter()
            delivered = read
            for level, kind, value in ancillary:
                if level == socket.SOL_SOCKET and kind == stamp and len(value) >= 16:
                    sec, nsec = struct.unpack_from("@qq", value)
                    delivered = sec + nsec / 1e9 - offset
            if not data:
                selector.unregister(conn)
                continue
            buf = buffers[conn]
            buf += data
            mine = seen[conn]
            before = len(mine)
            for payload in _frames(buf):
                frame = orjson.loads(payload)
                if frame["t"] == "dialog":
                    mine.append((frame["entry"]["seq"], delivered, read))
            waiting -= before < count <= len(mine)
    sys.stdout.buffer.write(orjson.dumps(list(seen.values())))
    sys.stdout.flush()
    for sock in seen:
        sock.close()


async def _fanout(path: Path) -> dict[str, object]:
    appender = _Appender(path)
    count = int(FANOUT_RATE * FANOUT_S)
    async with _served(path) as (hub, port):
        # The viewers live in a child process: the figure is the daemon's, not its clients'.
        # perf_counter() is CLOCK_MONOTONIC, one clock for both processes.
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bench.stream",
            "viewers",
            str(port),
            str(FANOUT_VIEWERS),
            str(count),
            stdout=asyncio.subprocess.PIPE,
        )
        assert child.stdout is not None
        async with asyncio.timeout(30):
            ready = (await child.stdout.readline()).decode().split()
        if ready != ["ready", str(FANOUT_VIEWERS)] or hub.viewers != FANOUT_VIEWERS:
            child.kill()
            await child.wait()
            msg = f"only {hub.viewers} of {FANOUT_VIEWERS} viewers connected ({ready})"
            raise RuntimeError(msg)
        await asyncio.sleep(0.5)
        cpu, began = time.process_time(), time.perf_counter()
        for i in range(count):
            await asyncio.sleep(max(0.0, began + i / FANOUT_RATE - time.perf_counter()))
            await appender.append()
        connected = hub.viewers
        async with asyncio.timeout(FANOUT_S + 30):
            out, _ = await child.communicate()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - began
    appender.close()
    seen: list[list[tuple[int, float, float]]] = orjson.loads(out)
    delivered: list[float] = []
    read: list[float] = []
    lost = duplicated = reordered = 0
    for frames in seen:
        seqs = [seq for seq, _, _ in frames]
        lost += count - len(set(seqs))
        duplicated += len(seqs) - len(set(seqs))
        reordered += sum(1 for a, b in zip(seqs, seqs[1:], strict=False) if b <= a)
        delivered += [1000 * (at - appender.started[seq]) for seq, at, _ in frames]
        read += [1000 * (at - appender.started[seq]) for seq, _, at in frames]
    return {
        "viewers": FANOUT_VIEWERS,
        "connected_at_end": connected,
        "entries": count,
        "entries_per_s": FANOUT_RATE,
        "deliveries": len(delivered),
        "delivery": _spread(delivered),
        "read_by_client_process": _spread(read),
        "lost": lost,
        "duplicated": duplicated,
        "out_of_order": reordered,
        "daemon_cpu_pct_of_core": round(100 * cpu / wall, 1),
        "daemon_cpu_us_per_delivery": round(1e6 * cpu / max(1, len(delivered)), 1),
        "target_p99_ms": TARGET_FANOUT_P99_MS,
    }


def _spread(values_ms: list[float]) -> dict[str, float]:
    ordered = sorted(values_ms)
    return {
        "p50_ms": round(statistics.median(ordered), 3),
        "p99_ms": round(ordered[int(0.99 * (len(ordered) - 1))], 3),
        "max_ms": round(ordered[-1], 3),
    }


if __name__ == "__main__":
    if sys.argv[1:2] == ["viewers"]:
        _run_viewers(*(int(arg) for arg in sys.argv[2:5]))
    else:
        print(orjson.dumps(asyncio.run(stream_figures()), option=orjson.OPT_INDENT_2).decode())

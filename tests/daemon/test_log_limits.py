"""Malformed requests cannot flood ``daemon.log`` (:mod:`srez_daemon.log_limits`): 200 requests
with an oversized header, sent with no token, add at most ten one-line entries and no traceback,
and the daemon answers as before; any other error keeps its traceback."""

from __future__ import annotations

import logging
import socket
from pathlib import Path

from aiohttp.http_exceptions import LineTooLong
from daemonkit import SLEEPER, live_daemon

from srez_daemon.log_limits import PER_MINUTE, MalformedRequests


def _record(error: BaseException) -> logging.LogRecord:
    return logging.LogRecord(
        "aiohttp.server", logging.ERROR, __file__, 1, "Error handling request from %s",
        ("127.0.0.1",), (type(error), error, None),
    )  # fmt: skip


def test_malformed_requests_are_one_line_each_and_ten_a_minute() -> None:
    now = [0.0]
    limit = MalformedRequests(clock=lambda: now[0])
    kept = [
        r for r in (_record(LineTooLong("x" * 9000, "8190")) for _ in range(25)) if limit.filter(r)
    ]
    assert len(kept) == PER_MINUTE
    assert all(r.exc_info is None and r.levelname == "WARNING" for r in kept)
    assert (
        kept[0].getMessage().startswith("refused a malformed request from 127.0.0.1: LineTooLong")
    )
    now[0] = 61.0  # a minute later: lines again, saying how many were left out
    (first,) = [r for r in [_record(LineTooLong("y", "1"))] if limit.filter(r)]
    assert first.getMessage().endswith("(15 more left out)")
    other = _record(RuntimeError("a bug of ours"))
    assert limit.filter(other) and other.exc_info is not None  # its traceback stays


def test_a_flood_of_oversized_headers_adds_ten_lines_and_no_traceback(tmp_path: Path) -> None:
    with live_daemon(tmp_path, agent_spec="heuristic", agent_cmd=SLEEPER) as daemon:
        port = int(daemon.base_url.rsplit(":", 1)[1])
        log = daemon.run_dir / "logs" / "daemon.log"
        before = log.stat().st_size
        for _ in range(200):
            with socket.create_connection(("127.0.0.1", port)) as s:
                s.sendall(
                    b"GET /api/health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 100_000 + b"\r\n\r\n"
                )
                s.recv(1000)
        status, _, _ = daemon.get("/api/health", headers={})
        added = log.read_bytes()[before:].decode()
    assert status == 200
    lines = [
        line for line in added.splitlines() if "aiohttp.server" in line or line.startswith(" ")
    ]
    assert "Traceback" not in added and len(lines) <= PER_MINUTE, added[-2000:]
    assert sum("refused a malformed request" in line for line in lines) >= 1
    assert len(added) < 8 << 10  # 200 requests: a few lines, not 140 KB of tracebacks

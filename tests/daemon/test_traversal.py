"""docs/security.md §4.3 test 17: path traversal against every route of a live daemon.

A canary file sits next to the run folder; a few hundred payloads try to reach it (and
/etc/passwd) through the path, the ``name`` of ``/api/logs`` and other query strings.
"""

from __future__ import annotations

import secrets
import urllib.parse
from pathlib import Path

from daemonkit import live_daemon, request

TARGETS = ("../canary.txt", "../../canary.txt", "canary.txt", "/etc/passwd", "../run/../canary.txt")
ENCODINGS = (
    lambda p: p,
    lambda p: p.replace("../", "%2e%2e/"),
    lambda p: p.replace("../", "%2e%2e%2f"),
    lambda p: p.replace("../", "..%2f"),
    lambda p: p.replace("../", "%252e%252e%252f"),
    lambda p: p.replace("../", "..\\"),
    lambda p: p.replace("../", "..%5c"),
    lambda p: p.replace("../", "%c0%ae%c0%ae/"),  # overlong UTF-8 dots
    lambda p: p.replace("../", "\u2025/"),  # a Unicode two-dot leader
    lambda p: p + "%00.log",
    lambda p: p + "#",
    lambda p: p + "?x=1",
)
ROUTES = (
    "/api/logs",
    "/api/diff",
    "/api/reference",
    "/api/grade",
    "/api/files",
    "/api/dialog",
    "/api/run",
)


def _payloads() -> list[str]:
    out = []
    for target in (*TARGETS, str(Path("/proc/self/environ"))):
        for encode in ENCODINGS:
            out.append(encode(target))
    return out


def test_no_payload_reaches_a_file_outside_the_run(tmp_path: Path) -> None:
    canary = secrets.token_hex(16)
    with live_daemon(tmp_path) as d:
        d.wait_phase("done")
        (tmp_path / "canary.txt").write_text(canary)
        payloads = _payloads()
        sent = leaked = server_errors = 0
        for payload in payloads:
            quoted = urllib.parse.quote(payload, safe="")
            urls = [
                f"{d.base_url}/api/logs?name={quoted}",
                f"{d.base_url}/api/logs?name=daemon&file={quoted}",
                f"{d.base_url}/api/{payload.lstrip('/')}",
                f"{d.base_url}/api/static/{quoted}",
                *(f"{d.base_url}{route}/{payload.lstrip('/')}" for route in ROUTES),
                f"{d.base_url}/api/dialog?offset={quoted}",
            ]
            for url in urls:
                try:
                    status, body, _ = request(url, headers=d.headers)
                except (ValueError, OSError):
                    continue  # a URL the HTTP client itself refuses to send
                sent += 1
                leaked += (
                    canary.encode() in body or b"root:x:0:0" in body or b"SREZ_TOKEN_FILE" in body
                )
                server_errors += status >= 500
        assert sent >= 700
        assert (leaked, server_errors) == (0, 0)
